/**
 * `media-worker serve` (dist/) with the `sync-compatible` lip-sync backend, against a real
 * nats-server and the fake sync.so provider (test/helpers/fake-sync.ts):
 *
 * - the worker is SIGKILLed after the provider accepted the generation; the redelivered job asks
 *   with the same Idempotency-Key and gets that generation back: one generation at the provider,
 *   one completed event, billed at the spec's price from the measured input;
 * - a provider still processing at the limit ends the job with LIPSYNC_FAILED and a refund;
 * - capabilities say which models the host serves through which backend;
 * - licences: a host whose wav2lip network forbids commercial use does not take lip-sync through
 *   it (capabilities and /readyz say why), and a refused provider key keeps the provider out too;
 * - an account out of credit (402): that job fails with its refund as any 402 does, the provider
 *   is no longer ready (capabilities say why) and the next job goes to the next backend.
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { probeMedia } from '../../../src/media/index.js';
import { syncIdempotencyKey } from '../../../src/kinds/lipsync/pipeline/index.js';
import { makeClip } from '../../media/helpers.js';
import { encodeClip, faceFrames, SIDE, speechClip } from '../../kinds/lipsync/pipeline/pipeline-fixtures.js';
import { controlPlane, waitFor, type ControlPlane } from '../../worker/helpers/jetstream.js';
import { startRoleNats, type RoleNats } from '../../helpers/role-nats.js';
import { provisionFromEnv } from '../../helpers/provision.js';
import { startFakeSync, type FakeSync } from '../../helpers/fake-sync.js';
import { startInputServer, type InputServer } from '../../helpers/input-server.js';
import { QUICK_REDELIVERY, readyz, serveEnv, serveGroup } from '../../helpers/serve-process.js';
import { modelsWithNonCommercialWav2Lip } from '../../helpers/models-dir.js';

let dir: string;
let roles: RoleNats;
let cp: ControlPlane;
let inputs: InputServer;
let base: string;
let fake: FakeSync;
let modelsDir: string;

/** Every serve here: lip-sync alone, with the fake provider's address and key (each test names its backends). */
const baseEnv = (): NodeJS.ProcessEnv => ({
  ...serveEnv(roles),
  ...QUICK_REDELIVERY,
  WORKER_READINESS_INTERVAL_MS: '500',
  WORKER_CONCURRENCY: 'image=0,video=0,lipsync=1,music=0,music-video=0',
  MEDIA_WORKER_SYNC_BASE_URL: fake.url,
  MEDIA_WORKER_SYNC_API_KEY: fake.key,
  MEDIA_WORKER_SYNC_POLL_INTERVAL_MS: '100',
});
const serves = serveGroup(baseEnv);
const serve = serves.start;

async function scratch(name: string): Promise<string> {
  return mkdtemp(path.join(dir, `${name}-`));
}

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'media-worker-sync-serve-'));
  inputs = await startInputServer({
    '/face.mp4': await makeClip(path.join(dir, 'face.mp4'), { seconds: 1, size: '64x48', rate: 25, audio: true }),
    '/speech.mp3': await speechClip(path.join(dir, 'speech.mp3'), 2),
    // A drawn face the in-process networks find (the clip above has none: the provider needs none).
    '/talking.mp4': await encodeClip(
      path.join(dir, 'talking.mp4'),
      await faceFrames(12),
      { width: SIDE, height: SIDE },
      'mp4',
    ),
  });
  base = inputs.url;
  fake = await startFakeSync();
  roles = await startRoleNats(dir);
  await provisionFromEnv({ ...baseEnv(), ...roles.env('operator') });
  cp = await controlPlane(
    roles.url,
    { jobsStream: 'MEDIA_JOBS', eventsStream: 'MEDIA_EVENTS' },
    roles.auth('operator'),
  );

  // The shipped manifests, and a copy of the test network recorded with Wav2Lip's research-only licence.
  modelsDir = await modelsWithNonCommercialWav2Lip(await scratch('models'));
});

