/**
 * `media-worker lipsync` (dist/) with the `sync-compatible` backend against the fake sync.so
 * provider: URLs go to the provider as URLs, local files up through its documented multipart form;
 * the result is the provider's output, checked and written where -o says, at the spec's price.
 * And a one-off run of a network whose licence forbids commercial use: it runs, with one line
 * naming the licence.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { probeMedia } from '../../../src/media/index.js';
import { runCli } from '../../helpers/cli.js';
import { startFakeSync, type FakeSync } from '../../helpers/fake-sync.js';
import { startInputServer, type InputServer } from '../../helpers/input-server.js';
import { modelsWithNonCommercialWav2Lip } from '../../helpers/models-dir.js';
import { encodeClip, faceFrames, SIDE, speechClip } from './pipeline/pipeline-fixtures.js';

let dir: string;
let fake: FakeSync;
let inputs: InputServer;
let base: string;
let face: string;
let speech: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'sync-cli-'));
  face = await encodeClip(path.join(dir, 'face.mp4'), await faceFrames(12), { width: SIDE, height: SIDE }, 'mp4');
  speech = await speechClip(path.join(dir, 'speech.mp3'), 1);
  inputs = await startInputServer({ '/face.mp4': face, '/speech.mp3': speech });
  base = inputs.url;
  fake = await startFakeSync();
});

afterAll(async () => {
  await inputs?.close();
  await fake?.close();
  await rm(dir, { recursive: true, force: true });
});

const env = (extra: Record<string, string> = {}): NodeJS.ProcessEnv => ({
  ...process.env,
  LOG_LEVEL: 'warn',
  MEDIA_WORKER_ALLOW_PRIVATE_URLS: '1',
  MEDIA_WORKER_LIPSYNC_BACKENDS: 'sync-compatible',
  MEDIA_WORKER_SYNC_BASE_URL: fake.url,
  MEDIA_WORKER_SYNC_API_KEY: fake.key,
  MEDIA_WORKER_SYNC_POLL_INTERVAL_MS: '50',
  ...extra,
});

describe('media-worker lipsync through the provider', () => {
  it('sends URLs to the provider and writes its checked output', async () => {
    const out = path.join(dir, 'from-urls.mp4');
    const run = await runCli(
      [
        'lipsync',
        '--video',
        `${base}/face.mp4`,
        '--audio',
        `${base}/speech.mp3`,
        '--model',
        'vendor-lipsync-3',
        '--active-speaker',
        '-o',
        out,
      ],
      { env: env() },
    );
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({
      status: 'completed',
      model: 'vendor-lipsync-3',
      creditsUsed: 150,
      result: { url: out, type: 'video' },
    });
    expect(fake.generations.at(-1)).toMatchObject({
      model: 'sync-3',
      upload: false,
      options: { sync_mode: 'cut_off', active_speaker_detection: { auto_detect: true } },
    });
    const info = await probeMedia(out);
    expect([info.video !== undefined, info.audio !== undefined]).toEqual([true, true]);
  });

  it("uploads local files with the provider's multipart form", async () => {
    const out = path.join(dir, 'from-files.mp4');
    const before = fake.generations.length;
    const run = await runCli(['lipsync', '--video', face, '--audio', speech, '-o', out], { env: env() });
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({
      status: 'completed',
      model: 'vendor-lipsync-2',
      creditsUsed: 50,
      result: { url: out },
    });
    expect(fake.generations.slice(before)).toMatchObject([{ model: 'lipsync-2', upload: true }]);
  });

  it('a refused key fails with LIPSYNC_FAILED naming the cause', async () => {
    const run = await runCli(
      ['lipsync', '--video', `${base}/face.mp4`, '--audio', `${base}/speech.mp3`, '-o', path.join(dir, 'refused.mp4')],
      {
        env: env({ MEDIA_WORKER_SYNC_API_KEY: 'wrong' }),
      },
    );
    expect(run.code).not.toBe(0);
    const body = JSON.parse(run.stdout) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('LIPSYNC_FAILED');
    expect(body.error.message).toContain(`sync-compatible: ${fake.url}/ refused MEDIA_WORKER_SYNC_API_KEY (HTTP 401)`);
  });
});

describe('media-worker lipsync with a non-commercial network', () => {
  it("runs it for the person's own use, with one line naming the licence", async () => {
    const modelsDir = await modelsWithNonCommercialWav2Lip(await mkdtemp(path.join(dir, 'models-')));
    const out = path.join(dir, 'own-use.mp4');
    const run = await runCli(['lipsync', '--video', face, '--audio', speech, '-o', out], {
      env: {
        ...process.env,
        LOG_LEVEL: 'warn',
        MEDIA_WORKER_MODELS_DIR: modelsDir,
        MEDIA_WORKER_LIPSYNC_MODELS: 'wav2lip-nc',
      },
    });
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ status: 'completed', result: { url: out } });
    const lines = run.stderr.split('\n').filter((l) => l.includes('forbids commercial use'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(
      'running wav2lip-nc (LicenseRef-Wav2Lip-research) for your own use: its licence forbids commercial use',
    );
  });
});
