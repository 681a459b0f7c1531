/**
 * The webhooks tried as an attacker would, against real HTTP receivers and a real nats-server:
 * receivers that trickle or never finish their answer, or send a huge header; the signature over
 * the exact bytes sent; a storm of retries over the API while a request is under way; two
 * rotations within a day (which secrets sign).
 */
import { createHmac } from 'node:crypto';
import { jetstream } from '@nats-io/jetstream';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTcpServer, type Server as TcpServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../../../src/gateway/store/index.js';
import type { TaskRecord } from '../../../src/gateway/store/records.js';
import { postWebhook, type DeliveryOptions } from '../../../src/gateway/webhooks/delivery.js';
import { PER_ACCOUNT } from '../../../src/gateway/webhooks/queue.js';
import { signingSecrets } from '../../../src/gateway/webhooks/records.js';
import { MAX_WEBHOOK_URL_LENGTH, parseWebhookUrl } from '../../../src/gateway/webhooks/target.js';
import { webhookHeaders } from '../../../src/gateway/webhooks/signing.js';
import { waitFor } from '../../worker/helpers/jetstream.js';
import { startQueueHarness, type QueueHarness } from './harness.js';

const dev: DeliveryOptions = {
  policy: { allowLoopback: true },
  timeoutMs: 1500,
  maxResponseBytes: 1024,
  userAgent: 'test',
};

interface Seen {
  path: string;
  headers: IncomingMessage['headers'];
  raw: Buffer;
}

const seen: Seen[] = [];
/** Requests to /hold wait here until the test lets them go. */
const held: ServerResponse[] = [];
/** Requests to /hang are never answered (the delivery's deadline ends them). */
const hung: ServerResponse[] = [];
/** Requests to /burst under way now, and the most ever at once. */
const burst = { inFlight: 0, mostInFlight: 0 };
let httpReceiver: Server;
let rawReceiver: TcpServer;
const rawSockets = new Set<Socket>();
let base: string;
let rawBase: string;
let rawBehaviour: (socket: Socket) => void = () => undefined;
const trickles: NodeJS.Timeout[] = [];

let harness: QueueHarness;
let store: Store;

beforeAll(async () => {
  httpReceiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      seen.push({ path: req.url ?? '', headers: req.headers, raw: Buffer.concat(chunks) });
      if (req.url === '/hold') held.push(res);
      else if (req.url === '/trickle') {
        // Headers at once, then one byte every 50 ms, never ending.
        res.writeHead(200, { 'content-type': 'text/plain' });
        const t = setInterval(() => res.write('x'), 50);
        trickles.push(t);
      } else if (req.url === '/endless') {
        // A body far over the cap, written as fast as the socket takes it, never ending.
        res.writeHead(500);
        const pump = (): void => {
          while (res.write(Buffer.alloc(64 * 1024, 'y')));
          res.once('drain', pump);
        };
        pump();
      } else if (req.url === '/fail') res.writeHead(500).end('down');
      else if (req.url === '/hang') hung.push(res);
      else if (req.url === '/burst') {
        // An endpoint that takes 20 ms a request: its pace, and how many of its requests are under way at once.
        burst.inFlight += 1;
        burst.mostInFlight = Math.max(burst.mostInFlight, burst.inFlight);
        setTimeout(() => {
          burst.inFlight -= 1;
          res.writeHead(200).end('ok');
        }, 20);
      } else res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((resolve) => httpReceiver.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(httpReceiver.address() as AddressInfo).port}`;
  rawReceiver = createTcpServer((socket) => {
    rawSockets.add(socket);
    socket.on('close', () => rawSockets.delete(socket));
    socket.on('error', () => undefined);
    rawBehaviour(socket);
  });
  await new Promise<void>((resolve) => rawReceiver.listen(0, '127.0.0.1', resolve));
  rawBase = `http://127.0.0.1:${(rawReceiver.address() as AddressInfo).port}`;

  // A failed attempt waits ten minutes for its retry: far from any pace a busy machine gives the
  // deliveries that go through, so a test can tell "paced" from "turned away for the retries".
  harness = await startQueueHarness('WHATK', [600_000]);
  store = harness.store;
}, 60_000);

