/**
 * `Idempotency-Key` end to end (issue 38, item 1), as shipped: two `gateway` processes on one
 * nats-server under the shipped per-role configuration, a real `serve` answering quotes and running
 * the image jobs. 50 concurrent identical submissions with one key over both gateways make one task
 * and one debit; the answer is replayed after both gateways restart; another body is 422 and charges
 * nothing; another account's same key is its own; a second request while the first is handled is
 * 409; a failed request gives its key back; a cancel replays; the Python example
 * (examples/python/submit_with_retry.py) retries a submission whose first answer it gave up on and
 * is charged once.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUNDLED_PHOTOS_DIR, PACKAGE_ROOT } from '../../../src/paths.js';
import { useGatewayE2e, type Account } from './e2e-harness.js';
import { startGatewayProcess, type RunningProcess } from './processes.js';

let png: Buffer;
/** /slow.png answers after this many ms: a quote, and so a submission, in flight that long. */
const SLOW_MS = 3000;

const e2e = useGatewayE2e({
  name: 'media-idempotency-e2e-',
  async files() {
    png = await sharp(path.join(BUNDLED_PHOTOS_DIR, 'chelsea.png')).resize(40, 27).png().toBuffer();
    return { '/small.png': png };
  },
  route(req, res) {
    if (req.url !== '/slow.png') return false;
    setTimeout(() => res.writeHead(200, { 'content-type': 'image/png' }).end(png), SLOW_MS);
    return true;
  },
  env: {
    // Every one of the 50 requests reaches the key (none is rate-limited or refused a quote slot first).
    GATEWAY_RATE_LIMIT_PER_ACCOUNT: '10000',
    GATEWAY_RATE_LIMIT_PER_ADDRESS: '10000',
    GATEWAY_QUOTES_PER_ACCOUNT: '100',
  },
});
const { newAccount } = e2e;

let second: RunningProcess & { url: string };

beforeAll(async () => {
  second = await startGatewayProcess({ ...e2e.gatewayEnv, GATEWAY_PORT: '0' });
}, 60_000);

afterAll(async () => {
  await second?.kill('SIGKILL');
});

interface Answer {
  status: number;
  replayed: boolean;
  retryAfter: string | null;
  body: {
    success: boolean;
    data?: Record<string, unknown> & { id?: string; status?: string };
    error?: { code: string; message: string };
  };
}

