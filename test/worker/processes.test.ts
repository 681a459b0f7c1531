/**
 * Worker daemons in child processes (fixtures/worker-process.ts) against a real nats-server: a
 * worker SIGKILLed mid-job, SIGTERM mid-job (finish within grace, or hand back), and 200 jobs
 * across two processes. Each job start is recorded by the test-double executor in a file, so
 * "ran once" is counted, not assumed. The server runs the shipped per-role configuration
 * (test/helpers/role-nats.ts): each process is its host's user (`worker-host1`, or `worker-hosta` /
 * `worker-hostb` where a test names the host) with its inbox, and the streams are provisioned and
 * read as operator.
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { controlPlane, deleteStreams, waitFor, type ControlPlane } from './helpers/jetstream.js';
import { imageJob } from './helpers/in-process.js';
import { provisionFromEnv } from '../helpers/provision.js';
import { startRoleNats, type RoleNats } from '../helpers/role-nats.js';
import { buildWorkerFixture, readRecords, spawnWorker, type WorkerProcess } from './helpers/worker-process.js';
import type { TranspiledEntry } from './helpers/transpile.js';

const STREAMS = ['MEDIA_JOBS', 'MEDIA_EVENTS', 'MEDIA_JOBS_ADVISORIES', 'MEDIA_CLAIMS'];

let roles: RoleNats;
let cp: ControlPlane;
let fixture: TranspiledEntry;
let dir: string;
let tmp: string;
let recordFile: string;
let processes: WorkerProcess[] = [];
let counter = 0;

/** `WORKER_HOST_ID` names the host whose user the process is (host1 when not given). */
async function worker(env: Record<string, string> = {}): Promise<WorkerProcess> {
  counter += 1;
  const host = env['WORKER_HOST_ID'] ?? 'host1';
  const settings = {
    NATS_CONNECTION_NAME: `proc-worker-${counter}`,
    WORKER_ACK_WAIT_MS: '2000',
    WORKER_HEARTBEAT_MS: '300',
    WORKER_PULL_EXPIRES_MS: '1000',
    WORKER_NAK_DELAYS_MS: '100',
    WORKER_CONCURRENCY: 'image=1,video=0,lipsync=0,music=0,music-video=0',
    WORKER_DRAIN_GRACE_MS: '10000',
    WORKER_HEALTH_PORT: '0',
    WORKER_HEALTH_HOST: '127.0.0.1',
    RESULTS_DIR: path.join(tmp, 'results'),
    TEST_RECORD_FILE: recordFile,
    ...env,
  };
  // The operator's step (`media-worker provision`) with the same WORKER_* settings: the worker only binds.
  await provisionFromEnv({ ...settings, ...roles.env('operator') });
  const p = await spawnWorker(fixture.entry, { ...settings, ...roles.env(`worker-${host}`) });
  processes.push(p);
  return p;
}

async function eventOf(taskId: string, timeoutMs = 20_000) {
  return waitFor(`the terminal event of ${taskId}`, async () => (await cp.eventsOf(taskId))[0], timeoutMs);
}

beforeAll(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'media-worker-proc-nats-'));
  [roles, fixture] = await Promise.all([startRoleNats(dir, { hosts: ['hosta', 'hostb'] }), buildWorkerFixture()]);
  cp = await controlPlane(roles.url, { jobsStream: 'MEDIA_JOBS', eventsStream: 'MEDIA_EVENTS' }, roles.auth('operator'));
});

afterAll(async () => {
  await cp?.close();
  await roles?.close();
  await fixture?.cleanup();
  await fs.rm(dir, { recursive: true, force: true });
});

beforeEach(async () => {
  await deleteStreams(cp.jsm, STREAMS);
  tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'media-worker-proc-'));
  recordFile = path.join(tmp, 'executions.jsonl');
});

afterEach(async () => {
  for (const p of processes) {
    if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
    await p.exited;
  }
  processes = [];
  await fs.rm(tmp, { recursive: true, force: true });
});