afterAll(async () => {
  trickles.forEach((t) => clearInterval(t));
  for (const res of [...held, ...hung]) res.destroy();
  await harness?.stop();
  httpReceiver?.closeAllConnections();
  httpReceiver?.close();
  for (const s of rawSockets) s.destroy();
  rawReceiver?.close();
});

/** A finished task that asked for a webhook to `url`. */
function finished(id: string, accountId: string, url: string): TaskRecord {
  const at = new Date().toISOString();
  return {
    id,
    accountId,
    model: 'vendor-image-upscale',
    kind: 'image',
    status: 'completed',
    creditsUsed: 1,
    createdAt: at,
    debitSeq: 1,
    extras: { webhookUrl: url },
    result: { url: 'https://x/y.png' },
    finishedAt: at,
  };
}

/** Stores `task` as finished and queues its delivery straight away (what settle() does, without its checks). */
async function storedAndQueued(queue: QueueHarness, task: TaskRecord): Promise<void> {
  await queue.store.tasks.ensure(task);
  const message = {
    webhookId: `msg_${task.id}_completed`,
    taskId: task.id,
    accountId: task.accountId,
    event: 'completed',
  };
  await jetstream(queue.nc).publish(queue.store.names.webhookQueueSubject(task.id), JSON.stringify(message));
}

