/**
 * MusicGen's weights are CC-BY-NC-4.0: a `serve` process (allowNoncommercial false, the default of
 * MEDIA_WORKER_ALLOW_NONCOMMERCIAL_MODELS) does not count the backend ready over them; the setting,
 * or a one-off command, does. A folder whose licence allows commercial use is ready either way.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FOLDER_MANIFEST, MusicgenBackend, REQUIRED_FILES } from '../../../../src/kinds/music/pipeline/index.js';

let dir: string;

async function folder(name: string, licence: Record<string, unknown>): Promise<string> {
  const at = path.join(dir, name);
  for (const rel of REQUIRED_FILES) {
    await mkdir(path.dirname(path.join(at, rel)), { recursive: true });
    await writeFile(path.join(at, rel), 'x');
  }
  await writeFile(path.join(at, FOLDER_MANIFEST), JSON.stringify({ schemaVersion: 1, name, licence, files: {} }));
  return at;
}

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'musicgen-licence-'));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('musicgen and its licence', () => {
  it('is not ready for serve over non-commercial weights, and says why', async () => {
    const nc = await folder('musicgen-small', {
      spdx: 'CC-BY-NC-4.0',
      holder: 'Meta Platforms, Inc.',
      commercialUse: false,
    });
    expect(await new MusicgenBackend({ dir: nc, allowNoncommercial: false }).readiness()).toEqual({
      ready: false,
      reason:
        'the licence of musicgen-small (CC-BY-NC-4.0) forbids commercial use; not served to paying jobs unless MEDIA_WORKER_ALLOW_NONCOMMERCIAL_MODELS=1',
    });
    expect(await new MusicgenBackend({ dir: nc, allowNoncommercial: true }).readiness()).toEqual({ ready: true });
    // Unset counts as not allowed: a caller that forgets the setting does not sell the weights.
    expect(await new MusicgenBackend({ dir: nc }).readiness()).toMatchObject({ ready: false });
    // An install from before the field was recorded: the SPDX identifier says it.
    const old = await folder('musicgen-old', { spdx: 'CC-BY-NC-4.0' });
    expect(await new MusicgenBackend({ dir: old, allowNoncommercial: false }).readiness()).toMatchObject({
      ready: false,
    });
  });

  it('is ready over weights whose licence allows commercial use', async () => {
    const mit = await folder('musicgen-mit', { spdx: 'MIT', commercialUse: true });
    expect(await new MusicgenBackend({ dir: mit, allowNoncommercial: false }).readiness()).toEqual({ ready: true });
  });
});