async function call(base: string, route: string, account: Account, body: unknown, key?: string): Promise<Answer> {
  const res = await fetch(`${base}${route}`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${account.key}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...(key === undefined ? {} : { 'idempotency-key': key }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return {
    status: res.status,
    replayed: res.headers.get('idempotent-replayed') === 'true',
    retryAfter: res.headers.get('retry-after'),
    body: (await res.json()) as Answer['body'],
  };
}

async function get(account: Account, route: string): Promise<Record<string, unknown>> {
  const res = await fetch(`${e2e.gateway.url}${route}`, { headers: { authorization: `Bearer ${account.key}` } });
  return ((await res.json()) as { data: Record<string, unknown> }).data;
}

/** The account's debits in its ledger (GET /api/v1/usage) and its tasks (GET /api/v1/tasks). */
async function charges(account: Account): Promise<{ debits: string[]; tasks: string[]; credits: number }> {
  const usage = (await get(account, '/api/v1/usage?limit=100')) as { movements: { type: string; taskId?: string }[] };
  const history = (await get(account, '/api/v1/tasks?limit=100')) as { tasks: { id: string }[] };
  const balance = (await get(account, '/api/v1/balance')) as { credits: number };
  return {
    debits: usage.movements.filter((m) => m.type === 'debit').map((m) => m.taskId ?? '?'),
    tasks: history.tasks.map((t) => t.id),
    credits: balance.credits,
  };
}

const image = () => ({ image_url: `${e2e.mediaUrl}/small.png`, upscale_factor: '2' });
const music = { model: 'vendor-v5-generate-music', input: { prompt: 'a song about retries', instrumental: true } };

describe('Idempotency-Key', () => {
  it('makes one task and one debit of 50 concurrent identical submissions over two gateways; every 2xx names it', async () => {
    const account = await newAccount(1000);
    const key = crypto.randomUUID();
    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        call(i % 2 === 0 ? e2e.gateway.url : second.url, '/api/v1/tools/upscale-image', account, image(), key),
      ),
    );
    const ok = answers.filter((a) => a.status >= 200 && a.status < 300);
    expect(ok.length).toBeGreaterThanOrEqual(1);
    const ids = new Set(ok.map((a) => a.body.data?.id));
    expect(ids.size).toBe(1);
    const [id] = [...ids];
    // The others were told to retry: the first was still being handled.
    for (const a of answers.filter((x) => x.status < 200 || x.status >= 300)) {
      expect([a.status, a.body.error?.code, a.retryAfter]).toEqual([409, 'IDEMPOTENCY_KEY_IN_USE', '1']);
    }
    // A retry now gets the first answer, marked as replayed, from either gateway.
    const again = await call(second.url, '/api/v1/tools/upscale-image', account, image(), key);
    expect([again.status, again.replayed, again.body.data?.id]).toEqual([200, true, id]);
    expect(await charges(account)).toEqual({ debits: [id], tasks: [id], credits: 980 });
  }, 120_000);

  it('replays the first answer after both gateways restart, and refuses another body (422) charging nothing', async () => {
    const account = await newAccount(100);
    const key = `order-${crypto.randomUUID()}`;
    const first = await call(second.url, '/api/v1/generate', account, music, key);
    expect(first.status).toBe(200);
    const id = first.body.data?.id;
    await e2e.gateway.kill('SIGKILL');
    await second.kill('SIGKILL');
    await e2e.restartGateway();
    second = await startGatewayProcess({ ...e2e.gatewayEnv, GATEWAY_PORT: '0' });
    // Field order does not make another request.
    const reordered = { input: { instrumental: true, prompt: 'a song about retries' }, model: music.model };
    for (const base of [e2e.gateway.url, second.url]) {
      const replay = await call(base, '/api/v1/generate', account, reordered, key);
      expect([replay.status, replay.replayed, replay.body]).toEqual([200, true, first.body]);
    }
    const other = await call(
      e2e.gateway.url,
      '/api/v1/generate',
      account,
      { ...music, input: { ...music.input, prompt: 'another song' } },
      key,
    );
    expect([other.status, other.body.error?.code, other.replayed]).toEqual([422, 'IDEMPOTENCY_KEY_REUSED', false]);
    // The same key on another route is another request too.
    const elsewhere = await call(e2e.gateway.url, '/api/v1/tools/upscale-image', account, image(), key);
    expect([elsewhere.status, elsewhere.body.error?.code]).toEqual([422, 'IDEMPOTENCY_KEY_REUSED']);
    const after = await charges(account);
    expect([after.debits, after.tasks]).toEqual([[id], [id]]);
    expect(after.credits).toBe(100 - (first.body.data?.['creditsUsed'] as number));
  }, 120_000);

  it("keeps keys per account: another account's same key is a request of its own", async () => {
    const [a, b] = [await newAccount(100), await newAccount(100)];
    const key = 'shared-looking-key-1';
    const first = await call(e2e.gateway.url, '/api/v1/generate', a, music, key);
    const theirs = await call(second.url, '/api/v1/generate', b, music, key);
    expect([first.status, theirs.status, theirs.replayed]).toEqual([200, 200, false]);
    expect(theirs.body.data?.id).not.toBe(first.body.data?.id);
    expect((await charges(b)).debits).toEqual([theirs.body.data?.id]);
    expect((await charges(a)).debits).toEqual([first.body.data?.id]);
  }, 60_000);

  it('answers 409 IDEMPOTENCY_KEY_IN_USE while the first request is being handled, then the first answer', async () => {
    const account = await newAccount(100);
    const key = crypto.randomUUID();
    const body = { image_url: `${e2e.mediaUrl}/slow.png`, upscale_factor: '2' };
    const firstCall = call(e2e.gateway.url, '/api/v1/tools/upscale-image', account, body, key);
    await new Promise((resolve) => setTimeout(resolve, SLOW_MS / 3));
    const meanwhile = await call(second.url, '/api/v1/tools/upscale-image', account, body, key);
    expect([meanwhile.status, meanwhile.body.error?.code, meanwhile.retryAfter]).toEqual([
      409,
      'IDEMPOTENCY_KEY_IN_USE',
      '1',
    ]);
    const first = await firstCall;
    expect([first.status, first.replayed]).toEqual([200, false]);
    const later = await call(second.url, '/api/v1/tools/upscale-image', account, body, key);
    expect([later.status, later.replayed, later.body.data?.id]).toEqual([200, true, first.body.data?.id]);
    expect((await charges(account)).debits).toEqual([first.body.data?.id]);
  }, 60_000);

  it('refuses a malformed key (400) and gives back the key of a request that failed, so it can be fixed and sent again', async () => {
    const account = await newAccount(200);
    for (const bad of ['', 'x'.repeat(256), 'with space', 'caf\u00e9']) {
      const res = await fetch(`${e2e.gateway.url}/api/v1/generate`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${account.key}`,
          'content-type': 'application/json',
          'idempotency-key': encodeURI(bad) === bad ? bad : Buffer.from(bad, 'utf8').toString('latin1'),
        },
        body: JSON.stringify(music),
      });
      const reply = (await res.json()) as Answer['body'];
      expect([bad.slice(0, 12), res.status, reply.error?.code]).toEqual([
        bad.slice(0, 12),
        400,
        'INVALID_IDEMPOTENCY_KEY',
      ]);
    }
    // The IETF draft's form, a structured-field string, is the same key as the bare one.
    const quoted = await call(e2e.gateway.url, '/api/v1/generate', account, music, '"sf-string-key"');
    const bare = await call(second.url, '/api/v1/generate', account, music, 'sf-string-key');
    expect([quoted.status, bare.status, bare.replayed, bare.body.data?.id]).toEqual([
      200,
      200,
      true,
      quoted.body.data?.id,
    ]);
    // Refused before anything was charged (400): the key is free again for the corrected request.
    const key = crypto.randomUUID();
    const wrong = await call(
      e2e.gateway.url,
      '/api/v1/tools/upscale-image',
      account,
      { image_url: 'ftp://example.com/a.png' },
      key,
    );
    expect([wrong.status, wrong.body.error?.code]).toEqual([400, 'INVALID_URL']);
    const fixed = await call(second.url, '/api/v1/tools/upscale-image', account, image(), key);
    expect([fixed.status, fixed.replayed]).toEqual([200, false]);
    expect((await charges(account)).debits).toEqual([quoted.body.data?.id, fixed.body.data?.id]);
  }, 60_000);

  it('replays a cancel: the second cancel with the key is the first answer, not 409 TASK_NOT_PENDING', async () => {
    const account = await newAccount(100);
    // Music jobs are priced but never run here: the task stays pending until cancelled.
    const submitted = await call(e2e.gateway.url, '/api/v1/generate', account, music, crypto.randomUUID());
    const id = submitted.body.data?.id ?? '';
    const key = crypto.randomUUID();
    const cancelled = await call(e2e.gateway.url, `/api/v1/tasks/${id}/cancel`, account, undefined, key);
    expect([cancelled.status, cancelled.body.data?.status]).toEqual([200, 'failed']);
    const again = await call(second.url, `/api/v1/tasks/${id}/cancel`, account, undefined, key);
    expect([again.status, again.replayed, again.body]).toEqual([200, true, cancelled.body]);
    const unkeyed = await call(second.url, `/api/v1/tasks/${id}/cancel`, account, undefined);
    expect([unkeyed.status, unkeyed.body.error?.code]).toEqual([409, 'TASK_NOT_PENDING']);
    expect((await charges(account)).credits).toBe(100);
  }, 60_000);

  it('lets the Python example retry a submission whose answer it gave up on: one task, charged once', async () => {
    const account = await newAccount(100);
    const body = JSON.stringify({ image_url: `${e2e.mediaUrl}/slow.png`, upscale_factor: '2' });
    const script = path.join(PACKAGE_ROOT, 'examples', 'python', 'submit_with_retry.py');
    const run = async (...extra: string[]) => {
      const { stdout } = await promisify(execFile)(
        'python3',
        [script, second.url, account.key, '/api/v1/tools/upscale-image', body, ...extra],
        { timeout: 60_000 },
      );
      return JSON.parse(stdout) as {
        status: number;
        replayed: boolean;
        key: string;
        attempts: { error?: string; status?: number }[];
        body: Answer['body'];
      };
    };
    // The first attempt gives up after 1 s, while the quote (3 s) runs: the gateway abandons the quote
    // of a client that hung up and gives the key back (nothing was charged); a retry makes the task.
    const out = await run('--first-timeout', '1');
    expect(out.status).toBe(200);
    expect(out.attempts[0]?.error).toBeDefined();
    // The script run again with its key (a client that lost even that answer): the same task, replayed.
    const again = await run('--key', out.key);
    expect([again.status, again.replayed, again.body.data?.id]).toEqual([200, true, out.body.data?.id]);
    expect((await charges(account)).debits).toEqual([out.body.data?.id]);
  }, 90_000);
});