describe('a worker process killed mid-job', () => {
  it('has its job redelivered to another worker, with exactly one terminal event', async () => {
    const first = await worker();
    await cp.publishJob('image', 'vendor-image-upscale', imageJob('kill-1', 'sleep=2500'));
    await waitFor('the job to start in the first worker', () => readRecords(recordFile).length === 1);
    first.child.kill('SIGKILL');
    expect(await first.exited).toBe('SIGKILL');

    const second = await worker();
    const event = await eventOf('kill-1');
    expect(event).toMatchObject({ status: 'completed', attempt: 2, worker: `proc-worker-${counter}` });
    const records = readRecords(recordFile);
    expect(records.map((r) => [r.pid, r.attempt])).toEqual([
      [first.child.pid, 1],
      [second.child.pid, 2],
    ]);
    await waitFor('the job to be acked', async () => (await cp.jobsInQueue()) === 0);
    expect(await cp.eventsOf('kill-1')).toHaveLength(1);
  });
});

/**
 * MEDIA_WORKER_TEST_KILL_AT (src/worker/kill-point.ts) kills the worker at one exact point of a job's
 * path, where a timed kill (scripts/fault-injection.ts) lands only by chance; a restarted worker
 * must then give the task exactly one terminal event, and run it again only when no event was stored.
 */
describe('a worker process killed at each point between claim and ack', () => {
  const cases = [
    { point: 'claimed', query: '', status: 'completed', runs: 1 },
    { point: 'ran', query: '', status: 'completed', runs: 2 },
    { point: 'published', query: '', status: 'completed', runs: 1 },
    { point: 'published', query: 'fail=permanent', status: 'failed', runs: 1 },
  ] as const;
  for (const c of cases) {
    it(`killed at "${c.point}" (${c.status}): one terminal event after the restart, the job run ${c.runs === 1 ? 'once' : 'twice'}`, async () => {
      const id = `point-${c.point}-${c.status}`;
      const first = await worker({ MEDIA_WORKER_TEST_KILL_AT: c.point });
      await cp.publishJob('image', 'vendor-image-upscale', imageJob(id, c.query));
      expect(await first.exited).toBe('SIGKILL');
      // What the kill left: the claim always; the event only when it died after publishing it.
      expect(await cp.eventsOf(id)).toHaveLength(c.point === 'published' ? 1 : 0);
      expect(await cp.jobsInQueue()).toBe(1);

      await worker();
      const event = await eventOf(id);
      expect(event).toMatchObject({ status: c.status, ...(c.status === 'failed' ? { refund: true } : {}) });
      await waitFor('the job to leave the queue', async () => (await cp.jobsInQueue()) === 0);
      expect(await cp.eventsOf(id)).toHaveLength(1);
      expect(readRecords(recordFile).filter((r) => r.taskId === id)).toHaveLength(c.runs);
    });
  }
});

describe('a worker host killed mid-job while another host pulls', () => {
  it('hands the task back from the other host unrun; the host restarted under the same WORKER_HOST_ID completes it', async () => {
    const first = await worker({ WORKER_HOST_ID: 'hosta' });
    await cp.publishJob('image', 'vendor-image-upscale', imageJob('kill-2', 'sleep=2500'));
    await waitFor('the job to start on hosta', () => readRecords(recordFile).length === 1);
    first.child.kill('SIGKILL');
    expect(await first.exited).toBe('SIGKILL');

    // After the ack wait the job is redelivered to hostb, which finds hosta's claim and hands it back.
    const other = await worker({ WORKER_HOST_ID: 'hostb', WORKER_NAK_DELAYS_MS: '1000' });
    await waitFor('hostb to hand the task back', () => other.logTail().includes('claimed first by another host: handing this delivery back'), 15_000);
    other.child.kill('SIGTERM');
    expect(await other.exited).toBe(0);
    expect(await cp.jobsInQueue()).toBe(1);
    expect(await cp.eventsOf('kill-2')).toEqual([]);

    const again = await worker({ WORKER_HOST_ID: 'hosta' });
    const event = await eventOf('kill-2');
    expect(event).toMatchObject({ status: 'completed', worker: `proc-worker-${counter}` });
    expect(readRecords(recordFile).map((r) => r.pid)).toEqual([first.child.pid, again.child.pid]);
    expect(await cp.jsm.streams.getMessage('MEDIA_EVENTS', { last_by_subj: 'media.events.hosta.kill-2' })).not.toBeNull();
    await waitFor('the job to be acked', async () => (await cp.jobsInQueue()) === 0);
    expect(await cp.eventsOf('kill-2')).toHaveLength(1);
  });
});

