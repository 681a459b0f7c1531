/**
 * `media-worker serve` (dist/) with MuseTalk installed (the generated musetalk-test graphs) and a
 * Wav2Lip network whose licence forbids commercial use, without MEDIA_WORKER_ALLOW_NONCOMMERCIAL_MODELS,
 * against a real nats-server, MEDIA_WORKER_LIPSYNC_MODELS mapping vendor-lipsync-2 and -2-pro to
 * MuseTalk: capabilities say that `musetalk` serves those two and why `wav2lip` does not serve
 * vendor-lipsync-3, and jobs of both ids complete on MuseTalk.
 */
import { copyFile, mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
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
import { QUICK_REDELIVERY, serveEnv, spawnServe, type ServeProcess } from '../../helpers/serve-process.js';
import { modelsWithNonCommercialWav2Lip } from '../../helpers/models-dir.js';

let dir: string;
let roles: RoleNats;
let cp: ControlPlane;
let inputs: InputServer;
let modelsDir: string;
let serve: ServeProcess | undefined;

/** Lip-sync alone. */
const baseEnv = (): NodeJS.ProcessEnv => ({
  ...serveEnv(roles),
  ...QUICK_REDELIVERY,
  WORKER_READINESS_INTERVAL_MS: '500',
  WORKER_CONCURRENCY: 'image=0,video=0,lipsync=1,music=0,music-video=0',
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
  modelsDir = await modelsWithNonCommercialWav2Lip(path.join(dir, 'models'));
  await mkdir(path.join(modelsDir, 'musetalk'));
  await copyFile(
    museTalkManifestPath(path.join(PACKAGE_ROOT, 'models'), MUSETALK_TEST_MODEL),
    museTalkManifestPath(modelsDir, MUSETALK_TEST_MODEL),
  );
}, 120_000);

afterAll(async () => {
  await serve?.stop();
  await cp?.close();
  await roles?.close();
  await inputs?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('serve with MuseTalk installed, without the non-commercial option', () => {
  it('serves vendor-lipsync-2 and -2-pro on MuseTalk and says so in capabilities; wav2lip says why it does not serve vendor-lipsync-3', async () => {
    const results = path.join(dir, 'results');
    serve = spawnServe({
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
    });
    await serve.ready('lipsync');
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
    const done = serve
      .log()
      .split('\n')
      .filter((l) => l.includes('"msg":"lip-sync done"'));
    expect(done).toHaveLength(2);
    for (const line of done)
      expect(JSON.parse(line)).toMatchObject({ backend: 'musetalk', network: MUSETALK_TEST_MODEL });
  });
});
