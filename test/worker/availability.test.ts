/**
 * Readiness per kind against a real nats-server: a kind whose check fails is not pulled (its job
 * stays in the stream, /readyz and the metrics say why) and is served once the check passes; a
 * full disk (a fake statfs) is such a state; a job that hits ENOSPC anyway is handed back (nak),
 * never failed for good. Under the shipped per-role users (test/helpers/role-nats.ts): the worker as
 * `worker-host1`, provisioning and the control plane's side as operator.
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ReadinessCheck } from '../../src/worker/availability.js';
import { diskSpaceCheck } from '../../src/worker/disk-space.js';
import type { JobExecutor } from '../../src/worker/types.js';
import { controlPlane, deleteStreams, sleep, waitFor, type ControlPlane } from './helpers/jetstream.js';
import { imageJob, startTestWorker, type TestWorker } from './helpers/in-process.js';
import { startRoleNats, type RoleNats } from '../helpers/role-nats.js';

const STREAMS = ['MEDIA_JOBS', 'MEDIA_EVENTS', 'MEDIA_JOBS_ADVISORIES', 'MEDIA_CLAIMS'];
const ONLY_IMAGE = { concurrency: 'image=1,video=0,lipsync=0,music=0,music-video=0', readinessIntervalMs: 200 };

let roles: RoleNats;
let natsDir: string;
let cp: ControlPlane;
let workers: TestWorker[] = [];
let dir: string;

beforeAll(async () => {
  natsDir = await fs.mkdtemp(path.join(os.tmpdir(), 'media-worker-availability-nats-'));
  roles = await startRoleNats(natsDir);
  cp = await controlPlane(
    roles.url,
    { jobsStream: 'MEDIA_JOBS', eventsStream: 'MEDIA_EVENTS' },
    roles.auth('operator'),
  );
});

afterAll(async () => {
  await cp?.close();
  await roles?.close();
  await fs.rm(natsDir, { recursive: true, force: true });
});

/** A worker as `worker-host1`, its streams provisioned as operator. */
function worker(
  overrides: Parameters<typeof startTestWorker>[1],
  deps: Parameters<typeof startTestWorker>[3],
): Promise<TestWorker> {
  return startTestWorker(roles.url, { ...roles.settingsOf('worker-host1'), ...overrides }, undefined, {
    ...deps,
    provisionAs: roles.settingsOf('operator'),
  });
}

beforeEach(async () => {
  await deleteStreams(cp.jsm, STREAMS);
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'media-worker-availability-'));
});

afterEach(async () => {
  await Promise.all(workers.map((w) => w.stop()));
  workers = [];
  await fs.rm(dir, { recursive: true, force: true });
});

async function readyz(w: TestWorker): Promise<{
  status: number;
  body: { status: string; reason?: string; kinds: Record<string, { ready: boolean; reasons: string[] }> };
}> {
  const res = await fetch(`http://127.0.0.1:${w.handle.healthPort}/readyz`);
  return { status: res.status, body: (await res.json()) as never };
}

async function metrics(w: TestWorker): Promise<string> {
  return (await fetch(`http://127.0.0.1:${w.handle.healthPort}/metrics`)).text();
}

