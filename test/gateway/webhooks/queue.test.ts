/**
 * The delivery queue against a real nats-server, in this process (webhooks/store.ts, queue.ts):
 * a delivery queued before its task is stored as settled waits for it (the outbox: a gateway dying
 * in between loses nothing); queued twice it is sent once; 429 waits what Retry-After says; a
 * delivery for a task settled otherwise is dropped; without a secret nothing is sent.
 */
import { createHmac } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../../../src/gateway/store/index.js';
import type { TaskRecord } from '../../../src/gateway/store/records.js';
import { waitFor } from '../../worker/helpers/jetstream.js';
import { startQueueHarness, type QueueHarness } from './harness.js';

interface Seen {
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
  at: number;
}

let harness: QueueHarness;
let store: Store;
let receiver: Server;
let base: string;
const seen: Seen[] = [];
const answers: Record<string, (n: number, res: ServerResponse) => void> = {};

beforeAll(async () => {
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const p = req.url ?? '';
      const n = seen.filter((s) => s.path === p).length;
      seen.push({ path: p, headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() });
      (answers[p] ?? ((_n, r) => r.writeHead(200).end()))(n, res);
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;

  harness = await startQueueHarness('WHTEST', [200, 200, 200]);
  store = harness.store;
}, 60_000);

afterAll(async () => {
  await harness?.stop();
  receiver?.closeAllConnections();
  receiver?.close();
});

let n = 0;
async function pendingTask(accountId: string, extras: TaskRecord['extras']): Promise<TaskRecord> {
  const task: TaskRecord = {
    id: `t_q${++n}`,
    accountId,
    model: 'vendor-image-upscale',
    kind: 'image',
    status: 'pending',
    creditsUsed: 1,
    createdAt: new Date().toISOString(),
    debitSeq: 1,
    extras,
  };
  await store.tasks.ensure(task);
  return task;
}

async function settle(task: TaskRecord, next: TaskRecord): Promise<void> {
  const current = await store.tasks.get(task.accountId, task.id);
  await store.tasks.replace(current!, next);
}

const completed = (task: TaskRecord): TaskRecord => ({
  ...task,
  status: 'completed',
  result: { url: 'https://x/y.png' },
  finishedAt: new Date().toISOString(),
});
const at = (p: string) => seen.filter((s) => s.path === p);

async function accountWithSecret(id: string): Promise<string> {
  const made = await store.webhooks.newSecret(id, false);
  if (!('secret' in made)) throw new Error('no secret made');
  return made.secret;
}

