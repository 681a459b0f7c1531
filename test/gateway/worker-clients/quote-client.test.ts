/**
 * The gateway's quote requests with receipts (src/gateway/worker-clients/quote-client.ts, docs/protocol.md "Quote
 * service"), against a real nats-server: a real worker's receipts and heartbeats keep a slow quote
 * alive; a request nobody received is sent once more and then answered 503 within seconds, not
 * after the whole quote timeout; a worker that falls silent after its receipt is given up on.
 * Under the shipped per-role NATS users (test/helpers/role-nats.ts): the client is the gateway's,
 * the workers (real and stand-in) answer as worker host `host1`, each on its own reply inbox.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInbox, headers, type Msg, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ApiError } from '../../../src/gateway/errors.js';
import { quoteClient } from '../../../src/gateway/worker-clients/quote-client.js';
import { parseJob } from '../../../src/jobs/index.js';
import { QUOTE_HEADERS, QUOTE_SUBJECT } from '../../../src/protocol/index.js';
import { sleep, waitFor } from '../../worker/helpers/jetstream.js';
import { startTestWorker, type TestWorker } from '../../worker/helpers/in-process.js';
import { startRoleNats, type RoleNats } from '../../helpers/role-nats.js';

const job = parseJob({
  model: 'vendor-image-upscale',
  input: { image_url: 'https://media.test/a.png', upscale_factor: '2' },
});
const priced = {
  model: 'vendor-image-upscale',
  creditsUsed: 20,
  input: { image_url: 'https://media.test/a.png', upscale_factor: '2' },
};
/** Far above every wait these tests expect: an answer after it means the receipts did nothing. */
const TIMEOUT_MS = 60_000;

let dir: string;
let roles: RoleNats;
/** The gateway's connection, and a worker host's (for the stand-ins). */
let nc: NatsConnection;
let wk: NatsConnection;
const cleanups: (() => Promise<void> | void)[] = [];

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'media-quote-client-'));
  roles = await startRoleNats(dir);
  nc = await roles.connectAs('gateway');
  wk = await roles.connectAs('worker-host1');
});

afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
});

afterAll(async () => {
  await nc?.close();
  await wk?.close();
  await roles?.close();
  await rm(dir, { recursive: true, force: true });
});

const client = (o: { receiptWaitMs?: number; heartbeatMs?: number } = {}) =>
  quoteClient(nc, { timeoutMs: TIMEOUT_MS, inboxPrefix: roles.auth('gateway').inboxPrefix, ...o });

/** A stand-in for a worker on media.quote (queue group q, as the real one), answering as told. */
/** Gone at the server before the next test asks (the stand-ins' connection is not the gateway's). */
async function unsubscribed(sub: Subscription): Promise<void> {
  sub.unsubscribe();
  await wk.flush();
}

async function fakeWorker(onRequest: (msg: Msg, n: number) => void): Promise<{ requests: Msg[] }> {
  const requests: Msg[] = [];
  const sub = wk.subscribe(QUOTE_SUBJECT, { queue: 'q', callback: (_err, msg) => onRequest(msg, requests.push(msg)) });
  cleanups.push(() => unsubscribed(sub));
  // Another connection than the gateway's: the server must have the subscription before the request.
  await wk.flush();
  return { requests };
}

async function abandonsSeen(): Promise<string[]> {
  const ids: string[] = [];
  const sub = wk.subscribe('media.quote.abandon', {
    callback: (_err, msg) => {
      ids.push(msg.string());
    },
  });
  cleanups.push(() => unsubscribed(sub));
  await wk.flush();
  return ids;
}

async function failure(promise: Promise<unknown>): Promise<ApiError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApiError);
  return err as ApiError;
}