describe('a hostile receiver', () => {
  it('trickling its body for ever: the deadline still ends the attempt', async () => {
    const started = Date.now();
    const result = await postWebhook(new URL(`${base}/trickle`), {}, '{}', dev);
    expect(result).toEqual({ error: 'no answer within 1500 ms' });
    // Generous: the point is that it ends, not how fast.
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('an endless body: at most the cap is kept, and the exchange ends', async () => {
    const result = await postWebhook(new URL(`${base}/endless`), {}, '{}', dev);
    expect(result.status).toBe(500);
    expect(Buffer.byteLength(result.body ?? '')).toBeLessThanOrEqual(1024);
  });

  it('never answering after accepting the connection: the deadline holds', async () => {
    rawBehaviour = () => undefined;
    const result = await postWebhook(new URL(`${rawBase}/x`), {}, '{}', dev);
    expect(result).toEqual({ error: 'no answer within 1500 ms' });
  });

  it('headers trickled a byte at a time for ever: the deadline holds', async () => {
    rawBehaviour = (socket) => {
      const line = 'HTTP/1.1 200 OK\r\nX-Slow: ';
      let i = 0;
      const t = setInterval(
        () => (socket.destroyed ? clearInterval(t) : socket.write(i < line.length ? line[i++]! : 'a')),
        20,
      );
      trickles.push(t);
    };
    const result = await postWebhook(new URL(`${rawBase}/x`), {}, '{}', dev);
    expect(result).toEqual({ error: 'no answer within 1500 ms' });
  });

  it('a huge header: an error, not a crash or an unbounded read', async () => {
    rawBehaviour = (socket) => {
      socket.write(`HTTP/1.1 200 OK\r\nX-Huge: ${'h'.repeat(200_000)}\r\nContent-Length: 0\r\n\r\n`);
    };
    const result = await postWebhook(new URL(`${rawBase}/x`), {}, '{}', dev);
    expect(result.status).toBeUndefined();
    expect(result.error).toMatch(/header/i);
  });
});

describe('the URL', () => {
  it('is bounded as stored (escaped), not only as sent: 2,000 spaces are 6,000 characters', () => {
    const raw = `https://example.com/a${' '.repeat(2000)}b`;
    expect(raw.length).toBeLessThanOrEqual(MAX_WEBHOOK_URL_LENGTH);
    const parsed = parseWebhookUrl(raw, { allowLoopback: false });
    expect(parsed).toEqual({ problem: expect.stringMatching(/at most 2048 characters, escaped/) as unknown });
  });
});

describe('what is signed', () => {
  it('the signature covers the exact bytes sent (multi-byte characters included), with a timestamp in seconds', async () => {
    const secret = `whsec_${Buffer.alloc(24, 7).toString('base64')}`;
    const body = JSON.stringify({ data: { prompt: 'café ☕ 𝄞 "quoted" \\ \u2028' } });
    const timestamp = Math.floor(Date.now() / 1000);
    const before = seen.length;
    const result = await postWebhook(
      new URL(`${base}/ok`),
      webhookHeaders([secret], 'msg_x_completed', timestamp, body),
      body,
      dev,
    );
    expect(result.status).toBe(200);
    const request = seen[before]!;
    expect(request.raw.equals(Buffer.from(body, 'utf8'))).toBe(true);
    const ts = String(request.headers['webhook-timestamp']);
    expect(ts).toMatch(/^\d{10}$/);
    const expected = createHmac('sha256', Buffer.alloc(24, 7))
      .update(Buffer.concat([Buffer.from(`msg_x_completed.${ts}.`), request.raw]))
      .digest('base64');
    expect(request.headers['webhook-signature']).toBe(`v1,${expected}`);
  });
});

describe('retries over the API', () => {
  it('a storm of retries while the request is under way makes no second request at once', async () => {
    await store.webhooks.newSecret('acct_storm', false);
    const task: TaskRecord = {
      id: 't_storm',
      accountId: 'acct_storm',
      model: 'vendor-image-upscale',
      kind: 'image',
      status: 'pending',
      creditsUsed: 1,
      createdAt: new Date().toISOString(),
      debitSeq: 1,
      extras: { webhookUrl: `${base}/hold` },
    };
    await store.tasks.ensure(task);
    const done: TaskRecord = {
      ...task,
      status: 'completed',
      result: { url: 'https://x/y.png' },
      finishedAt: new Date().toISOString(),
    };
    await store.webhooks.enqueue(done);
    await store.tasks.replace((await store.tasks.get(task.accountId, task.id))!, done);
    await waitFor('the first request', () => held.length === 1, 20_000);
    // The customer asks again and again while the first request hangs.
    for (let i = 0; i < 10; i += 1) await store.webhooks.enqueue(done, true);
    await new Promise((r) => setTimeout(r, 2500));
    const requests = seen.filter((s) => s.path === '/hold');
    expect(requests).toHaveLength(1);
    held.shift()!.writeHead(200).end();
    await waitFor('delivered', async () => (await store.webhooks.state(task.id))?.status === 'delivered', 20_000);
    // Once delivered, a retry is a new request (one).
    await store.webhooks.enqueue(done, true);
    await waitFor('the retry', () => held.length === 1, 20_000);
    held.shift()!.writeHead(200).end();
    await new Promise((r) => setTimeout(r, 1000));
    expect(seen.filter((s) => s.path === '/hold')).toHaveLength(2);
    expect(new Set(seen.filter((s) => s.path === '/hold').map((s) => s.headers['webhook-id']))).toEqual(
      new Set(['msg_t_storm_completed']),
    );
  }, 60_000);
});

describe('many waiting retries', () => {
  it("an account with over a thousand webhooks waiting for their retry does not stop every other account's", async () => {
    // A queue of its own (its own nats-server, consumer and deliveries), stopped at the end: the
    // thousand failing deliveries and their retries would otherwise go on under the tests after it.
    const own = await startQueueHarness('WHATM', [60_000]);
    try {
      await own.store.webhooks.newSecret('acct_many', false);
      await own.store.webhooks.newSecret('acct_other', false);
      // 1,050 finished tasks whose endpoint fails: each attempt waits a minute for its retry (nak
      // with delay), and each delivery turned away while the account's slots are taken waits too.
      for (let batch = 0; batch < 21; batch += 1) {
        await Promise.all(
          Array.from({ length: 50 }, (_, i) =>
            storedAndQueued(own, finished(`t_many_${batch}_${i}`, 'acct_many', `${base}/fail`)),
          ),
        );
      }
      // A thousand of them waiting, unacknowledged (the server's default limit per consumer): the
      // state this test is about, read from the server, whatever the number of attempts made so far.
      const jsm = await jetstream(own.nc).jetstreamManager();
      await waitFor(
        'a thousand deliveries waiting',
        async () =>
          (await jsm.consumers.info(own.store.names.webhooksStream, 'whatm-webhooks')).num_ack_pending >= 1000,
        60_000,
        100,
      );
      const other = finished('t_other_1', 'acct_other', `${base}/ok-other`);
      await own.store.tasks.ensure(other);
      await own.store.webhooks.enqueue(other);
      // Under the server's limit it would wait for the minute's retries (and their acks); here it goes at once.
      await waitFor("the other account's webhook", () => seen.some((r) => r.path === '/ok-other'), 20_000, 100);
    } finally {
      await own.stop();
    }
  }, 120_000);
});

describe("one account's many webhooks for a hanging endpoint", () => {
  it('are not offered to the gateways again and again while its slots are taken', async () => {
    await store.webhooks.newSecret('acct_hang', false);
    const jsm = await jetstream(harness.nc).jetstreamManager();
    await Promise.all(
      Array.from({ length: 300 }, (_, i) =>
        storedAndQueued(harness, finished(`t_hang_${i}`, 'acct_hang', `${base}/hang`)),
      ),
    );
    await waitFor('its four slots taken', () => hung.length >= 4, 20_000, 50);
    await new Promise((r) => setTimeout(r, 2000));
    const offered = async () =>
      (await jsm.consumers.info(store.names.webhooksStream, 'whatk-webhooks')).delivered.consumer_seq;
    const before = await offered();
    await new Promise((r) => setTimeout(r, 6000));
    const during = (await offered()) - before;
    // Offered again every second, 296 waiting deliveries were about 1,800 offers in 6 s; paced, a few dozen.
    expect(during).toBeLessThan(600);
    expect(hung.length).toBe(4);
  }, 60_000);

  it("a burst for a fast endpoint still goes through at the endpoint's pace", async () => {
    await store.webhooks.newSecret('acct_burst', false);
    await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        storedAndQueued(harness, finished(`t_burst_${i}`, 'acct_burst', `${base}/burst`)),
      ),
    );
    // At the pace of four requests of 20 ms, the 200 take seconds (a minute or two on a machine under
    // load 30); turned away for the retries (ten minutes), longer than the wait.
    const delivered = () => new Set(seen.filter((r) => r.path === '/burst').map((r) => r.headers['webhook-id'])).size;
    await waitFor('all 200 delivered', () => delivered() === 200, 300_000, 100);
    // At the endpoint's pace: never more of its requests under way than the account's slots.
    expect(burst.mostInFlight).toBeLessThanOrEqual(PER_ACCOUNT);
  }, 360_000);
});

describe('secret rotation', () => {
  it('rotated twice within 24 h: the newest and the one it replaced sign, the first is dropped at once', async () => {
    const first = await store.webhooks.newSecret('acct_rot', false);
    const second = await store.webhooks.newSecret('acct_rot', true);
    const third = await store.webhooks.newSecret('acct_rot', true);
    if (!('secret' in first) || !('secret' in second) || !('secret' in third)) throw new Error('no secret made');
    const account = (await store.webhooks.account('acct_rot'))!.value;
    expect(signingSecrets(account, Date.now())).toEqual([third.secret, second.secret]);
    expect(signingSecrets(account, Date.parse(third.previousUntil!) + 1)).toEqual([third.secret]);
    // The record never holds more than two secrets, so no request carries more than two signatures.
    expect(JSON.stringify(account)).not.toContain(first.secret);
  });
});