describe('a kind whose readiness check fails', () => {
  it('is not pulled: its job waits in the stream, /readyz and the metrics say why, and it is served once the check passes', async () => {
    let installed = false;
    const weights: ReadinessCheck = {
      name: 'fake-weights',
      run: async () => (installed ? null : 'weights not installed'),
    };
    const w = await worker(ONLY_IMAGE, { readiness: { image: [weights] } });
    workers.push(w);
    await cp.publishJob('image', 'vendor-image-upscale', imageJob('wait-1'));

    const before = await readyz(w);
    expect(before.status).toBe(503);
    expect(before.body.reason).toBe('no kind can run here: image (fake-weights: weights not installed)');
    expect(before.body.kinds.image).toEqual({
      slots: 1,
      ready: false,
      reasons: ['fake-weights: weights not installed'],
    });
    const text = await metrics(w);
    expect(text).toContain('media_worker_kind_ready{kind="image"} 0');
    expect(text).toContain('media_worker_kind_check_failing{kind="image",check="fake-weights"} 1');
    expect(text).toContain('media_worker_slots{kind="image"} 0');

    // Several readiness rounds and pull periods later, nothing was taken.
    await sleep(1500);
    expect(w.records).toEqual([]);
    expect(await cp.eventsOf('wait-1')).toEqual([]);
    expect(await cp.jobsInQueue()).toBe(1);
    const consumer = await cp.jsm.consumers.info('MEDIA_JOBS', 'media-worker-image');
    expect(consumer.delivered.consumer_seq).toBe(0);

    installed = true;
    const event = await waitFor('the event once the check passes', async () => (await cp.eventsOf('wait-1'))[0]);
    expect(event).toMatchObject({ status: 'completed', attempt: 1 });
    expect((await readyz(w)).status).toBe(200);
    expect(await metrics(w)).toContain('media_worker_kind_ready{kind="image"} 1');
  });

  it('withdraws the open pull when its kind stops being ready, so a job published then is not delivered here', async () => {
    let ok = true;
    const flaky: ReadinessCheck = { name: 'fake-disk', run: async () => (ok ? null : 'disk full') };
    // A long pull: without withdrawing it, the job published below would be delivered into it.
    const w = await worker({ ...ONLY_IMAGE, pullExpiresMs: 20_000 }, { readiness: { image: [flaky] } });
    workers.push(w);
    await sleep(300); // the slot's pull is open
    ok = false;
    await waitFor('readiness to notice', async () => (await readyz(w)).status === 503);
    await cp.publishJob('image', 'vendor-image-upscale', imageJob('withdrawn-1'));
    await sleep(1000);
    expect((await cp.jsm.consumers.info('MEDIA_JOBS', 'media-worker-image')).delivered.consumer_seq).toBe(0);
    ok = true;
    const event = await waitFor('the event', async () => (await cp.eventsOf('withdrawn-1'))[0]);
    expect(event).toMatchObject({ status: 'completed', attempt: 1 });
    expect(await metrics(w)).not.toContain('outcome="declined"');
  });

  it('leaves the host ready for the kinds that can run, naming the one that cannot', async () => {
    const never: ReadinessCheck = { name: 'lipsync-model', run: async () => 'no manifest for wav2lip' };
    const w = await worker(
      { concurrency: 'image=1,video=0,lipsync=1,music=0,music-video=0' },
      { readiness: { lipsync: [never] } },
    );
    workers.push(w);
    const r = await readyz(w);
    expect(r.status).toBe(200);
    expect(r.body.kinds.image?.ready).toBe(true);
    expect(r.body.kinds.lipsync).toEqual({
      slots: 1,
      ready: false,
      reasons: ['lipsync-model: no manifest for wav2lip'],
    });
  });
});

describe('disk space', () => {
  it('a full temp disk stops pulling (no job failed), readiness reports it, and jobs resume when space returns', async () => {
    let free = 10 * 1024 * 1024;
    const disk = diskSpaceCheck({
      tempDir: path.join(dir, 'tmp'),
      resultsDir: path.join(dir, 'results'),
      need: { temp: 50 * 1024 * 1024, results: 20 * 1024 * 1024 },
      reserveBytes: 0,
      freeBytes: async () => free,
    });
    const w = await worker(ONLY_IMAGE, { readiness: { image: [disk] } });
    workers.push(w);
    await cp.publishJob('image', 'vendor-image-upscale', imageJob('disk-1'));
    const r = await readyz(w);
    expect(r.status).toBe(503);
    expect(r.body.kinds.image?.reasons[0]).toMatch(
      /^disk-space: 10 MiB free in the temp and results directories \(.*\) but a job can need 50 MiB with the reserve$/,
    );
    await sleep(1500);
    expect(w.records).toEqual([]);
    expect(await cp.jobsInQueue()).toBe(1);
    expect(await cp.eventsOf('disk-1')).toEqual([]);

    free = 200 * 1024 * 1024;
    expect(await waitFor('the event once space returns', async () => (await cp.eventsOf('disk-1'))[0])).toMatchObject({
      status: 'completed',
    });
  });

  it('a job hitting ENOSPC is handed back (nak) and runs again, never failed with a refund', async () => {
    let attempts = 0;
    const executor: JobExecutor = async (_job, ctx) => {
      attempts += 1;
      if (ctx.attempt === 1) {
        const enospc = Object.assign(new Error("ENOSPC: no space left on device, write '/tmp/x/output.png'"), {
          code: 'ENOSPC',
        });
        throw enospc;
      }
      return {
        creditsUsed: 20,
        result: { url: 'https://cdn.test/x', type: 'image', width: 2, height: 2, format: 'png' },
      };
    };
    const w = await worker({ ...ONLY_IMAGE, nakDelaysMs: '100' }, { executor });
    workers.push(w);
    await cp.publishJob('image', 'vendor-image-upscale', imageJob('enospc-1'));
    const event = await waitFor('the event', async () => (await cp.eventsOf('enospc-1'))[0]);
    expect(event).toMatchObject({ status: 'completed', attempt: 2 });
    expect(attempts).toBe(2);
    expect(await cp.eventsOf('enospc-1')).toHaveLength(1);
    expect(await metrics(w)).toContain('media_worker_jobs_total{kind="image",outcome="retried"} 1');
  });
});