describe('the webhook queue', () => {
  it('waits while the task is not stored as settled, then delivers once though queued twice', async () => {
    const secret = await accountWithSecret('acct_q1');
    const task = await pendingTask('acct_q1', { webhookUrl: `${base}/outbox` });
    const next = completed(task);
    // As settle() does: queued first (and again, as a redelivered event would), stored after.
    await store.webhooks.enqueue(next);
    await store.webhooks.enqueue(next);
    await new Promise((r) => setTimeout(r, 1500));
    expect(at('/outbox')).toHaveLength(0);
    await settle(task, next);
    await waitFor('the delivery', () => at('/outbox').length === 1, 30_000);
    await waitFor('its state', async () => (await store.webhooks.state(task.id))?.status === 'delivered', 10_000);
    const request = at('/outbox')[0]!;
    const key = Buffer.from(secret.slice(6), 'base64');
    const expected = `v1,${createHmac('sha256', key)
      .update(`msg_${task.id}_completed.${String(request.headers['webhook-timestamp'])}.${request.body}`)
      .digest('base64')}`;
    expect(request.headers['webhook-signature']).toBe(expected);
    expect(JSON.parse(request.body)).toEqual({ success: true, data: { id: task.id, status: 'completed' } });
    // Queued again after delivery (a late redelivered event): not sent twice.
    await store.webhooks.enqueue(next);
    await new Promise((r) => setTimeout(r, 1000));
    expect(at('/outbox')).toHaveLength(1);
  }, 60_000);

  it("a delivery whose task was settled otherwise is replaced by that settle's own", async () => {
    await accountWithSecret('acct_q2');
    const task = await pendingTask('acct_q2', { webhookUrl: `${base}/lost-race` });
    await store.webhooks.enqueue(completed(task));
    const expired: TaskRecord = {
      ...task,
      status: 'failed',
      error: { code: 'TASK_EXPIRED', message: 'expired' },
      creditsRefunded: 1,
      finishedAt: new Date().toISOString(),
    };
    await store.webhooks.enqueue(expired);
    await settle(task, expired);
    await waitFor('the delivery', () => at('/lost-race').length >= 1, 30_000);
    await new Promise((r) => setTimeout(r, 1000));
    expect(at('/lost-race').map((s) => s.headers['webhook-id'])).toEqual([`msg_${task.id}_expired`]);
  }, 60_000);

  it('the settle that stored its task wins, whichever queued first', async () => {
    await accountWithSecret('acct_q5');
    const task = await pendingTask('acct_q5', { webhookUrl: `${base}/race` });
    const expired: TaskRecord = {
      ...task,
      status: 'failed',
      error: { code: 'TASK_EXPIRED', message: 'expired' },
      creditsRefunded: 1,
      finishedAt: new Date().toISOString(),
    };
    // The sweeper queues its expiry, a worker's completion queues after it, the sweeper stores
    // first; the worker's settle then finds the task settled and queues the expiry again.
    await store.webhooks.enqueue(expired);
    await store.webhooks.enqueue(completed(task));
    await settle(task, expired);
    await store.webhooks.enqueue(expired);
    await waitFor('the delivery', () => at('/race').length >= 1, 30_000);
    await new Promise((r) => setTimeout(r, 1000));
    expect(at('/race').map((s) => s.headers['webhook-id'])).toEqual([`msg_${task.id}_expired`]);
  }, 60_000);

  it("one account's hanging endpoint holds at most 4 of the gateway's 16 slots; another account is served meanwhile", async () => {
    await accountWithSecret('acct_slow');
    await accountWithSecret('acct_quick');
    const held: ServerResponse[] = [];
    let open = 0;
    let mostOpen = 0;
    answers['/hanging'] = (_i, res) => {
      open += 1;
      mostOpen = Math.max(mostOpen, open);
      res.on('close', () => (open -= 1));
      held.push(res);
    };
    for (let i = 0; i < 20; i++) {
      const task = await pendingTask('acct_slow', { webhookUrl: `${base}/hanging` });
      await store.webhooks.enqueue(completed(task));
      await settle(task, completed(task));
    }
    await waitFor("the slow account's first requests", () => open >= 4, 30_000);
    const quick = await pendingTask('acct_quick', { webhookUrl: `${base}/quick` });
    await store.webhooks.enqueue(completed(quick));
    await settle(quick, completed(quick));
    await waitFor("the other account's delivery", () => at('/quick').length === 1, 30_000);
    expect(mostOpen).toBe(4);
    for (const res of held) res.writeHead(200).end();
    answers['/hanging'] = (_i, res) => res.writeHead(200).end();
  }, 60_000);

  it('429 waits what Retry-After says, not the schedule', async () => {
    await accountWithSecret('acct_q3');
    answers['/busy'] = (i, res) =>
      i === 0 ? res.writeHead(429, { 'retry-after': '2' }).end() : res.writeHead(200).end();
    const task = await pendingTask('acct_q3', { webhookUrl: `${base}/busy` });
    await store.webhooks.enqueue(completed(task));
    await settle(task, completed(task));
    // The state it asserts, not the endpoint's side of it: the queue stores the second attempt's
    // answer after the endpoint has seen the request (a loaded machine read `attempts: 1` between).
    await waitFor(
      'the delivered state',
      async () => (await store.webhooks.state(task.id))?.status === 'delivered',
      30_000,
    );
    expect(await store.webhooks.state(task.id)).toMatchObject({ status: 'delivered', attempts: 2 });
    const [first, second] = at('/busy');
    expect(at('/busy')).toHaveLength(2);
    // The schedule's delay is 200 ms; Retry-After asked for 2 s (a busy machine only adds to it).
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(1900);
  }, 60_000);

  it('gives up after the schedule, failed with the last answer', async () => {
    await accountWithSecret('acct_q4');
    answers['/down'] = (_i, res) => res.writeHead(500).end('down for maintenance');
    const task = await pendingTask('acct_q4', { webhookUrl: `${base}/down` });
    await store.webhooks.enqueue(completed(task));
    await settle(task, completed(task));
    await waitFor(
      'the webhook to fail',
      async () => (await store.webhooks.state(task.id))?.status === 'failed',
      30_000,
    );
    expect(at('/down')).toHaveLength(4);
    expect(await store.webhooks.state(task.id)).toMatchObject({
      attempts: 4,
      lastResponse: { status: 500, body: 'down for maintenance' },
    });
  }, 60_000);

  it('an account without a secret gets no request; its state says why', async () => {
    const task = await pendingTask('acct_nosecret', { webhookUrl: `${base}/unsigned` });
    await store.webhooks.enqueue(completed(task));
    await settle(task, completed(task));
    await waitFor('the state', async () => (await store.webhooks.state(task.id))?.status === 'failed', 30_000);
    expect(await store.webhooks.state(task.id)).toMatchObject({
      attempts: 0,
      lastResponse: { error: 'the account has no webhook secret' },
    });
    expect(at('/unsigned')).toHaveLength(0);
  }, 60_000);
});