afterEach(serves.stopAll);

afterAll(async () => {
  await serves.stopAll();
  await cp?.close();
  await roles?.close();
  await fake?.close();
  await inputs?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('serve with the sync-compatible lip-sync backend', () => {
  it('killed after the provider accepted the generation: the redelivered job gets that generation, one event, the spec price', async () => {
    fake.outcome = 'hold';
    const env = {
      MEDIA_WORKER_LIPSYNC_BACKENDS: 'sync-compatible',
      MEDIA_WORKER_TMP_DIR: await scratch('tmp'),
      RESULTS_DIR: await scratch('results'),
    };
    const first = serve(env);
    await first.ready('lipsync');

    const capabilities = (await cp.nc.request('media.capabilities', '', { timeout: 5000 })).json<{
      kinds: { lipsync: { backends?: unknown[] } };
    }>();
    expect(capabilities.kinds.lipsync.backends).toEqual([
      {
        name: 'sync-compatible',
        ready: true,
        models: ['vendor-lipsync-2', 'vendor-lipsync-2-pro', 'vendor-lipsync-3'],
      },
    ]);
    expect(JSON.stringify(capabilities)).not.toContain(fake.key);

    await cp.publishJob('lipsync', 'vendor-lipsync-2', {
      id: 'sync-kill-1',
      model: 'vendor-lipsync-2',
      input: { video_url: `${base}/face.mp4`, audio_url: `${base}/speech.mp3`, sync_mode: 'cut_off' },
    });
    await waitFor(
      'the provider to accept the generation',
      () => fake.generations.length === 1 && first.log().includes('lip-sync provider accepted the generation'),
      60_000,
    );
    first.child.kill('SIGKILL');
    await new Promise((resolve) => first.child.once('exit', resolve));
    expect(await cp.eventsOf('sync-kill-1')).toEqual([]);

    fake.release();
    const second = serve(env);
    await second.serving();
    const event = await waitFor(
      'the event of the redelivered job',
      async () => (await cp.eventsOf('sync-kill-1'))[0],
      60_000,
    );
    expect(event).toMatchObject({
      status: 'completed',
      attempt: 2,
      model: 'vendor-lipsync-2',
      creditsUsed: 50,
      result: { type: 'video' },
    });
    expect((event?.result as { duration: number }).duration).toBeCloseTo(1, 0);
    await waitFor('the job to be acked', async () => (await cp.jobsInQueue()) === 0, 30_000);
    expect(await cp.eventsOf('sync-kill-1')).toHaveLength(1);

    // One generation; the second POST (after the redelivery) was answered with it.
    expect(fake.generations).toHaveLength(1);
    expect(fake.posts.map((p) => p.key)).toEqual([
      syncIdempotencyKey('sync-kill-1'),
      syncIdempotencyKey('sync-kill-1'),
    ]);
    expect(fake.replays).toBe(1);
    // The key went to the provider only: never into either process's log.
    expect(`${first.log()}${second.log()}`).not.toContain(fake.key);
    const stored = path.join(env.RESULTS_DIR, 'lipsync', 'sync-kill-1');
    const [file] = await readdir(stored);
    const info = await probeMedia(path.join(stored, file ?? ''));
    expect(info.video).toBeDefined();
    expect(info.audio).toBeDefined();
  });

  it('a provider still processing at the limit (WORKER_WATCHDOG_MS, 4 minutes by default): one failed event, LIPSYNC_FAILED, credits refunded', async () => {
    fake.outcome = 'hold';
    fake.hold();
    const s = serve({
      MEDIA_WORKER_LIPSYNC_BACKENDS: 'sync-compatible',
      WORKER_WATCHDOG_MS: 'lipsync=8000',
      MEDIA_WORKER_TMP_DIR: await scratch('tmp'),
      RESULTS_DIR: await scratch('results'),
    });
    await s.ready('lipsync');
    const before = fake.generations.length;
    await cp.publishJob('lipsync', 'vendor-lipsync-2', {
      id: 'sync-slow-1',
      model: 'vendor-lipsync-2',
      input: { video_url: `${base}/face.mp4`, audio_url: `${base}/speech.mp3`, sync_mode: 'cut_off' },
      credits: 50,
    });
    const event = await waitFor('the failed event', async () => (await cp.eventsOf('sync-slow-1'))[0], 60_000);
    expect(event).toMatchObject({
      status: 'failed',
      refund: true,
      creditsRefunded: 50,
      error: { code: 'LIPSYNC_FAILED' },
    });
    expect((event?.error as { message: string }).message).toContain('longer than 8 seconds');
    expect(fake.generations.length - before).toBe(1);
    await waitFor('the job to leave the queue', async () => (await cp.jobsInQueue()) === 0, 30_000);
    expect(await cp.eventsOf('sync-slow-1')).toHaveLength(1);
    fake.release();
  });

  it('a wav2lip network whose licence forbids commercial use is not served: capabilities and /readyz say why, the provider serves instead', async () => {
    fake.outcome = 'complete';
    const both = serve({
      MEDIA_WORKER_LIPSYNC_BACKENDS: 'wav2lip,sync-compatible',
      MEDIA_WORKER_LIPSYNC_MODELS: 'wav2lip-nc',
      MEDIA_WORKER_MODELS_DIR: modelsDir,
      MEDIA_WORKER_TMP_DIR: await scratch('tmp'),
      RESULTS_DIR: await scratch('results'),
    });
    await both.ready('lipsync');
    const capabilities = (await cp.nc.request('media.capabilities', '', { timeout: 5000 })).json<{
      kinds: { lipsync: { backends?: { name: string; ready: boolean; reason?: string }[] } };
    }>();
    expect(capabilities.kinds.lipsync.backends).toMatchObject([
      {
        name: 'wav2lip',
        ready: false,
        reason: expect.stringContaining(
          'the licence of wav2lip-nc (LicenseRef-Wav2Lip-research) forbids commercial use',
        ),
      },
      { name: 'sync-compatible', ready: true },
    ]);
    const before = fake.generations.length;
    await cp.publishJob('lipsync', 'vendor-lipsync-3', {
      id: 'sync-licence-1',
      model: 'vendor-lipsync-3',
      input: { video_url: `${base}/face.mp4`, audio_url: `${base}/speech.mp3`, sync_mode: 'cut_off' },
    });
    const event = await waitFor('the lip-sync event', async () => (await cp.eventsOf('sync-licence-1'))[0], 60_000);
    expect(event).toMatchObject({ status: 'completed', model: 'vendor-lipsync-3', creditsUsed: 150 });
    expect(fake.generations.slice(before)).toMatchObject([{ model: 'sync-3' }]);
    expect(both.log()).toContain('"backend":"sync-compatible"');
  });

  it('an account out of credit: the job fails with LIPSYNC_FAILED and its refund, the provider is not ready (out of credit), the next job goes to wav2lip', async () => {
    fake.outcome = 'complete';
    const s = serve({
      MEDIA_WORKER_LIPSYNC_BACKENDS: 'sync-compatible,wav2lip',
      MEDIA_WORKER_LIPSYNC_MODELS: 'wav2lip-test',
      MEDIA_WORKER_MODELS_DIR: modelsDir,
      MEDIA_WORKER_TMP_DIR: await scratch('tmp'),
      RESULTS_DIR: await scratch('results'),
    });
    const port = await s.ready('lipsync');
    const backends = async (): Promise<{ name: string; ready: boolean; reason?: string }[] | undefined> =>
      (await cp.nc.request('media.capabilities', '', { timeout: 5000 })).json<{
        kinds: { lipsync: { backends?: { name: string; ready: boolean; reason?: string }[] } };
      }>().kinds.lipsync.backends;
    expect(await backends()).toMatchObject([
      { name: 'sync-compatible', ready: true },
      { name: 'wav2lip', ready: true },
    ]);
    fake.outOfCredit = 'generations';
    try {
      const input = { video_url: `${base}/talking.mp4`, audio_url: `${base}/speech.mp3`, sync_mode: 'cut_off' };
      await cp.publishJob('lipsync', 'vendor-lipsync-2', {
        id: 'sync-credit-1',
        model: 'vendor-lipsync-2',
        input,
        credits: 50,
      });
      const failed = await waitFor('the failed event', async () => (await cp.eventsOf('sync-credit-1'))[0], 60_000);
      expect(failed).toMatchObject({
        status: 'failed',
        refund: true,
        creditsRefunded: 50,
        error: { code: 'LIPSYNC_FAILED' },
      });
      expect((failed?.error as { message: string }).message).toContain('cannot pay for a generation');
      const statuses = await waitFor(
        'capabilities to say the provider is out of credit',
        async () => {
          const now = await backends();
          return now?.[0]?.ready === false ? now : undefined;
        },
        30_000,
      );
      expect(statuses).toMatchObject([
        {
          name: 'sync-compatible',
          ready: false,
          reason: expect.stringMatching(/^out of credit \(HTTP 402 during a job: /),
        },
        { name: 'wav2lip', ready: true },
      ]);
      expect((await readyz(port)).body.kinds.lipsync?.ready).toBe(true);

      const posts = fake.posts.length;
      await cp.publishJob('lipsync', 'vendor-lipsync-2', {
        id: 'sync-credit-2',
        model: 'vendor-lipsync-2',
        input,
        credits: 50,
      });
      const done = await waitFor(
        'the next lip-sync event',
        async () => (await cp.eventsOf('sync-credit-2'))[0],
        120_000,
      );
      expect(done).toMatchObject({ status: 'completed', model: 'vendor-lipsync-2' });
      expect(fake.posts.length).toBe(posts);
      expect(s.log()).toContain('"backend":"wav2lip"');
    } finally {
      fake.outOfCredit = undefined;
    }
  });

  it('without the provider (its key refused) and with a non-commercial wav2lip, lip-sync is not pulled and /readyz names both causes', async () => {
    const s = serve({
      MEDIA_WORKER_LIPSYNC_BACKENDS: 'wav2lip,sync-compatible',
      MEDIA_WORKER_LIPSYNC_MODELS: 'wav2lip-nc',
      MEDIA_WORKER_MODELS_DIR: modelsDir,
      MEDIA_WORKER_SYNC_API_KEY: 'not-the-key',
      MEDIA_WORKER_TMP_DIR: await scratch('tmp'),
      RESULTS_DIR: await scratch('results'),
    });
    const port = await s.serving();
    const body = (await readyz(port)).body;
    const reasons = body.kinds.lipsync?.reasons.join('\n') ?? '';
    expect(reasons).toContain(
      'wav2lip: the licence of wav2lip-nc (LicenseRef-Wav2Lip-research) forbids commercial use; not served to paying jobs unless MEDIA_WORKER_ALLOW_NONCOMMERCIAL_MODELS=1',
    );
    expect(reasons).toContain(`sync-compatible: ${fake.url}/ refused MEDIA_WORKER_SYNC_API_KEY (HTTP 401)`);
    expect((await readyz(port)).body.kinds.lipsync?.ready).toBe(false);
    expect(s.log()).toContain('Not serving lipsync jobs');
    // The refused key is named by its variable, never by its value.
    const capabilities = (await cp.nc.request('media.capabilities', '', { timeout: 5000 })).json<unknown>();
    expect(`${JSON.stringify(body)}${JSON.stringify(capabilities)}${s.log()}`).not.toContain('not-the-key');
  });
});
