/**
 * What a control plane builds on beyond jobs and events (docs/protocol.md): discovery, the refusal
 * of kinds nobody serves, cancellation (queued, running, after completion), the per-kind queue age,
 * the protocol version, and the facts events carry. Real nats-server, in-process workers with the
 * test-double executor. The server runs the shipped per-role configuration (test/helpers/role-nats.ts):
 * each worker is its host's user (`worker-host1`, or `worker-hosta` / `worker-hostb` where a test names
 * the host) with its inbox, streams are provisioned as operator, and the control plane's side
 * (publishing jobs, cancels, discovery, reading events) is the operator's.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { AckPolicy, jetstream } from '@nats-io/jetstream';
import { headers as natsHeaders } from '@nats-io/transport-node';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  CAPABILITIES_SUBJECT,
  PROTOCOL_HEADER,
  PROTOCOL_VERSION,
  cancelReplySchema,
  claimHolder,
  maxDeliveriesAdvisoryFilter,
  capabilitiesSchema,
  discoverWorkers,
  whoCanRun,
} from '../../src/protocol/index.js';
import type { ReadinessCheck } from '../../src/worker/availability.js';
import { controlPlane, deleteStreams, sleep, waitFor, type ControlPlane } from './helpers/jetstream.js';
import { parseWorkerSettings } from '../../src/worker/settings.js';
import { ensureTopology } from '../../src/worker/topology.js';
import { FAST_SETTINGS, imageJob, startTestWorker, type TestWorker } from './helpers/in-process.js';
import { startRoleNats, type RoleNats } from '../helpers/role-nats.js';

const STREAMS = ['MEDIA_JOBS', 'MEDIA_EVENTS', 'MEDIA_JOBS_ADVISORIES', 'MEDIA_CLAIMS'];
const names = { jobsStream: 'MEDIA_JOBS', eventsStream: 'MEDIA_EVENTS' };

let dir: string;
let roles: RoleNats;
let cp: ControlPlane;
let workers: TestWorker[] = [];

const quote = async (job: { model: string; input: unknown }) => ({
  model: job.model,
  creditsUsed: 20,
  input: job.input,
});

async function worker(
  overrides: Parameters<typeof startTestWorker>[1] = {},
  quoteFn?: Parameters<typeof startTestWorker>[2],
  deps: Parameters<typeof startTestWorker>[3] = {},
): Promise<TestWorker> {
  const host = overrides.hostId ?? 'host1';
  const w = await startTestWorker(roles.url, { ...roles.settingsOf(`worker-${host}`), ...overrides }, quoteFn, {
    ...deps,
    provisionAs: roles.settingsOf('operator'),
  });
  workers.push(w);
  return w;
}

async function eventOf(taskId: string, timeoutMs = 15_000) {
  return waitFor(`the terminal event of ${taskId}`, async () => (await cp.eventsOf(taskId))[0], timeoutMs);
}

/** The streams a worker creates at start, for jobs published before any worker runs. */
async function createStreams(): Promise<void> {
  await ensureTopology(cp.jsm, parseWorkerSettings({ ...FAST_SETTINGS, natsUrl: roles.url }));
}

async function cancel(body: unknown) {
  const reply = await cp.nc.request('media.cancel', JSON.stringify(body), { timeout: 5000 });
  return reply;
}

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'media-protocol-'));
  roles = await startRoleNats(dir, { hosts: ['hosta', 'hostb'] });
  cp = await controlPlane(roles.url, names, roles.auth('operator'));
});

afterAll(async () => {
  await cp?.close();
  await roles?.close();
  await rm(dir, { recursive: true, force: true });
});

beforeEach(async () => {
  await deleteStreams(cp.jsm, STREAMS);
});

afterEach(async () => {
  await Promise.all(workers.map((w) => w.stop()));
  workers = [];
});

