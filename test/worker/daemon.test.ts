/**
 * The daemon against a real nats-server (started here on a free port) running the shipped per-role
 * users (test/helpers/role-nats.ts: the worker as `worker-host1` with its inbox, provisioning and the
 * control plane's side as operator), with an in-process worker and the test-double executor. The
 * process-level cases (SIGKILL, SIGTERM, two worker processes) are in processes.test.ts.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { headers as natsHeaders } from '@nats-io/transport-node';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { JobError } from '../../src/errors.js';
import { parseWorkerSettings } from '../../src/worker/settings.js';
import { claimTask, claimsStreamConfig, invalidTaskIdSubject, taskLease } from '../../src/protocol/index.js';
import { ensureTopology } from '../../src/worker/topology.js';
import { controlPlane, deleteStreams, sleep, waitFor, type ControlPlane } from './helpers/jetstream.js';
import { FAST_SETTINGS, imageJob, lipsyncJob, startTestWorker, type TestWorker } from './helpers/in-process.js';
import { startRoleNats, type RoleNats } from '../helpers/role-nats.js';

const STREAMS = ['MEDIA_JOBS', 'MEDIA_EVENTS', 'MEDIA_JOBS_ADVISORIES', 'MEDIA_CLAIMS'];
const names = { jobsStream: 'MEDIA_JOBS', eventsStream: 'MEDIA_EVENTS' };

let dir: string;
let roles: RoleNats;
let cp: ControlPlane;
let workers: TestWorker[] = [];

async function worker(
  overrides: Parameters<typeof startTestWorker>[1] = {},
  quote?: Parameters<typeof startTestWorker>[2],
): Promise<TestWorker> {
  const w = await startTestWorker(roles.url, { ...roles.settingsOf('worker-host1'), ...overrides }, quote, {
    provisionAs: roles.settingsOf('operator'),
  });
  workers.push(w);
  return w;
}

async function eventOf(taskId: string, timeoutMs = 15_000) {
  return waitFor(`the terminal event of ${taskId}`, async () => (await cp.eventsOf(taskId))[0], timeoutMs);
}

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'media-daemon-'));
  roles = await startRoleNats(dir);
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

describe('a job that completes', () => {
  it('publishes one completed event carrying the task object, reports progress, and removes the job', async () => {
    const w = await worker();
    const progress: unknown[] = [];
    const sub = cp.nc.subscribe('media.progress.ok-1', {
      callback: (_err, msg) => {
        progress.push(msg.json());
      },
    });
    const before = Date.now();
    await cp.publishJob('image', 'vendor-image-upscale', imageJob('ok-1', 'sleep=200', { credits: 20 }));

    const event = await eventOf('ok-1');
    expect(event).toMatchObject({
      id: 'ok-1',
      model: 'vendor-image-upscale',
      status: 'completed',
      creditsUsed: 20,
      result: { url: 'https://cdn.test/ok-1.out', type: 'image', width: 2, height: 2, format: 'png' },
      attempt: 1,
      worker: w.settings.natsName,
    });
    expect(event.refund).toBeUndefined();
    expect(event.error).toBeUndefined();
    expect(event.durationMs).toBeGreaterThanOrEqual(200);
    expect(Date.parse(event.createdAt)).toBeGreaterThanOrEqual(before - 1000);
    expect(Date.parse(event.finishedAt)).toBeGreaterThanOrEqual(Date.parse(event.startedAt ?? ''));

    await waitFor('the job to leave the queue', async () => (await cp.jobsInQueue()) === 0);
    expect(w.records.map((r) => r.taskId)).toEqual(['ok-1']);
    await waitFor('progress messages', () => progress.length >= 2);
    expect(progress[0]).toMatchObject({
      id: 'ok-1',
      model: 'vendor-image-upscale',
      stage: 'run',
      done: 0,
      total: 2,
      percent: 0,
    });
    expect(progress.at(-1)).toMatchObject({ done: 2, total: 2, percent: 100 });
    sub.unsubscribe();

    const metrics = await w.metrics.registry.metrics();
    expect(metrics).toMatch(/media_worker_jobs_total\{kind="image",outcome="completed"\} 1/);
    expect(metrics).toMatch(/media_worker_terminal_events_total\{status="completed"\} 1/);
    expect(metrics).toMatch(/media_worker_jobs_in_flight\{kind="image"\} 0/);
  });

  it('reports music tasks as vendor/generate-music with mediaType music', async () => {
    await worker();
    await cp.publishJob('music', 'vendor-v5-generate-music', {
      id: 'song-1',
      model: 'vendor-v5-generate-music',
      input: { prompt: 'a calm song' },
    });
    const event = await eventOf('song-1');
    expect(event).toMatchObject({ model: 'vendor/generate-music', mediaType: 'music', status: 'completed' });
  });

  it('serves /healthz, /readyz and /metrics, and is not ready once stopped', async () => {
    const w = await worker();
    w.metrics.setExecutionProvider('cpu');
    const base = `http://127.0.0.1:${w.handle.healthPort}`;
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    const ready = await fetch(`${base}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({
      status: 'ready',
      kinds: {
        image: { slots: 2, ready: true, reasons: [] },
        video: { slots: 1, ready: true, reasons: [] },
        lipsync: { slots: 1, ready: true, reasons: [] },
        music: { slots: 1, ready: true, reasons: [] },
        'music-video': { slots: 1, ready: true, reasons: [] },
      },
    });
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).toContain('media_worker_execution_provider_info{provider="cpu",requested="cpu"} 1');
    expect(metrics).toContain('media_worker_slots{kind="image"} 2');
    expect(w.handle.state).toBe('running');
    await w.handle.stop();
    expect(w.handle.state).toBe('stopped');
    await expect(fetch(`${base}/healthz`)).rejects.toThrow();
  });
});

describe('ownership of long jobs', () => {
  it('keeps a job longer than the ack wait with heartbeats: it is not redelivered', async () => {
    // Two workers: a redelivery would go to the idle one and run the job a second time.
    const options = {
      ackWaitMs: 1500,
      heartbeatMs: 300,
      concurrency: 'image=1,video=0,lipsync=0,music=0,music-video=0',
    };
    const [a, b] = await Promise.all([worker(options), worker(options)]);
    await cp.publishJob('image', 'vendor-image-upscale', imageJob('long-1', 'sleep=4500'));
    const event = await eventOf('long-1', 20_000);
    expect(event).toMatchObject({ status: 'completed', attempt: 1 });
    expect([...a!.records, ...b!.records]).toHaveLength(1);
    for (const w of [a!, b!]) expect(await w.metrics.registry.metrics()).not.toMatch(/outcome="duplicate"/);
  });

  it('fails a lip-sync job that runs past its watchdog with LIPSYNC_FAILED, and refunds it', async () => {
    const w = await worker({ watchdogMs: 'lipsync=1000' });
    await cp.publishJob('lipsync', 'vendor-lipsync-2', { ...lipsyncJob('lips-1', 'sleep=20000'), credits: 50 });
    const event = await eventOf('lips-1');
    expect(event).toMatchObject({
      status: 'failed',
      refund: true,
      creditsUsed: 0,
      creditsRefunded: 50,
      error: {
        code: 'LIPSYNC_FAILED',
        status: 500,
        message: 'Processing took longer than 1 seconds, the limit for lipsync jobs',
      },
    });
    expect(event.durationMs).toBeGreaterThanOrEqual(1000);
    expect(event.durationMs).toBeLessThan(5000);
    await waitFor('the job to leave the queue', async () => (await cp.jobsInQueue()) === 0);
    expect(w.records).toHaveLength(1);
  });
});

describe('failures', () => {
  it('retries a transient failure after a delay and completes on the next delivery', async () => {
    const w = await worker({ nakDelaysMs: '300' });
    await cp.publishJob('image', 'vendor-image-upscale', imageJob('flaky-1', 'fail=transient&failTimes=1'));
    const event = await eventOf('flaky-1');
    expect(event).toMatchObject({ status: 'completed', attempt: 2 });
    expect(w.records.map((r) => r.attempt)).toEqual([1, 2]);
    expect(w.records[1]!.at - w.records[0]!.at).toBeGreaterThanOrEqual(300);
  });

  it('turns a transient failure that outlives the delivery limit into one failure event', async () => {
    const w = await worker({ maxDeliver: 3, nakDelaysMs: '50' });
    await cp.publishJob('image', 'vendor-image-upscale', imageJob('flaky-2', 'fail=transient'));
    const event = await eventOf('flaky-2');
    expect(event).toMatchObject({
      status: 'failed',
      refund: true,
      attempt: 3,
      error: {
        code: 'FETCH_FAILED',
        status: 422,
        message: 'test double: transient failure (gave up after 3 attempts)',
      },
    });
    expect(w.records.map((r) => r.attempt)).toEqual([1, 2, 3]);
    await waitFor('the job to leave the queue', async () => (await cp.jobsInQueue()) === 0);
  });

  it.each([
    ['permanent', 'PROBE_FAILED', 422, 'test double: permanent failure'],
    ['crash', 'UPSCALE_FAILED', 500, 'Processing failed: test double crashed'],
  ])('fails at once on a %s failure (%s), without retrying', async (fail, code, status, message) => {
    const w = await worker();
    const id = `fail-${fail}`;
    await cp.publishJob('image', 'vendor-image-upscale', imageJob(id, `fail=${fail}`));
    const event = await eventOf(id);
    expect(event).toMatchObject({ status: 'failed', refund: true, attempt: 1, error: { code, status, message } });
    await sleep(300);
    expect(w.records).toHaveLength(1);
    expect(await cp.jobsInQueue()).toBe(0);
  });
});

describe('exactly one event per task', () => {
  it('runs a job published twice only once', async () => {
    const w = await worker();
    const first = await cp.publishJob('image', 'vendor-image-upscale', imageJob('twice-1', 'sleep=100'));
    const second = await cp.publishJob('image', 'vendor-image-upscale', imageJob('twice-1', 'sleep=100'));
    expect(first.duplicate).toBe(false);
    expect(second.duplicate).toBe(true);
    await eventOf('twice-1');

    // Published again later without the header (past any duplicate window): the event exists, so
    // the worker acks it without running it.
    await cp.publishJob('image', 'vendor-image-upscale', imageJob('twice-1', 'sleep=100'), { msgId: null });
    await waitFor('the late copy to be acked', async () => (await cp.jobsInQueue()) === 0);
    await sleep(200);
    expect(w.records).toHaveLength(1);
    expect(await cp.eventsOf('twice-1')).toHaveLength(1);
    expect(await w.metrics.registry.metrics()).toMatch(/media_worker_jobs_total\{kind="image",outcome="duplicate"\} 1/);
  });

  it('refuses a second, different event from the same host for a task (the stream keeps the first)', async () => {
    const w = await worker();
    await cp.publishJob('image', 'vendor-image-upscale', imageJob('race-1', 'fail=permanent'));
    const event = await eventOf('race-1');
    expect(event.status).toBe('failed');
    // What a racing worker of the same host would publish: refused by the per-subject limit, not stored.
    const { jetstream } = await import('@nats-io/jetstream');
    await expect(
      jetstream(cp.nc).publish(
        `media.events.${w.settings.hostId}.race-1`,
        JSON.stringify({ ...event, status: 'completed' }),
        { msgID: 'race-1:other' },
      ),
    ).rejects.toThrow(/maximum messages per subject exceeded/);
    expect(await cp.eventsOf('race-1')).toEqual([event]);
  });
});

describe('malformed jobs', () => {
  it('terminates them with a failure event carrying a clear code when the task id is readable, and keeps serving', async () => {
    const w = await worker();
    const encoder = new TextEncoder();
    const cases: {
      id: string;
      kind: string;
      body?: unknown;
      raw?: Uint8Array;
      msgId?: string | null;
      code: string;
      message: RegExp;
    }[] = [
      {
        id: 'bad-json',
        kind: 'image',
        raw: encoder.encode('{not json'),
        msgId: 'bad-json',
        code: 'INVALID_JOB',
        message: /Expected job to be a JSON object/,
      },
      {
        id: 'no-model',
        kind: 'image',
        body: { id: 'no-model', input: {} },
        code: 'UNKNOWN_MODEL',
        message: /Expected model to be one of/,
      },
      {
        id: 'no-url',
        kind: 'image',
        body: { id: 'no-url', model: 'vendor-image-upscale', input: {} },
        code: 'MISSING_IMAGE_URL',
        message: /image_url/,
      },
      {
        id: 'bad-factor',
        kind: 'image',
        body: {
          id: 'bad-factor',
          model: 'vendor-image-upscale',
          input: { image_url: 'https://media.test/x.png', upscale_factor: '8' },
        },
        code: 'INVALID_UPSCALE_FACTOR',
        message: /upscale_factor/,
      },
      {
        id: 'wrong-kind',
        kind: 'image',
        body: lipsyncJob('wrong-kind'),
        code: 'INVALID_JOB',
        message: /Expected model to be a image model \(the job was published on media\.jobs\.image\./,
      },
      {
        id: 'hdr-1',
        kind: 'image',
        body: imageJob('body-1'),
        msgId: 'hdr-1',
        code: 'INVALID_JOB',
        message: /Expected id to be absent or "hdr-1" \(the Nats-Msg-Id header\)/,
      },
    ];
    for (const c of cases) {
      await cp.publishJob(c.kind, 'x', c.body, {
        ...(c.raw ? { raw: c.raw } : {}),
        ...(c.msgId !== undefined ? { msgId: c.msgId } : {}),
      });
    }
    // No task id anywhere: nothing to bill, so terminated without an event.
    await cp.publishJob('image', 'x', undefined, { raw: encoder.encode('garbage'), msgId: null });
    // An id that is not a task id: its failure event goes to media.events.<host>.invalid.<sha-256 of the id>.
    await cp.publishJob(
      'image',
      'x',
      { id: 'has.dot', model: 'vendor-image-upscale', input: {}, credits: 7 },
      { msgId: null },
    );
    await cp.publishJob('image', 'x', imageJob('ok-body'), { msgId: 'bad.id75273b' });
    await cp.publishJob('image', 'vendor-image-upscale', imageJob('after-bad'));

    for (const c of cases) {
      const event = await eventOf(c.id);
      expect(event, c.id).toMatchObject({
        status: 'failed',
        refund: true,
        creditsUsed: 0,
        startedAt: null,
        durationMs: null,
        error: { code: c.code, status: 400 },
      });
      expect(event.error?.message, c.id).toMatch(c.message);
    }
    expect(await eventOf('after-bad')).toMatchObject({ status: 'completed' });
    for (const [claimed, credits] of [
      ['has.dot', 7],
      ['bad.id75273b', undefined],
    ] as const) {
      const event = await eventOf(claimed);
      expect(event, claimed).toMatchObject({
        status: 'failed',
        refund: true,
        retryable: false,
        error: { code: 'INVALID_JOB', status: 400 },
      });
      expect(event.creditsRefunded).toBe(credits);
      const stored = await cp.jsm.streams.getMessage('MEDIA_EVENTS', {
        last_by_subj: invalidTaskIdSubject(w.settings.hostId, claimed),
      });
      expect(stored?.json()).toMatchObject({ id: claimed });
    }
    await waitFor('every malformed job to be terminated', async () => (await cp.jobsInQueue()) === 0);
    const all = await cp.events();
    expect(all.map((e) => e.id).sort()).toEqual(
      [...cases.map((c) => c.id), 'after-bad', 'has.dot', 'bad.id75273b'].sort(),
    );
    expect(w.records.map((r) => r.taskId)).toEqual(['after-bad']);
    expect(await w.metrics.registry.metrics()).toMatch(
      /media_worker_jobs_total\{kind="image",outcome="unidentified"\} 1/,
    );
    const consumer = await cp.jsm.consumers.info('MEDIA_JOBS', 'media-worker-image');
    expect(consumer.num_ack_pending).toBe(0);
    expect(consumer.num_pending).toBe(0);
  });
});

describe('the NATS server restarts', () => {
  it('finishes a job that was running across a server restart, with exactly one event', async (ctx) => {
    if (!roles.server.owned) ctx.skip();
    const w = await worker({ ackWaitMs: 5000, heartbeatMs: 500 });
    await cp.publishJob('image', 'vendor-image-upscale', imageJob('restart-1', 'sleep=2500'));
    await waitFor('the job to start', () => w.records.length === 1);
    await roles.server.restart(800);
    const event = await eventOf('restart-1', 30_000);
    expect(event).toMatchObject({ status: 'completed', attempt: 1 });
    await waitFor('the job to be acked', async () => (await cp.jobsInQueue()) === 0, 15_000);
    // And the worker keeps serving after the restart.
    await cp.publishJob('image', 'vendor-image-upscale', imageJob('restart-2'));
    expect(await eventOf('restart-2', 20_000)).toMatchObject({ status: 'completed' });
    expect(w.records.map((r) => r.taskId)).toEqual(['restart-1', 'restart-2']);
    expect(await cp.eventsOf('restart-1')).toHaveLength(1);
  });
});

describe('drain', () => {
  it('lets a running job finish within the grace period, then stops', async () => {
    const w = await worker({ drainGraceMs: 5000 });
    await cp.publishJob('image', 'vendor-image-upscale', imageJob('drain-1', 'sleep=800'));
    await waitFor('the job to start', () => w.records.length === 1);
    const stopping = w.handle.stop();
    expect(w.handle.state).toBe('draining');
    await stopping;
    expect(w.handle.state).toBe('stopped');
    expect(await cp.eventsOf('drain-1')).toMatchObject([{ status: 'completed' }]);
    expect(await cp.jobsInQueue()).toBe(0);
  });

  it('hands a job back when the grace period ends, and another worker completes it', async () => {
    const first = await worker({ drainGraceMs: 300 });
    await cp.publishJob('image', 'vendor-image-upscale', imageJob('drain-2', 'sleep=3000'));
    await waitFor('the job to start', () => first.records.length === 1);
    await first.handle.stop();
    expect(await cp.eventsOf('drain-2')).toEqual([]);
    const second = await worker();
    const event = await eventOf('drain-2');
    expect(event).toMatchObject({ status: 'completed', worker: second.settings.natsName });
    // The hand-back costs at most the one delivery: the draining worker's idle pulls were
    // withdrawn, so the job was not offered to it again (nats-server 2.9 may even report 1).
    expect(event.attempt).toBeLessThanOrEqual(2);
    expect(second.records.map((r) => r.taskId)).toEqual(['drain-2']);
  });
});

describe('quote service', () => {
  const quote = async (job: { model: string; input: unknown }) => {
    const input = job.input as { image_url?: string };
    if (input.image_url?.includes('unreadable'))
      throw new JobError('PROBE_FAILED', 'Could not read the image dimensions');
    return {
      model: 'vendor-image-upscale' as const,
      creditsUsed: 20,
      input: { ...input, detected_dimensions: '640×480', output_tier: '24mp' },
    };
  };

  it('answers with the quote, or with the error body and the framework error headers', async () => {
    await worker({}, quote as never);
    const ok = await cp.nc.request(
      'media.quote',
      JSON.stringify({ model: 'vendor-image-upscale', input: { image_url: 'https://media.test/a.png' } }),
      { timeout: 5000 },
    );
    expect(ok.json()).toEqual({
      model: 'vendor-image-upscale',
      creditsUsed: 20,
      input: {
        image_url: 'https://media.test/a.png',
        upscale_factor: '2',
        detected_dimensions: '640×480',
        output_tier: '24mp',
      },
    });
    expect(ok.headers?.get('Nats-Service-Error-Code') ?? '').toBe('');

    const cases = [
      [{ model: 'vendor-image-upscale', input: {} }, 'MISSING_IMAGE_URL', 400],
      [
        { model: 'vendor-image-upscale', input: { image_url: 'https://media.test/unreadable.png' } },
        'PROBE_FAILED',
        422,
      ],
      ['not json', 'INVALID_JOB', 400],
    ] as const;
    for (const [body, code, status] of cases) {
      const reply = await cp.nc.request('media.quote', typeof body === 'string' ? body : JSON.stringify(body), {
        timeout: 5000,
      });
      expect(reply.json(), code).toMatchObject({ error: { code, status } });
      expect(reply.headers?.get('Nats-Service-Error')).toBe(code);
      expect(reply.headers?.get('Nats-Service-Error-Code')).toBe(String(status));
    }

    const info = await cp.nc.request('$SRV.INFO.media-worker', '', { timeout: 5000 });
    expect(info.json()).toMatchObject({
      name: 'media-worker',
      version: '0.1.0',
      metadata: { protocol: '2.1', capabilities: 'media.capabilities' },
      endpoints: [
        { name: 'quote', subject: 'media.quote', queue_group: 'q' },
        { name: 'cancel', subject: 'media.cancel', queue_group: 'q' },
      ],
    });
  });

  it('shares its slots fairly between parties, drops expired and abandoned quotes before they start, and aborts an abandoned running one', async () => {
    // One slot; each quote holds it until released (or aborted), so the order of starts is visible.
    const started: string[] = [];
    const aborted: string[] = [];
    const release = new Map<string, () => void>();
    const holding = async (job: { input: unknown }, signal: AbortSignal) => {
      const name = /\/(\w+)\.png$/.exec((job.input as { image_url: string }).image_url)![1]!;
      started.push(name);
      await new Promise<void>((resolve, reject) => {
        release.set(name, resolve);
        signal.addEventListener('abort', () => {
          aborted.push(name);
          reject(signal.reason as Error);
        });
      });
      return { model: 'vendor-image-upscale' as const, creditsUsed: 20, input: { name } };
    };
    await worker({ quoteConcurrency: 1 }, holding as never);
    const ask = (name: string, party: string, extra: Record<string, string> = {}, timeout = 3000) => {
      const h = natsHeaders();
      h.set('Media-Quote-Party', party);
      h.set('Media-Quote-Id', name);
      for (const [k, v] of Object.entries(extra)) h.set(k, v);
      return cp.nc.request(
        'media.quote',
        JSON.stringify({ model: 'vendor-image-upscale', input: { image_url: `https://media.test/${name}.png` } }),
        { timeout, headers: h },
      );
    };
    const a1 = ask('a1', 'flooder');
    await waitFor('a1 to start', () => started.includes('a1') || undefined);
    const queued = [ask('a2', 'flooder'), ask('a3', 'flooder')];
    await sleep(50);
    const b1 = ask('b1', 'other');
    const expired = ask('x1', 'late', { 'Media-Quote-Deadline': String(Date.now() + 100) }, 1500).catch(
      (err: unknown) => err,
    );
    const gone = ask('g1', 'leaver', {}, 1500).catch((err: unknown) => err);
    await sleep(200);
    cp.nc.publish('media.quote.abandon', 'g1');
    await sleep(100);
    release.get('a1')!();
    expect((await a1).json()).toMatchObject({ input: { name: 'a1' } });
    // b1 started next, ahead of the flooder's older a2 and a3; x1 (expired) and g1 (abandoned) never started.
    await waitFor('b1 to start', () => started.includes('b1') || undefined);
    expect(started).toEqual(['a1', 'b1']);
    release.get('b1')!();
    expect((await b1).json()).toMatchObject({ input: { name: 'b1' } });
    await waitFor('a2 to start', () => started.includes('a2') || undefined);
    cp.nc.publish('media.quote.abandon', 'a2');
    await waitFor('a3 to start', () => started.includes('a3') || undefined);
    release.get('a3')!();
    await Promise.allSettled(queued);
    expect(started).toEqual(['a1', 'b1', 'a2', 'a3']);
    expect(aborted).toEqual(['a2']);
    expect(String(await expired)).toMatch(/TIMEOUT|timeout/i);
    expect(String(await gone)).toMatch(/TIMEOUT|timeout/i);
  }, 30_000);
});

describe('topology', () => {
  it('creates streams and consumers idempotently and updates the ack wait of an existing consumer', async () => {
    const jsm = await jetstreamManager(cp.nc);
    const base = { ...FAST_SETTINGS, natsUrl: roles.url };
    await Promise.all([ensureTopology(jsm, parseWorkerSettings(base)), ensureTopology(jsm, parseWorkerSettings(base))]);
    await ensureTopology(jsm, parseWorkerSettings({ ...base, ackWaitMs: 7000 }));
    const consumer = await jsm.consumers.info('MEDIA_JOBS', 'media-worker-video');
    expect(consumer.config).toMatchObject({
      filter_subject: 'media.jobs.video.>',
      ack_wait: 7000 * 1e6,
      max_deliver: 3,
    });
    const events = await jsm.streams.info('MEDIA_EVENTS');
    expect(events.config).toMatchObject({
      subjects: ['media.events.>'],
      max_msgs_per_subject: 1,
      discard: 'new',
      discard_new_per_subject: true,
    });
    const jobs = await jsm.streams.info('MEDIA_JOBS');
    expect(jobs.config).toMatchObject({ subjects: ['media.jobs.>'], retention: 'workqueue' });
    const names: string[] = [];
    for await (const c of jsm.consumers.list('MEDIA_JOBS')) names.push(c.name);
    expect(names.sort()).toEqual([
      'media-worker-image',
      'media-worker-lipsync',
      'media-worker-music',
      'media-worker-music-video',
      'media-worker-video',
    ]);
  });

  it('upgrades a 2.0 claims stream (one claim per subject) to keep every entry: a 2.0 claim stays readable and its host renews it as a lease', async () => {
    const jsm = await jetstreamManager(cp.nc);
    const settings = parseWorkerSettings({ ...FAST_SETTINGS, natsUrl: roles.url });
    await jsm.streams.delete('MEDIA_CLAIMS').catch(() => undefined);
    await jsm.streams.add({ ...claimsStreamConfig(settings), max_msgs_per_subject: 1, discard_new_per_subject: true });
    await jetstream(cp.nc).publish(
      'media.claims.host1.upgraded-1',
      JSON.stringify({ id: 'upgraded-1', host: 'host1', at: new Date().toISOString() }),
    );
    expect(await taskLease(jsm, 'MEDIA_CLAIMS', 'upgraded-1')).toMatchObject({ holder: 'host1', expiresAtMs: null });
    await ensureTopology(jsm, settings);
    const upgraded = (await jsm.streams.info('MEDIA_CLAIMS')).config;
    expect(upgraded.max_msgs_per_subject).toBe(-1);
    expect(Boolean(upgraded.discard_new_per_subject)).toBe(false);
    const renewed = await claimTask(
      jetstream(cp.nc),
      jsm,
      { claimsStream: 'MEDIA_CLAIMS', host: 'host1', timeoutMs: 2000, leaseMs: 30_000 },
      'upgraded-1',
      'renew',
    );
    expect(renewed).toMatchObject({ holder: 'host1', generation: 1, settled: false });
    expect(renewed.expiresAtMs).toBe(renewed.atMs + 30_000);
  });
});