describe('SIGTERM mid-job', () => {
  it('finishes the running job within the grace period, publishes its event, acks, then exits 0', async () => {
    const p = await worker({ WORKER_DRAIN_GRACE_MS: '10000' });
    await cp.publishJob('image', 'vendor-image-upscale', imageJob('term-1', 'sleep=1500'));
    await waitFor('the job to start', () => readRecords(recordFile).length === 1);
    p.child.kill('SIGTERM');
    expect(await p.exited).toBe(0);
    // Everything happened before the process exited: nothing is left to redelivery.
    expect(await cp.eventsOf('term-1')).toMatchObject([{ status: 'completed', attempt: 1 }]);
    expect(await cp.jobsInQueue()).toBe(0);
    const consumer = await cp.jsm.consumers.info('MEDIA_JOBS', 'media-worker-image');
    expect(consumer.num_ack_pending).toBe(0);
  });

  it('hands the job back when the grace period ends, exits 0, and the job completes once elsewhere', async () => {
    const p = await worker({ WORKER_DRAIN_GRACE_MS: '300' });
    await cp.publishJob('image', 'vendor-image-upscale', imageJob('term-2', 'sleep=4000'));
    await waitFor('the job to start', () => readRecords(recordFile).length === 1);
    const signalledAt = Date.now();
    p.child.kill('SIGTERM');
    expect(await p.exited).toBe(0);
    expect(Date.now() - signalledAt).toBeLessThan(3500);
    expect(await cp.eventsOf('term-2')).toEqual([]);

    const other = await worker();
    const event = await eventOf('term-2');
    expect(event.status).toBe('completed');
    expect(readRecords(recordFile).map((r) => r.pid)).toEqual([p.child.pid, other.child.pid]);
    await waitFor('the job to be acked', async () => (await cp.jobsInQueue()) === 0);
    expect(await cp.eventsOf('term-2')).toHaveLength(1);
  });
});

describe('two worker processes', () => {
  it('complete 200 small jobs between them, none twice', async () => {
    const env = { WORKER_CONCURRENCY: 'image=4,video=0,lipsync=0,music=0,music-video=0' };
    const [a, b] = await Promise.all([worker(env), worker(env)]);
    const ids = Array.from({ length: 200 }, (_, i) => `bulk-${String(i).padStart(3, '0')}`);
    await Promise.all(ids.map((id) => cp.publishJob('image', 'vendor-image-upscale', imageJob(id, 'sleep=20'))));

    const events = await waitFor(
      'all 200 events',
      async () => {
        const all = await cp.events();
        return all.length >= 200 ? all : undefined;
      },
      60_000,
      250,
    );
    expect(events.map((e) => e.id).sort()).toEqual(ids);
    expect(events.every((e) => e.status === 'completed')).toBe(true);

    const records = readRecords(recordFile);
    expect(records).toHaveLength(200);
    expect(new Set(records.map((r) => r.taskId)).size).toBe(200);
    const byPid = new Map<number, number>();
    for (const r of records) byPid.set(r.pid, (byPid.get(r.pid) ?? 0) + 1);
    expect([...byPid.keys()].sort()).toEqual([a!.child.pid, b!.child.pid].sort());
    await waitFor('the queue to empty', async () => (await cp.jobsInQueue()) === 0);
  });
});