describe('discovery', () => {
  it('every live worker announces its kinds, models, readiness with reasons, hardware and versions', async () => {
    const noWeights: ReadinessCheck = { name: 'lipsync-model', run: () => Promise.resolve('weights not installed') };
    const a = await worker({ concurrency: 'image=2,video=0,lipsync=1,music=0,music-video=0' }, quote as never, {
      readiness: { lipsync: [noWeights] },
    });
    const b = await worker({ concurrency: 'image=0,video=1,lipsync=0,music=0,music-video=0' });

    const all = await waitFor('both workers to answer', async () => {
      const found = await whoCanRunAll();
      return found.length === 2 ? found : undefined;
    });
    const byName = new Map(all.map((c) => [c.worker, c]));
    const ca = byName.get(a.settings.natsName);
    expect(ca).toMatchObject({
      protocol: PROTOCOL_VERSION,
      version: '0.1.0',
      state: 'running',
      models: ['vendor-image-upscale'],
      kinds: {
        image: { slots: 2, ready: true, reasons: [] },
        lipsync: { slots: 1, ready: false, reasons: ['lipsync-model: weights not installed'] },
        video: { slots: 0, ready: false, reasons: ['not served by this host (WORKER_CONCURRENCY)'] },
      },
    });
    expect(byName.get(b.settings.natsName)?.models).toEqual(['vendor-video-upscale']);

    expect(
      (await whoCanRun(cp.nc, CAPABILITIES_SUBJECT, 'video', { inboxPrefix: '_INBOX' })).map((c) => c.worker),
    ).toEqual([b.settings.natsName]);
    expect(await whoCanRun(cp.nc, CAPABILITIES_SUBJECT, 'lipsync', { inboxPrefix: '_INBOX' })).toEqual([]);
    expect(await whoCanRun(cp.nc, CAPABILITIES_SUBJECT, 'music', { inboxPrefix: '_INBOX' })).toEqual([]);
  });

  it('refuses quotes for kinds that no live worker can run with MODEL_UNAVAILABLE (503), and prices those another worker runs', async () => {
    // The only quoting host serves image; a second host serves video (and answers no quotes).
    await worker({ concurrency: 'image=1,video=0,lipsync=0,music=0,music-video=0' }, quote as never);
    const request = (body: unknown) => cp.nc.request('media.quote', JSON.stringify(body), { timeout: 5000 });

    const music = await request({ model: 'vendor-v5-generate-music', input: { prompt: 'a calm song' } });
    expect(music.json()).toMatchObject({
      error: { code: 'MODEL_UNAVAILABLE', status: 503, message: /No live worker can run music jobs/ },
    });
    expect(music.headers?.get('Nats-Service-Error-Code')).toBe('503');
    expect(music.headers?.get(PROTOCOL_HEADER)).toBe(PROTOCOL_VERSION);

    const video = { model: 'vendor-video-upscale', input: { video_url: 'https://media.test/v.mp4' } };
    expect((await request(video)).json()).toMatchObject({ error: { code: 'MODEL_UNAVAILABLE' } });
    await worker({ concurrency: 'image=0,video=1,lipsync=0,music=0,music-video=0' });
    expect((await request(video)).json()).toMatchObject({ model: 'vendor-video-upscale', creditsUsed: 20 });
    expect(
      (await request({ model: 'vendor-image-upscale', input: { image_url: 'https://media.test/a.png' } })).json(),
    ).toMatchObject({ creditsUsed: 20 });
    expect(
      (await request({ model: 'vendor-v5-generate-music', input: { prompt: 'x' }, priority: 'high' })).json(),
    ).toMatchObject({
      error: { code: 'INVALID_JOB', message: /"priority"/ },
    });
  });

  it('prices kinds nobody runs when WORKER_QUOTE_UNSERVED=price (workers started from the backlog)', async () => {
    await worker(
      { concurrency: 'image=1,video=0,lipsync=0,music=0,music-video=0', quoteUnserved: 'price' },
      quote as never,
    );
    const music = await cp.nc.request(
      'media.quote',
      JSON.stringify({ model: 'vendor-v5-generate-music', input: { prompt: 'a calm song' } }),
      { timeout: 5000 },
    );
    expect(music.json()).toMatchObject({ model: 'vendor-v5-generate-music', creditsUsed: 20 });
  });
});

async function whoCanRunAll() {
  const found = await discoverWorkers(cp.nc, CAPABILITIES_SUBJECT, { waitMs: 400, inboxPrefix: '_INBOX' });
  for (const c of found) capabilitiesSchema.parse(c);
  return found;
}

