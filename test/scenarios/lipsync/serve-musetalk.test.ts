/**
 * `media-worker serve` (dist/) with MuseTalk installed (the generated musetalk-test graphs) and a
 * Wav2Lip network whose licence forbids commercial use, without MEDIA_WORKER_ALLOW_NONCOMMERCIAL_MODELS,
 * against a real nats-server, MEDIA_WORKER_LIPSYNC_MODELS mapping vendor-lipsync-2 and -2-pro to
 * MuseTalk: capabilities say that `musetalk` serves those two and why `wav2lip` does not serve
 * vendor-lipsync-3, and jobs of both ids complete on MuseTalk.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PACKAGE_ROOT } from '../../../src/paths.js';
import { probeMedia } from '../../../src/media/index.js';
import { MUSETALK_TEST_MODEL, museTalkManifestPath } from '../../../src/kinds/lipsync/pipeline/index.js';
import { encodeClip, faceFrames, speechClip } from '../../kinds/lipsync/pipeline/pipeline-fixtures.js';
import { controlPlane, waitFor, type ControlPlane } from '../../worker/helpers/jetstream.js';
import { startRoleNats, type RoleNats } from '../../helpers/role-nats.js';
import { provisionFromEnv } from '../../helpers/provision.js';
import { startInputServer, type InputServer } from '../../helpers/input-server.js';

const CLI = path.join(PACKAGE_ROOT, 'dist', 'src', 'cli.js');

let dir: string;
let roles: RoleNats;
let cp: ControlPlane;
let inputs: InputServer;
let modelsDir: string;
let child: ChildProcess | undefined;

const baseEnv = (): Record<string, string> => ({
  ...roles.env('worker-host1'),
  LOG_LEVEL: 'info',
  MEDIA_WORKER_ALLOW_PRIVATE_URLS: '1',
  WORKER_HEALTH_PORT: '0',
  WORKER_HEALTH_HOST: '127.0.0.1',
  WORKER_ACK_WAIT_MS: '3000',
  WORKER_HEARTBEAT_MS: '500',
  WORKER_PULL_EXPIRES_MS: '1000',
  WORKER_NAK_DELAYS_MS: '200',
  WORKER_READINESS_INTERVAL_MS: '500',
  WORKER_CONCURRENCY: 'image=0,video=0,lipsync=1,music=0,music-video=0',
  RESULTS_BASE_URL: 'https://cdn.example.test/results',
});

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'media-worker-musetalk-serve-'));
  inputs = await startInputServer({
    '/face.mp4': await encodeClip(
      path.join(dir, 'face.mp4'),
      await faceFrames(25, { side: 192 }),
      {
        width: 192,
        height: 192,
      },
      'mp4',
    ),
    '/speech.mp3': await speechClip(path.join(dir, 'speech.mp3'), 1),
  });
  roles = await startRoleNats(dir);
  await provisionFromEnv({ ...baseEnv(), ...roles.env('operator') });
  cp = await controlPlane(
    roles.url,
    { jobsStream: 'MEDIA_JOBS', eventsStream: 'MEDIA_EVENTS' },
    roles.auth('operator'),
  );
  // The shipped manifests, MuseTalk's test manifest (its graphs generated on first use), and a copy
  // of the Wav2Lip test network recorded with Wav2Lip's research-only licence.
  modelsDir = path.join(dir, 'models');
  await mkdir(path.join(modelsDir, 'musetalk'), { recursive: true });
  for (const name of await readdir(path.join(PACKAGE_ROOT, 'models'))) {
    if (name.endsWith('.json')) await copyFile(path.join(PACKAGE_ROOT, 'models', name), path.join(modelsDir, name));
    else if (name.endsWith('.onnx')) await symlink(path.join(PACKAGE_ROOT, 'models', name), path.join(modelsDir, name));
  }
  await copyFile(
    museTalkManifestPath(path.join(PACKAGE_ROOT, 'models'), MUSETALK_TEST_MODEL),
    museTalkManifestPath(modelsDir, MUSETALK_TEST_MODEL),
  );
  const test = JSON.parse(await readFile(path.join(PACKAGE_ROOT, 'models', 'wav2lip-test.json'), 'utf8')) as object;
  const nc = {
    ...test,
    name: 'wav2lip-nc',
    licence: {
      spdx: 'LicenseRef-Wav2Lip-research',
      holder: 'Wav2Lip authors',
      upstream: 'https://github.com/Rudrabha/Wav2Lip',
      commercialUse: false,
    },
  };
  await writeFile(path.join(modelsDir, 'wav2lip-nc.json'), `${JSON.stringify(nc, null, 2)}\n`);
}, 120_000);

afterAll(async () => {
  if (child !== undefined && child.exitCode === null && child.signalCode === null) {
    const gone = new Promise((resolve) => child?.once('exit', resolve));
    child.kill('SIGKILL');
    await gone;
  }
  await cp?.close();
  await roles?.close();
  await inputs?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('serve with MuseTalk installed, without the non-commercial option', () => {
  it('serves vendor-lipsync-2 and -2-pro on MuseTalk and says so in capabilities; wav2lip says why it does not serve vendor-lipsync-3', async () => {
    const results = path.join(dir, 'results');
    child = spawn(process.execPath, [CLI, 'serve'], {
      env: {
        ...process.env,
        ...baseEnv(),
        MEDIA_WORKER_LIPSYNC_BACKENDS: 'musetalk,wav2lip',
        MEDIA_WORKER_LIPSYNC_MODELS: JSON.stringify({
          'vendor-lipsync-2': MUSETALK_TEST_MODEL,
          'vendor-lipsync-2-pro': MUSETALK_TEST_MODEL,
          'vendor-lipsync-3': 'wav2lip-nc',
        }),
        MEDIA_WORKER_MODELS_DIR: modelsDir,
        MEDIA_WORKER_TMP_DIR: path.join(dir, 'tmp'),
        RESULTS_DIR: results,
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let log = '';
    child.stderr?.on('data', (chunk: Buffer) => (log += chunk.toString()));
    const port = await waitFor(
      'serve to be serving',
      () => {
        if (child?.exitCode !== null) throw new Error(`serve exited: ${log.slice(-2000)}`);
        const line = log.split('\n').find((l) => l.includes('"msg":"media-worker serving"'));
        return line === undefined ? undefined : (JSON.parse(line) as { healthPort: number }).healthPort;
      },
      60_000,
    );
    await waitFor(
      'lip-sync to be ready',
      async () => {
        const body = (await (await fetch(`http://127.0.0.1:${port}/readyz`)).json()) as {
          kinds: Record<string, { ready: boolean }>;
        };
        return body.kinds.lipsync?.ready === true;
      },
      60_000,
    );
    const capabilities = (await cp.nc.request('media.capabilities', '', { timeout: 5000 })).json<{
      kinds: { lipsync: { backends?: unknown[] } };
    }>();
    expect(capabilities.kinds.lipsync.backends).toEqual([
      { name: 'musetalk', ready: true, models: ['vendor-lipsync-2', 'vendor-lipsync-2-pro'] },
      {
        name: 'wav2lip',
        ready: false,
        models: ['vendor-lipsync-3'],
        reason: expect.stringContaining(
          'the licence of wav2lip-nc (LicenseRef-Wav2Lip-research) forbids commercial use',
        ),
      },
    ]);

    const base = inputs.url;
    for (const model of ['vendor-lipsync-2', 'vendor-lipsync-2-pro'] as const) {
      await cp.publishJob('lipsync', model, {
        id: `musetalk-${model}`,
        model,
        input: { video_url: `${base}/face.mp4`, audio_url: `${base}/speech.mp3`, sync_mode: 'cut_off' },
      });
      const event = await waitFor(
        `the event of ${model}`,
        async () => (await cp.eventsOf(`musetalk-${model}`))[0],
        120_000,
      );
      expect(event).toMatchObject({ status: 'completed', model, result: { type: 'video' } });
      const stored = path.join(results, 'lipsync', `musetalk-${model}`);
      const [file] = await readdir(stored);
      const info = await probeMedia(path.join(stored, file ?? ''));
      expect(info.video).toBeDefined();
      expect(info.audio).toBeDefined();
    }
    const done = log.split('\n').filter((l) => l.includes('"msg":"lip-sync done"'));
    expect(done).toHaveLength(2);
    for (const line of done)
      expect(JSON.parse(line)).toMatchObject({ backend: 'musetalk', network: MUSETALK_TEST_MODEL });
  });
});