describe('quote requests with receipts', () => {
  it("a real worker's receipt and heartbeats keep a quote that outlasts the silence window alive", async () => {
    let calls = 0;
    const quote = async () => {
      calls += 1;
      await sleep(4_500); // longer than 3 missed heartbeats of 1 s
      return priced;
    };
    const worker: TestWorker = await startTestWorker(roles.url, roles.settingsOf('worker-host1'), quote as never, {
      provisionAs: roles.settingsOf('operator'),
    });
    cleanups.push(() => worker.stop());
    // The replies on the wire: a receipt, heartbeats, then the answer, each with the protocol header.
    const inbox = createInbox(roles.auth('gateway').inboxPrefix);
    const seen: { status: string; protocol: string; bytes: number }[] = [];
    const tap = nc.subscribe(inbox, {
      callback: (_err, msg) => {
        seen.push({
          status: msg.headers?.get(QUOTE_HEADERS.status) ?? '',
          protocol: msg.headers?.get('Media-Protocol-Version') ?? '',
          bytes: msg.data.length,
        });
      },
    });
    cleanups.push(() => tap.unsubscribe());
    const h = headers();
    h.set(QUOTE_HEADERS.receipt, '1000');
    nc.publish(QUOTE_SUBJECT, JSON.stringify({ model: job.model, input: job.input }), { reply: inbox, headers: h });

    const started = Date.now();
    await expect(client({ heartbeatMs: 1000 })(job, { party: 'acct_a' })).resolves.toMatchObject({ creditsUsed: 20 });
    expect(Date.now() - started).toBeGreaterThan(3_000);
    expect(calls).toBe(2);
    // The tap hears the answer on its own connection: wait for it, not for a fixed moment.
    await waitFor('the answer on the wire', () => (seen.at(-1)?.bytes ?? 0) > 0, 20_000);
    expect(seen[0]).toEqual({ status: 'received', protocol: '2.1', bytes: 0 });
    expect(seen.slice(1, -1).every((s) => s.status === 'working' && s.bytes === 0)).toBe(true);
    expect(seen.length).toBeGreaterThanOrEqual(5); // received, 3 or 4 heartbeats, the answer
    expect(seen.at(-1)).toMatchObject({ status: '', protocol: '2.1' });
    expect(seen.at(-1)?.bytes).toBeGreaterThan(0);
  }, 20_000);

  it('a request that no worker acknowledges is sent once more, then answered 503 at once, and both are abandoned', async () => {
    const swallowed = await fakeWorker(() => undefined); // subscribed (so no "no responders"), never answers
    const abandoned = await abandonsSeen();
    const started = Date.now();
    const err = await failure(client({ receiptWaitMs: 400 })(job, { party: 'acct_a' }));
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(err.status).toBe(503);
    expect(err.headers).toMatchObject({ 'retry-after': '5' });
    expect(err.message).toMatch(/No worker acknowledged/);
    expect(swallowed.requests).toHaveLength(2);
    const ids = swallowed.requests.map((m) => m.headers?.get(QUOTE_HEADERS.id));
    expect(new Set(ids).size).toBe(2);
    // The abandons go out on the gateway's connection and arrive on the worker's: wait for both
    // (a loaded machine delivered one after a fixed 100 ms wait, issue 56).
    await waitFor('both abandons', () => abandoned.length >= 2, 20_000);
    expect(abandoned.sort()).toEqual([...ids].sort());
  });

  it('a request lost once is answered through its second sending', async () => {
    const worker = await fakeWorker((msg, n) => {
      if (n === 1) return; // lost with a node, say
      msg.respond('', { headers: statusHeaders('received') });
      msg.respond(JSON.stringify(priced));
    });
    await expect(client({ receiptWaitMs: 400 })(job, { party: 'acct_a' })).resolves.toMatchObject({ creditsUsed: 20 });
    expect(worker.requests).toHaveLength(2);
  });

  it('a worker that falls silent after its receipt is given up on after three missed heartbeats', async () => {
    await fakeWorker((msg) => msg.respond('', { headers: statusHeaders('received') }));
    const started = Date.now();
    const err = await failure(client({ heartbeatMs: 1000 })(job, { party: 'acct_a' }));
    const waited = Date.now() - started;
    expect(waited).toBeGreaterThanOrEqual(2_900);
    expect(waited).toBeLessThan(10_000);
    expect(err.status).toBe(503);
    expect(err.message).toMatch(/stopped answering/);
  });

  it('with nobody subscribed to media.quote the answer is 503 at once', async () => {
    const started = Date.now();
    const err = await failure(client()(job, { party: 'acct_a' }));
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(err.status).toBe(503);
    expect(err.message).toMatch(/No worker is listening/);
  });

  it("a worker's refusal comes back with the spec's code and status", async () => {
    await fakeWorker((msg) => {
      const h = headers();
      h.set('Nats-Service-Error', 'PROBE_FAILED');
      h.set('Nats-Service-Error-Code', '422');
      msg.respond(
        JSON.stringify({ error: { code: 'PROBE_FAILED', status: 422, message: 'Could not read the image' } }),
        { headers: h },
      );
    });
    const err = await failure(client()(job, { party: 'acct_a' }));
    expect([err.code, err.status]).toEqual(['PROBE_FAILED', 422]);
  });
});

function statusHeaders(status: string) {
  const h = headers();
  h.set(QUOTE_HEADERS.status, status);
  return h;
}