describe('claims', () => {
  it("a delivery of a task another host claimed first is handed back unrun; the claimer's host runs it when it is back", async () => {
    await createStreams();
    // What hosta leaves when it dies mid-job: its claim; the job is redelivered to hostb.
    await cp.nc.request(
      'media.claims.hosta.claimed-1',
      JSON.stringify({ id: 'claimed-1', host: 'hosta', at: new Date().toISOString() }),
    );
    await cp.publishJob('image', 'vendor-image-upscale', imageJob('claimed-1'));
    const b = await worker({
      concurrency: 'image=1,video=0,lipsync=0,music=0,music-video=0',
      hostId: 'hostb',
      nakDelaysMs: '2000',
    });
    await waitFor('hostb to hand it back', async () =>
      /media_worker_jobs_total\{kind="image",outcome="claimed-elsewhere"\} 1/.test(await b.metrics.registry.metrics()),
    );
    await b.stop();
    expect(await cp.jobsInQueue()).toBe(1);
    // hostb (a compromised host, say) publishes an event for the task: the claimer's host is not put off by it.
    await jetstream(cp.nc).publish(
      'media.events.hostb.claimed-1',
      JSON.stringify({
        id: 'claimed-1',
        model: 'vendor-image-upscale',
        status: 'completed',
        result: {},
        creditsUsed: 20,
        createdAt: new Date().toISOString(),
      }),
    );
    const a = await worker({ concurrency: 'image=1,video=0,lipsync=0,music=0,music-video=0', hostId: 'hosta' });
    const own = await waitFor(
      "hosta's event",
      () =>
        cp.jsm.streams
          .getMessage('MEDIA_EVENTS', { last_by_subj: 'media.events.hosta.claimed-1' })
          .then((m) => m ?? undefined),
      15_000,
    );
    expect(own.json()).toMatchObject({ status: 'completed', attempt: 2, worker: a.settings.natsName });
    expect(b.records).toEqual([]);
    expect(a.records.map((r) => r.taskId)).toEqual(['claimed-1']);
  });

  it('a task whose claimer never comes back runs out of deliveries on the other host: no event from it, the advisory left to the control plane', async () => {
    await createStreams();
    await cp.nc.request(
      'media.claims.hosta.claimed-2',
      JSON.stringify({ id: 'claimed-2', host: 'hosta', at: new Date().toISOString() }),
    );
    await cp.publishJob('image', 'vendor-image-upscale', imageJob('claimed-2'));
    const b = await worker({ concurrency: 'image=1,video=0,lipsync=0,music=0,music-video=0', hostId: 'hostb' });
    // The workers may not read or remove jobs by sequence: the captured advisory is the control
    // plane's (the reference gateway fails the task and removes the job: test/gateway/exhausted-jobs.test.ts).
    await waitFor(
      'the max-deliveries advisory to be captured',
      async () => (await cp.jsm.streams.info('MEDIA_JOBS_ADVISORIES')).state.messages === 1,
    );
    expect(b.records).toEqual([]);
    expect(await cp.eventsOf('claimed-2')).toEqual([]);
    expect(await b.metrics.registry.metrics()).toMatch(
      /media_worker_jobs_total\{kind="image",outcome="claimed-elsewhere"\} 3/,
    );
    expect(await claimHolder(cp.jsm, 'MEDIA_CLAIMS', 'claimed-2')).toBe('hosta');
  });

  it('a claim NATS does not answer is retried within the delivery: the job runs in its first delivery, not left to a redelivery', async () => {
    await createStreams();
    const w = await worker({ concurrency: 'image=1,video=0,lipsync=0,music=0,music-video=0' });
    // The claims stream away for a moment (as in an election): the claim's publish has no responder.
    await cp.jsm.streams.delete('MEDIA_CLAIMS');
    await cp.publishJob('image', 'vendor-image-upscale', imageJob('claim-lost-1'));
    await waitFor('the job delivered', async () => {
      for await (const c of cp.jsm.consumers.list('MEDIA_JOBS')) if (c.num_ack_pending > 0) return true;
      return false;
    });
    await sleep(1000);
    await createStreams();
    const event = await eventOf('claim-lost-1');
    // A redelivery (after the 3 s ack wait) would say attempt 2.
    expect(event).toMatchObject({ status: 'completed', attempt: 1 });
    expect(w.records.map((r) => r.taskId)).toEqual(['claim-lost-1']);
  });

  it("provisioning an upgrade removes the workers' former advisories durable (a work-queue stream would refuse the gateway's beside it)", async () => {
    await createStreams();
    await cp.jsm.consumers.add('MEDIA_JOBS_ADVISORIES', {
      durable_name: 'media-worker-advisories',
      filter_subject: maxDeliveriesAdvisoryFilter('MEDIA_JOBS'),
      ack_policy: AckPolicy.Explicit,
    });
    await createStreams();
    const left: string[] = [];
    for await (const c of cp.jsm.consumers.list('MEDIA_JOBS_ADVISORIES')) left.push(c.name);
    expect(left).toEqual([]);
  });
});

