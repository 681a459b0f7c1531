/**
 * A job's logger carries `model` (the service's model id); the registry's lines about making a
 * network file name the network under `network`, so no line has a key twice.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { expect, it } from 'vitest';
import { ensureModelFile } from '../../src/inference/index.js';
import { withLipsyncGenerators } from '../../src/kinds/lipsync/pipeline/index.js';

it('the "on first use" line of a job logger has each key once: model is the job\'s, network the file\'s', async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'registry-log-'));
  try {
    const lines: string[] = [];
    const logger = pino({ base: null }, { write: (line: string) => void lines.push(line) }).child({
      model: 'vendor-lipsync-2',
    });
    // A generated network (its generator handed in by its owner), made on first use.
    await ensureModelFile('wav2lip-test', withLipsyncGenerators({ filesDir: dir, logger }));
    const line = lines.find((l) => l.includes('on first use')) ?? '';
    for (const key of ['model', 'network', 'file']) expect(line.match(new RegExp(`"${key}":`, 'g'))).toHaveLength(1);
    expect(JSON.parse(line)).toMatchObject({
      model: 'vendor-lipsync-2',
      network: 'wav2lip-test',
      msg: 'generating model on first use',
    });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