describe('cancellation', () => {
  it('a queued job is never started: one CANCELLED event with its refund, and the job leaves the queue unrun', async () => {
    await createStreams();
    // Other jobs ahead of it in the queue: the cancel finds its own job among them.
    for (const id of ['queued-a', 'queued-b']) await cp.publishJob('image', 'vendor-image-upscale', imageJob(id));
    await cp.publishJob(
      'image',
      'vendor-image-upscale',
      imageJob('cancel-q', '', { credits: 40, createdAt: '2025-03-01T12:00:00.000Z' }),
    );
    // No worker of the kind yet: the cancel is answered by any worker.
    await worker({ concurrency: 'image=0,video=1,lipsync=0,music=0,music-video=0' });
    const reply = await cancel({
      id: 'cancel-q',
      model: 'vendor-image-upscale',
      credits: 40,
      createdAt: '2025-03-01T12:00:00.000Z',
      reason: 'user asked',
    });
    expect(cancelReplySchema.parse(reply.json())).toEqual({
      id: 'cancel-q',
      cancelled: true,
      status: 'failed',
      code: 'CANCELLED',
    });
    const event = await eventOf('cancel-q');
    expect(event).toMatchObject({
      status: 'failed',
      refund: true,
      creditsRefunded: 40,
      retryable: false,
      // Never delivered: the protocol's 0, and no start.
      attempt: 0,
      startedAt: null,
      durationMs: null,
      // The request's (what the reference gateway sends).
      createdAt: '2025-03-01T12:00:00.000Z',
      model: 'vendor-image-upscale',
      error: { code: 'CANCELLED', status: 409, message: 'Cancelled by the control plane: user asked' },
    });
    const image = await worker({ concurrency: 'image=1,video=0,lipsync=0,music=0,music-video=0' });
    await waitFor(
      'the other jobs to run and the cancelled one to leave the queue',
      async () => (await cp.jobsInQueue()) === 0,
    );
    expect(image.records.map((r) => r.taskId).sort()).toEqual(['queued-a', 'queued-b']);
    expect(await cp.eventsOf('cancel-q')).toHaveLength(1);
  });

  it("a cancel with nothing but the id reports what the request says and the cancel's time: the worker does not read the queued job", async () => {
    await createStreams();
    await cp.publishJob(
      'image',
      'vendor-image-upscale',
      imageJob('cancel-bare', '', { credits: 30, createdAt: '2025-03-01T12:00:00.000Z' }),
    );
    await worker({ concurrency: 'image=0,video=1,lipsync=0,music=0,music-video=0' });
    const asked = Date.now();
    expect((await cancel({ id: 'cancel-bare' })).json()).toMatchObject({ cancelled: true });
    const unknown = await eventOf('cancel-bare');
    expect(unknown).toMatchObject({ model: null, attempt: 0, startedAt: null });
    expect(unknown.creditsRefunded).toBeUndefined();
    expect(unknown.createdAt).toBe(unknown.finishedAt);
    expect(Date.parse(unknown.createdAt)).toBeGreaterThanOrEqual(asked - 1000);
  });

  it('a running job stops within seconds, with exactly one CANCELLED event; the worker goes on serving', async () => {
    const w = await worker({ concurrency: 'image=1,video=0,lipsync=0,music=0,music-video=0' });
    const published = Date.now();
    await cp.publishJob(
      'image',
      'vendor-image-upscale',
      imageJob('cancel-r', 'sleep=30000', { credits: 20, createdAt: '2025-03-01T12:00:00.000Z' }),
    );
    await waitFor('the job to start', () => w.records.length === 1);
    const asked = Date.now();
    // Nothing but the id: the run in this worker says the rest.
    const reply = await cancel({ id: 'cancel-r' });
    expect(reply.json()).toMatchObject({ cancelled: true });
    await waitFor('the cancelled job to leave the queue', async () => (await cp.jobsInQueue()) === 0, 10_000);
    const stoppedMs = Date.now() - asked;
    expect(stoppedMs).toBeLessThan(5000);
    await waitFor('the slot to be free', async () =>
      /media_worker_jobs_in_flight\{kind="image"\} 0/.test(await w.metrics.registry.metrics()),
    );
    const [event] = await cp.eventsOf('cancel-r');
    // The delivery that ran it, when it started, and the job's creation time: not "never delivered".
    expect(event).toMatchObject({
      status: 'failed',
      error: { code: 'CANCELLED' },
      refund: true,
      attempt: 1,
      createdAt: '2025-03-01T12:00:00.000Z',
      model: 'vendor-image-upscale',
      creditsRefunded: 20,
    });
    expect(Date.parse(event!.startedAt!)).toBeGreaterThanOrEqual(published - 1000);
    expect(Date.parse(event!.startedAt!)).toBeLessThanOrEqual(Date.parse(event!.finishedAt));
    expect(event!.durationMs).toBe(Date.parse(event!.finishedAt) - Date.parse(event!.startedAt!));
    // The slot is free again: the next job runs.
    await cp.publishJob('image', 'vendor-image-upscale', imageJob('after-cancel'));
    expect(await eventOf('after-cancel')).toMatchObject({ status: 'completed' });
    expect(await cp.eventsOf('cancel-r')).toHaveLength(1);
  });

  it('a job running on another host: that host stops it and publishes the one CANCELLED event, whichever host answers', async () => {
    const a = await worker({ concurrency: 'image=1,video=0,lipsync=0,music=0,music-video=0', hostId: 'hosta' });
    await worker({ concurrency: 'image=0,video=1,lipsync=0,music=0,music-video=0', hostId: 'hostb' });
    for (const id of ['cancel-x1', 'cancel-x2']) {
      await cp.publishJob('image', 'vendor-image-upscale', imageJob(id, 'sleep=30000', { credits: 20 }));
      await waitFor('the job to start on hosta', () => a.records.some((r) => r.taskId === id));
      expect((await cancel({ id })).json()).toEqual({ id, cancelled: true, status: 'failed', code: 'CANCELLED' });
      await waitFor('the cancelled job to leave the queue', async () => (await cp.jobsInQueue()) === 0, 10_000);
      expect(await cp.eventsOf(id)).toMatchObject([
        { status: 'failed', error: { code: 'CANCELLED' }, refund: true, attempt: 1 },
      ]);
      expect((await cp.eventsOf(id))[0]?.startedAt).not.toBeNull();
      expect(
        await cp.jsm.streams.getMessage('MEDIA_EVENTS', { last_by_subj: `media.events.hosta.${id}` }),
      ).not.toBeNull();
    }
  });

  it('a job running in another process of the same host: that process stops it and its event says the run, whichever process answers', async () => {
    const runner = await worker({ concurrency: 'image=1,video=0,lipsync=0,music=0,music-video=0', hostId: 'hosta' });
    // A sibling under the same WORKER_HOST_ID (one process per GPU) that runs no images.
    await worker({ concurrency: 'image=0,video=1,lipsync=0,music=0,music-video=0', hostId: 'hosta' });
    // The cancel goes to either process (queue group q): several tasks, so both answer some.
    for (const id of ['cancel-s1', 'cancel-s2', 'cancel-s3', 'cancel-s4']) {
      await cp.publishJob('image', 'vendor-image-upscale', imageJob(id, 'sleep=30000', { credits: 20 }));
      await waitFor('the job to start', () => runner.records.some((r) => r.taskId === id));
      expect((await cancel({ id })).json()).toEqual({ id, cancelled: true, status: 'failed', code: 'CANCELLED' });
      await waitFor('the cancelled job to leave the queue', async () => (await cp.jobsInQueue()) === 0, 10_000);
      const events = await cp.eventsOf(id);
      expect(events, id).toMatchObject([
        { status: 'failed', error: { code: 'CANCELLED' }, attempt: 1, worker: runner.settings.natsName },
      ]);
      expect(events[0]?.startedAt, id).not.toBeNull();
    }
  });

  it('a cancel after completion changes nothing, and a malformed cancel is refused', async () => {
    await worker({ concurrency: 'image=1,video=0,lipsync=0,music=0,music-video=0' });
    await cp.publishJob('image', 'vendor-image-upscale', imageJob('done-1'));
    const done = await eventOf('done-1');
    const reply = await cancel({ id: 'done-1' });
    expect(reply.json()).toEqual({ id: 'done-1', cancelled: false, status: 'completed' });
    expect(await cp.eventsOf('done-1')).toEqual([done]);

    const again = await cancel({ id: 'twice' });
    expect(again.json()).toMatchObject({ cancelled: true });
    expect((await cancel({ id: 'twice' })).json()).toEqual({
      id: 'twice',
      cancelled: false,
      status: 'failed',
      code: 'CANCELLED',
    });

    for (const body of [{ id: 'bad.id' }, { id: 'x', priority: 1 }, {}]) {
      const refused = await cancel(body);
      expect(refused.json(), JSON.stringify(body)).toMatchObject({ error: { code: 'INVALID_JOB', status: 400 } });
    }
  });
});

describe('queue age', () => {
  it('ends a job that waited longer than its kind allows with QUEUE_TIMEOUT and a refund, without running it', async () => {
    await createStreams();
    await cp.publishJob('image', 'vendor-image-upscale', imageJob('old-1', '', { credits: 30 }));
    await sleep(1200);
    const w = await worker({
      concurrency: 'image=1,video=0,lipsync=0,music=0,music-video=0',
      maxQueueAgeMs: 'image=1000',
    });
    const event = await eventOf('old-1');
    expect(event).toMatchObject({
      status: 'failed',
      refund: true,
      creditsRefunded: 30,
      retryable: false,
      error: { code: 'QUEUE_TIMEOUT', status: 503 },
    });
    expect(event.error?.message).toMatch(
      /waited 1\.\d s in the queue, longer than the 1 s allowed \(WORKER_MAX_QUEUE_AGE_MS\)/,
    );
    await cp.publishJob('image', 'vendor-image-upscale', imageJob('young-1'));
    expect(await eventOf('young-1')).toMatchObject({ status: 'completed' });
    expect(w.records.map((r) => r.taskId)).toEqual(['young-1']);
  });
});

describe('protocol version and event facts', () => {
  it('events and progress carry the version header; a job for another major is refused; events say attempts, retryable and expiry', async () => {
    await worker({ concurrency: 'image=1,video=0,lipsync=0,music=0,music-video=0', maxDeliver: 2 });
    const progressHeaders: string[] = [];
    const sub = cp.nc.subscribe('media.progress.v-1', {
      callback: (_e, m) => void progressHeaders.push(m.headers?.get(PROTOCOL_HEADER) ?? ''),
    });
    const before = Date.now();
    await cp.publishJob('image', 'vendor-image-upscale', imageJob('v-1'));
    const ok = await eventOf('v-1');
    sub.unsubscribe();
    expect(progressHeaders.length).toBeGreaterThan(0);
    expect(new Set(progressHeaders)).toEqual(new Set([PROTOCOL_VERSION]));
    const stored = await cp.jsm.streams.getMessage('MEDIA_EVENTS', { last_by_subj: 'media.events.*.v-1' });
    expect(stored?.header.get(PROTOCOL_HEADER)).toBe(PROTOCOL_VERSION);
    // Upscale results are kept RESULTS_UPSCALE_LIFETIME_DAYS (7) from when processing started.
    const expiresMs = Date.parse(ok.resultExpiresAt ?? '') - Date.parse(ok.startedAt ?? '');
    expect(expiresMs).toBe(7 * 24 * 3600 * 1000);
    expect(Date.parse(ok.resultExpiresAt ?? '')).toBeGreaterThan(before);

    await cp.publishJob('image', 'vendor-image-upscale', imageJob('v-transient', 'fail=transient'));
    expect(await eventOf('v-transient')).toMatchObject({
      status: 'failed',
      attempt: 2,
      retryable: true,
      error: { code: 'FETCH_FAILED', message: /gave up after 2 attempts/ },
    });
    await cp.publishJob('image', 'vendor-image-upscale', imageJob('v-permanent', 'fail=permanent'));
    expect(await eventOf('v-permanent')).toMatchObject({
      status: 'failed',
      attempt: 1,
      retryable: false,
      error: { code: 'PROBE_FAILED' },
    });

    const h = natsHeaders();
    h.set('Nats-Msg-Id', 'v-2');
    h.set(PROTOCOL_HEADER, '9.0');
    const js = jetstream(cp.nc);
    await js.publish('media.jobs.image.vendor-image-upscale', JSON.stringify(imageJob('v-2')), { headers: h });
    expect(await eventOf('v-2')).toMatchObject({
      status: 'failed',
      error: { code: 'INVALID_JOB', message: /Media-Protocol-Version to be absent or 2\.<minor>/ },
    });
  });
});
