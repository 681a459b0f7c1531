/**
 * `media-worker gateway` tried as an attacker, end to end as shipped (dist/): a real nats-server, a
 * real `serve` answering quotes, real HTTP. Slow URLs flooded by one account while another submits;
 * every framework error in the API's envelope; 429s under a storm of requests and of bad keys;
 * upload quotas, expiring links, revoked keys; the OpenAPI document checked by a standard validator
 * and a client generated from it (openapi-typescript + openapi-fetch) used against the gateway.
 * Timeouts and windows are settings, set small here so that the file runs in seconds. NATS is the
 * shipped per-role configuration (test/helpers/role-nats.ts): `provision` and `accounts` as
 * operator, `serve` as worker host `host1`, `gateway` as gateway, each with its own reply inbox.
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Validator } from '@seriousme/openapi-schema-validator';
import createClient from 'openapi-fetch';
import openapiTS, { astToString } from 'openapi-typescript';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUNDLED_PHOTOS_DIR } from '../../../src/paths.js';
import { sleep, waitFor } from '../../worker/helpers/jetstream.js';
import { startRoleNats, type RoleNats } from '../../helpers/role-nats.js';
import { linkSigner } from '../../../src/gateway/links.js';
import type { paths } from '../../gateway/openapi/api.js';
import { startMediaServer, type MediaServer } from './media-server.js';
import { accountsCommand, startServeAndGateway, workerTestEnv, type RunningProcess } from './processes.js';

const RATE_WINDOW_MS = 3000;
const PER_ACCOUNT = 25;
const PER_ADDRESS = 150;
const UPLOAD_LIFETIME_MS = 5000;
const LINK_SECRET = 'attack-test-secret-of-at-least-32-chars';
const signer = linkSigner(LINK_SECRET);

let roles: RoleNats;
let media: MediaServer;
let mediaUrl: string;
let dir: string;
let serve: RunningProcess;
let gateway: RunningProcess & { url: string };
let env: NodeJS.ProcessEnv;
/** Connections the media server has open on /slow/*, and how many it ever saw. */
let slow: MediaServer['slow'];

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'media-gateway-attack-'));
  const png = await sharp(path.join(BUNDLED_PHOTOS_DIR, 'chelsea.png')).resize(40, 27).png().toBuffer();
  media = await startMediaServer({ '/small.png': png }, { slowBody: png });
  mediaUrl = media.url;
  slow = media.slow;

  roles = await startRoleNats(dir);
  const resultsDir = path.join(dir, 'results');
  await mkdir(path.join(resultsDir, 'image'), { recursive: true });
  await writeFile(path.join(resultsDir, 'image', 'file.png'), png);
  env = {
    ...(await workerTestEnv(dir)),
    WORKER_QUOTE_CONCURRENCY: '2',
    WORKER_QUOTE_TIMEOUT_MS: '60000',
    GATEWAY_QUOTE_TIMEOUT_MS: '60000',
    GATEWAY_QUOTES_PER_ACCOUNT: '1',
    GATEWAY_BODY_LIMIT_BYTES: '10000',
    GATEWAY_SERVE_RESULTS: 'true',
    GATEWAY_RATE_LIMIT_WINDOW_MS: String(RATE_WINDOW_MS),
    GATEWAY_RATE_LIMIT_PER_ACCOUNT: String(PER_ACCOUNT),
    GATEWAY_RATE_LIMIT_PER_ADDRESS: String(PER_ADDRESS),
    GATEWAY_LINK_SECRET: LINK_SECRET,
    GATEWAY_UPLOADS: 'true',
    GATEWAY_UPLOAD_MAX_BYTES: '300000',
    GATEWAY_UPLOAD_QUOTA_BYTES: '2000',
    GATEWAY_UPLOAD_QUOTA_FILES: '3',
    GATEWAY_UPLOAD_LIFETIME_MS: String(UPLOAD_LIFETIME_MS),
    GATEWAY_UPLOAD_SWEEP_INTERVAL_MS: '500',
  };
  ({ env, serve, gateway } = await startServeAndGateway(env, undefined, roles.serviceEnvs()));
}, 180_000);

afterAll(async () => {
  await gateway?.kill('SIGKILL');
  await serve?.kill('SIGKILL');
  await roles?.close();
  media?.close();
  await rm(dir, { recursive: true, force: true });
});

async function newAccount(credits: number): Promise<string> {
  const out = (await accountsCommand(['create', '--name', 'attack', '--credits', String(credits)], env)) as {
    apiKey: string;
  };
  return out.apiKey;
}

interface Reply {
  status: number;
  headers: Headers;
  body: { success: boolean; data?: Record<string, unknown>; error?: { code: string; message: string } };
}

async function call(
  method: string,
  route: string,
  key: string | null,
  init: { body?: string; headers?: Record<string, string>; signal?: AbortSignal } = {},
): Promise<Reply> {
  const res = await fetch(`${gateway.url}${route}`, {
    method,
    headers: {
      ...(key === null ? {} : { authorization: `Bearer ${key}` }),
      ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
      ...init.headers,
    },
    ...(init.body === undefined ? {} : { body: init.body }),
    ...(init.signal === undefined ? {} : { signal: init.signal }),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Reply['body'] };
}

const upscale = (key: string, url: string, signal?: AbortSignal) =>
  call('POST', '/api/v1/tools/upscale-image', key, {
    body: JSON.stringify({ image_url: url }),
    ...(signal ? { signal } : {}),
  });

/** A path under /results/ as the gateway would link it, expiring at `expiresAtMs`. */
function signedPath(p: string, expiresAtMs: number): string {
  const url = new URL(signer.sign(`${gateway.url}${p}`, expiresAtMs));
  return `${url.pathname}${url.search}`;
}

/** Waits out the rate-limit window so that the next test starts with full budgets. */
const freshWindow = () => sleep(RATE_WINDOW_MS + 200);

describe('fair quoting', () => {
  it('refuses an account that cannot pay the minimum with 402 before anything is fetched', async () => {
    const broke = await newAccount(0);
    const replies = await Promise.all([1, 2, 3, 4].map((i) => upscale(broke, `${mediaUrl}/slow/${i}.png`)));
    expect(replies.map((r) => [r.status, r.body.error?.code])).toEqual(Array(4).fill([402, 'INSUFFICIENT_CREDITS']));
    expect(replies[0]!.body.error?.message).toMatch(/at least 20 credits .* but received 0/);
    expect(slow.seen).toBe(0);
  });

  it("keeps another account's submission answered in normal time while one floods slow URLs, and stops fetching for a client that hung up", async () => {
    const flooder = await newAccount(10_000);
    const other = await newAccount(100);
    const hangUp = new AbortController();
    const held = upscale(flooder, `${mediaUrl}/slow/held.png`, hangUp.signal).catch((err: unknown) => err);
    await waitFor('the first slow quote to fetch', () => slow.open === 1 || undefined);
    // Beyond the account's one quote in flight: refused at once, nothing fetched.
    const refused = await Promise.all([1, 2, 3].map((i) => upscale(flooder, `${mediaUrl}/slow/more-${i}.png`)));
    for (const r of refused) {
      expect([r.status, r.body.error?.code, r.headers.get('retry-after')]).toEqual([429, 'TOO_MANY_QUOTES', '1']);
    }
    expect(slow.seen).toBe(1);
    const started = Date.now();
    const ok = await upscale(other, `${mediaUrl}/small.png`);
    expect([ok.status, ok.body.data?.['creditsUsed']]).toEqual([200, 20]);
    expect(Date.now() - started).toBeLessThan(5000);
    // The flooder's client hangs up: the worker is told, aborts the download, the connection closes.
    hangUp.abort();
    await held;
    await waitFor('the abandoned quote to stop fetching', () => slow.open === 0 || undefined, 10_000);
    expect(slow.seen).toBe(1);
  }, 30_000);
});

describe('kinds nobody serves', () => {
  it('refuses music and video submissions with 503 MODEL_UNAVAILABLE and no charge when the only worker serves images', async () => {
    const key = await newAccount(500);
    const music = await call('POST', '/api/v1/generate', key, {
      body: JSON.stringify({ model: 'vendor-v5-generate-music', input: { prompt: 'a calm piano piece' } }),
    });
    const video = await call('POST', '/api/v1/tools/upscale-video', key, {
      body: JSON.stringify({ video_url: `${mediaUrl}/clip.mp4` }),
    });
    for (const r of [music, video]) {
      expect([r.status, r.body.error?.code, r.headers.get('retry-after')]).toEqual([
        503,
        'MODEL_UNAVAILABLE',
        expect.any(String),
      ]);
    }
    const balance = await call('GET', '/api/v1/balance', key);
    expect(balance.body.data?.['credits']).toBe(500);
    const history = await call('GET', '/api/v1/tasks', key);
    expect(JSON.stringify(history.body.data)).not.toContain('"id":"t_');
    await freshWindow();
  }, 30_000);
});

describe("HTTP errors in the API's envelope", () => {
  it('answers framework errors (414, 405 with Allow, 404, 415, 413, 416, bad JSON) with a fitting code and message', async () => {
    await freshWindow();
    const key = await newAccount(100);
    const tooLong = await call('GET', `/api/v1/tasks/t_${'a'.repeat(99)}`, key);
    expect([tooLong.status, tooLong.body.success, tooLong.body.error?.code]).toEqual([414, false, 'URI_TOO_LONG']);
    const wrongMethod = await call('DELETE', '/api/v1/tasks/t_abc', key);
    expect([wrongMethod.status, wrongMethod.body.error?.code, wrongMethod.headers.get('allow')]).toEqual([
      405,
      'METHOD_NOT_ALLOWED',
      'GET, HEAD',
    ]);
    const wrongMethod2 = await call('GET', '/api/v1/generate', key);
    expect([wrongMethod2.status, wrongMethod2.headers.get('allow')]).toEqual([405, 'POST']);
    const nowhere = await call('GET', '/api/v1/nowhere', key);
    expect([nowhere.status, nowhere.body.error?.code]).toEqual([404, 'NOT_FOUND']);
    const png = await call('POST', '/api/v1/generate', key, { body: '{}', headers: { 'content-type': 'image/png' } });
    expect([png.status, png.body.error?.code]).toEqual([415, 'UNSUPPORTED_MEDIA_TYPE']);
    const large = await call('POST', '/api/v1/generate', key, {
      body: JSON.stringify({ model: 'vendor-v5-generate-music', input: { prompt: 'x'.repeat(20_000) } }),
    });
    expect([large.status, large.body.error?.code]).toEqual([413, 'PAYLOAD_TOO_LARGE']);
    const proto = await call('POST', '/api/v1/generate', key, {
      body: '{"model":"vendor-image-upscale","input":{"__proto__":{"x":1}}}',
    });
    expect([proto.status, proto.body.error?.code, proto.body.error?.message]).toEqual([
      400,
      'INVALID_JOB',
      'Expected no key named "__proto__" in the body but received one',
    ]);
    const broken = await call('POST', '/api/v1/generate', key, { body: '{"model":' });
    expect([broken.status, broken.body.error?.message]).toEqual([
      400,
      expect.stringMatching(/^Expected the body to be valid JSON but received invalid JSON \(.+\)$/),
    ]);
    const tags = await call('POST', '/api/v1/generate', key, {
      body: JSON.stringify({
        model: 'vendor-v5-generate-music',
        input: { custom_mode: true, title: 't', style: 's', instrumental: true, negative_tags: 'x'.repeat(1001) },
      }),
    });
    expect([tags.status, tags.body.error?.code, tags.body.error?.message]).toEqual([
      400,
      'INVALID_JOB',
      expect.stringContaining('1000'),
    ]);
    const range = await call('GET', signedPath('/results/image/file.png', Date.now() + 60_000), null, {
      headers: { range: 'bytes=999999-' },
    });
    expect([range.status, range.body.error?.code]).toEqual([416, 'RANGE_NOT_SATISFIABLE']);
    const dot = await call('GET', signedPath('/results/image/.hidden', Date.now() + 60_000), null);
    expect([dot.status, dot.body.error?.code]).toEqual([404, 'NOT_FOUND']);
    expect(gateway.output()).not.toMatch(/"level":50/);
  });

  it('answers 401 with WWW-Authenticate', async () => {
    const none = await call('GET', '/api/v1/balance', null);
    expect([none.status, none.headers.get('www-authenticate')]).toEqual([401, 'Bearer realm="media-worker"']);
    const unknown = await call('GET', '/api/v1/balance', 'mwk_unknown');
    expect([unknown.status, unknown.headers.get('www-authenticate')]).toEqual([
      401,
      'Bearer realm="media-worker", error="invalid_token"',
    ]);
  });
});

describe('rate limits', () => {
  it('answers 429 RATE_LIMITED with Retry-After to a storm from one account, while another account is served', async () => {
    await freshWindow();
    const stormer = await newAccount(0);
    const calm = await newAccount(0);
    const replies = await Promise.all(
      Array.from({ length: PER_ACCOUNT + 15 }, () => call('GET', '/api/v1/balance', stormer)),
    );
    const statuses = replies.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(PER_ACCOUNT);
    const limited = replies.find((r) => r.status === 429)!;
    expect(limited.body.error?.code).toBe('RATE_LIMITED');
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await call('GET', '/api/v1/balance', calm)).status).toBe(200);
    await sleep(Number(limited.headers.get('retry-after')) * 1000 + 100);
    expect((await call('GET', '/api/v1/balance', stormer)).status).toBe(200);
  });

  it('limits a client address before looking up its key: a storm of bad keys gets 429', async () => {
    await freshWindow();
    const replies = await Promise.all(
      Array.from({ length: PER_ADDRESS + 20 }, () => call('GET', '/api/v1/balance', 'mwk_guess')),
    );
    const statuses = replies.map((r) => r.status);
    expect(statuses.filter((s) => s === 401)).toHaveLength(PER_ADDRESS);
    expect(statuses.filter((s) => s === 429)).toHaveLength(20);
    // Health probes are not counted.
    expect((await fetch(`${gateway.url}/healthz`)).status).toBe(200);
  });
});

async function upload(key: string, body: Buffer, headers: Record<string, string> = {}): Promise<Reply> {
  const res = await fetch(`${gateway.url}/api/v1/uploads`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'image/png', ...headers },
    body,
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Reply['body'] };
}

describe('uploads', () => {
  it("keeps an account's uploads in its own folder under a byte and file quota, with a signed link the worker can fetch, and sweeps them when they expire", async () => {
    await freshWindow();
    const key = await newAccount(100);
    const tiny = await sharp(path.join(BUNDLED_PHOTOS_DIR, 'chelsea.png')).resize(8, 6).png().toBuffer();
    expect(tiny.length).toBeLessThan(600);
    const first = await upload(key, tiny);
    expect(first.status).toBe(201);
    const url = (first.body.data as { url: string }).url;
    expect(new URL(url).pathname).toMatch(/^\/results\/uploads\/acct_[a-z0-9]{16}\/u_[a-z0-9]+\.png$/);
    const expires = Number(new URL(url).searchParams.get('expires'));
    expect(Math.abs(expires * 1000 - (Date.now() + UPLOAD_LIFETIME_MS))).toBeLessThan(3000);
    const quoted = await upscale(key, url);
    expect([quoted.status, quoted.body.data?.['input']]).toEqual([
      200,
      expect.objectContaining({ detected_dimensions: '8×6' }),
    ]);
    // Files: the quota is 3.
    expect((await upload(key, tiny)).status).toBe(201);
    expect((await upload(key, tiny)).status).toBe(201);
    const fourth = await upload(key, tiny);
    expect([fourth.status, fourth.body.error?.code]).toEqual([403, 'UPLOAD_QUOTA_EXCEEDED']);
    // Another account has its own quota; bytes: 2000 in all.
    const other = await newAccount(0);
    const tooMuch = await upload(other, Buffer.concat([tiny, Buffer.alloc(2500)]));
    expect([tooMuch.status, tooMuch.body.error?.code]).toEqual([403, 'UPLOAD_QUOTA_EXCEEDED']);
    // Swept after their lifetime: the link is dead and the quota free again.
    await waitFor(
      'the uploads to be swept',
      async () => ((await upload(key, tiny)).status === 201 ? true : undefined),
      UPLOAD_LIFETIME_MS + 5000,
      500,
    );
    const gone = await call('GET', `${new URL(url).pathname}${new URL(url).search}`, null);
    expect(gone.status).toBeGreaterThanOrEqual(404);
  }, 30_000);

  it('refuses by Content-Length before reading the body, and refuses content that only starts like an image', async () => {
    const key = await newAccount(0);
    // Headers declaring 150 MB, then nothing: the answer must come without the body.
    const { request } = await import('node:http');
    const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(
        `${gateway.url}/api/v1/uploads`,
        {
          method: 'POST',
          headers: {
            authorization: `Bearer ${key}`,
            'content-type': 'image/png',
            'content-length': String(150 * 1024 * 1024),
          },
        },
        (res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += c.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
        },
      );
      req.on('error', reject);
      req.write(Buffer.alloc(1024));
    });
    expect(answer.status).toBe(413);
    expect(JSON.parse(answer.body)).toMatchObject({
      error: { code: 'PAYLOAD_TOO_LARGE', message: expect.stringContaining('Content-Length of 157286400') },
    });
    // A PNG signature followed by zeros: sniffed as PNG, refused by decoding.
    const fake = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.alloc(1000)]);
    const refused = await upload(key, fake);
    expect([refused.status, refused.body.error?.code, refused.body.error?.message]).toEqual([
      415,
      'UNSUPPORTED_MEDIA_TYPE',
      expect.stringContaining('does not decode'),
    ]);
  });
});

describe('links and keys', () => {
  it('serves a file only through an unexpired signed link, with nosniff, a download name and private caching', async () => {
    await freshWindow();
    const res = await fetch(`${gateway.url}${signedPath('/results/image/file.png', Date.now() + 3_600_000)}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('content-disposition')).toBe('attachment; filename="file.png"');
    expect(res.headers.get('cache-control')).toMatch(/^private, max-age=(3600|3599)$/);
    await res.arrayBuffer();
    const unsigned = await call('GET', '/results/image/file.png', null);
    expect([unsigned.status, unsigned.body.error?.code]).toEqual([404, 'NOT_FOUND']);
    const altered = signedPath('/results/image/file.png', Date.now() + 3_600_000).replace(
      /expires=(\d+)/,
      (_m, e: string) => `expires=${Number(e) + 1}`,
    );
    expect((await call('GET', altered, null)).status).toBe(404);
    const expired = await call('GET', signedPath('/results/image/file.png', Date.now() - 1000), null);
    expect([expired.status, expired.body.error?.code]).toEqual([410, 'LINK_EXPIRED']);
  });

  it("lists an account's keys and revokes one: it gets 401 within a second, the other key keeps working", async () => {
    const created = (await accountsCommand(['create', '--name', 'keys', '--credits', '0'], env)) as {
      account: { id: string };
      apiKey: string;
    };
    const second = (await accountsCommand(['add-key', created.account.id], env)) as { apiKey: string };
    const listed = (await accountsCommand(['keys', created.account.id], env)) as {
      keys: { keyId: string; revokedAt?: string }[];
    };
    expect(listed.keys).toHaveLength(2);
    expect((await call('GET', '/api/v1/balance', second.apiKey)).status).toBe(200);
    const { createHash } = await import('node:crypto');
    const secondId = createHash('sha256').update(second.apiKey).digest('hex').slice(0, 16);
    expect(listed.keys.map((k) => k.keyId)).toContain(secondId);
    expect(await accountsCommand(['revoke-key', created.account.id, secondId], env)).toEqual({
      accountId: created.account.id,
      keyId: secondId,
      revoked: true,
    });
    // The gateway holds the key in memory; its watch of the key records brings the revocation (docs/operations.md, "Polling from memory").
    const revokedAt = Date.now();
    const revoked = await waitFor(
      'the revoked key to be refused',
      async () => {
        const reply = await call('GET', '/api/v1/balance', second.apiKey);
        return reply.status === 401 ? reply : undefined;
      },
      5_000,
      20,
    );
    expect(Date.now() - revokedAt).toBeLessThan(1000);
    expect([revoked.status, revoked.headers.get('www-authenticate')]).toEqual([
      401,
      'Bearer realm="media-worker", error="invalid_token"',
    ]);
    expect((await call('GET', '/api/v1/balance', created.apiKey)).status).toBe(200);
    const after = (await accountsCommand(['keys', created.account.id], env)) as {
      keys: { keyId: string; revokedAt?: string }[];
    };
    expect(after.keys.find((k) => k.keyId === secondId)?.revokedAt).toEqual(expect.any(String));
  });

  it("keeps query strings (a key sent as ?api_key=, a link's sig) out of the logs", async () => {
    await call('GET', '/api/v1/balance?api_key=mwk_leaked_in_query_123', null);
    const link = signedPath('/results/image/file.png', Date.now() + 60_000);
    await fetch(`${gateway.url}${link}`).then((r) => r.arrayBuffer());
    // Both requests' log lines come through the gateway process's pipe, which may trail the answers:
    // waited for, so that the absences below are checked on lines that are there.
    await waitFor(
      'both requests in the log',
      () =>
        gateway.output().includes('/api/v1/balance?[redacted]') && gateway.output().includes('/results/image/file.png'),
      10_000,
    );
    expect(gateway.output()).not.toContain('mwk_leaked_in_query_123');
    expect(gateway.output()).not.toContain(new URL(link, gateway.url).searchParams.get('sig')!);
    expect(gateway.output()).toContain('/api/v1/balance?[redacted]');
  });
});

const TYPES_FILE = path.join(import.meta.dirname, 'openapi', 'api.d.ts');
const TYPES_HEADER =
  '// Generated by openapi-typescript from GET /api/v1/openapi.json (test/scenarios/gateway/attack.e2e.test.ts checks it; UPDATE_OPENAPI_TYPES=1 rewrites it). Do not edit.\n';

describe('the OpenAPI document', () => {
  it('is valid OpenAPI 3.0, and the committed client types are generated from it', async () => {
    await freshWindow();
    const doc = (await (await fetch(`${gateway.url}/api/v1/openapi.json`)).json()) as Record<string, unknown>;
    const verdict = await new Validator().validate(doc);
    expect(verdict.errors ?? []).toEqual([]);
    expect(verdict.valid).toBe(true);
    const generated = TYPES_HEADER + astToString(await openapiTS(doc as never));
    if (process.env['UPDATE_OPENAPI_TYPES'] === '1') await writeFile(TYPES_FILE, generated);
    expect(generated).toBe(await readFile(TYPES_FILE, 'utf8'));
  });

  it('drives a generated client (openapi-fetch) against the running gateway: submit, follow the link to the task, typed errors', async () => {
    const key = await newAccount(100);
    const client = createClient<paths>({ baseUrl: gateway.url, headers: { authorization: `Bearer ${key}` } });
    // The document declares Idempotency-Key, so the generated client sends one; the retry is the first answer.
    const once = { header: { 'idempotency-key': crypto.randomUUID() } };
    const submitted = await client.POST('/api/v1/tools/upscale-image', {
      params: once,
      body: { image_url: `${mediaUrl}/small.png`, upscale_factor: '2' },
    });
    expect(submitted.response.status).toBe(200);
    const accepted = submitted.data!.data;
    const retried = await client.POST('/api/v1/tools/upscale-image', {
      params: once,
      body: { image_url: `${mediaUrl}/small.png`, upscale_factor: '2' },
    });
    expect([
      retried.response.status,
      retried.response.headers.get('idempotent-replayed'),
      retried.data?.data.id,
    ]).toEqual([200, 'true', accepted.id]);
    expect(accepted.input).toEqual({
      image_url: `${mediaUrl}/small.png`,
      upscale_factor: '2',
      detected_dimensions: '40×27',
      output_tier: '24mp',
    });
    expect([accepted.creditsUsed, accepted.creditsRemaining]).toEqual([20, 80]);
    // The document's link: GET /api/v1/tasks/{id} with the returned data.id.
    const polled = await client.GET('/api/v1/tasks/{id}', { params: { path: { id: accepted.id } } });
    expect(polled.data?.data).toMatchObject({ id: accepted.id, model: 'vendor-image-upscale' });
    const music = await client.POST('/api/v1/generate', {
      body: {
        model: 'vendor-v5-generate-music',
        input: { custom_mode: true, title: 't', style: 's', instrumental: true, negative_tags: 'x'.repeat(1001) },
      },
    });
    expect([music.response.status, music.error?.error.code]).toEqual([400, 'INVALID_JOB']);
    // Lyrics unless instrumental: the document's types refuse this body, and so does the gateway.
    const noLyrics = await client.POST('/api/v1/generate', {
      // @ts-expect-error custom mode, not instrumental, without lyrics
      body: { model: 'vendor-v5-generate-music', input: { custom_mode: true, title: 't', style: 's' } },
    });
    expect([noLyrics.response.status, noLyrics.error?.error.code]).toEqual([400, 'MISSING_LYRICS']);
    const broke = createClient<paths>({
      baseUrl: gateway.url,
      headers: { authorization: `Bearer ${await newAccount(0)}` },
    });
    const poor = await broke.POST('/api/v1/tools/upscale-video', {
      body: { video_url: `${mediaUrl}/clip.mp4`, upscale_factor: '4' },
    });
    expect([poor.response.status, poor.error?.error.code]).toEqual([402, 'INSUFFICIENT_CREDITS']);
    const balance = await client.GET('/api/v1/balance');
    expect(balance.data?.data.credits).toBe(80);
    const history = await client.GET('/api/v1/tasks', { params: { query: { limit: 1 } } });
    expect(history.data?.data.tasks.map((t) => t.id)).toEqual([accepted.id]);
  });

  it("drives the peers' endpoints with the generated client: estimate charges nothing, usage reconciles, cancel answers typed errors", async () => {
    await freshWindow();
    const key = await newAccount(100);
    const client = createClient<paths>({ baseUrl: gateway.url, headers: { authorization: `Bearer ${key}` } });
    const estimate = await client.POST('/api/v1/estimate', {
      body: { image_url: `${mediaUrl}/small.png`, upscale_factor: '2' },
    });
    expect(estimate.data?.data).toMatchObject({
      model: 'vendor-image-upscale',
      creditsUsed: 20,
      balance: 100,
      sufficient: true,
      input: { detected_dimensions: '40×27' },
    });
    expect((await client.GET('/api/v1/balance')).data?.data.credits).toBe(100);
    const refused = await client.POST('/api/v1/estimate', { body: { image_url: 'file:///etc/passwd' } });
    expect([refused.response.status, refused.error?.error.code]).toEqual([400, 'INVALID_URL']);

    const submitted = await client.POST('/api/v1/tools/upscale-image', {
      body: { image_url: `${mediaUrl}/small.png`, upscale_factor: '2' },
    });
    const id = submitted.data!.data.id;
    const usage = await client.GET('/api/v1/usage', { params: { query: { limit: 10 } } });
    expect(usage.data?.data.movements.map((m) => [m.type, m.credits, m.taskId])).toEqual([
      ['open', 100, undefined],
      ['debit', -20, id],
    ]);
    expect(usage.data?.data.nextCursor).toBeNull();

    const unknown = await client.POST('/api/v1/tasks/{id}/cancel', { params: { path: { id: 't_not_a_task' } } });
    expect([unknown.response.status, unknown.error?.error.code]).toEqual([404, 'TASK_NOT_FOUND']);
    const stranger = createClient<paths>({
      baseUrl: gateway.url,
      headers: { authorization: `Bearer ${await newAccount(10)}` },
    });
    const foreign = await stranger.POST('/api/v1/tasks/{id}/cancel', { params: { path: { id } } });
    expect([foreign.response.status, foreign.error?.error.code]).toEqual([404, 'TASK_NOT_FOUND']);
    // Once the image has run, a cancel is 409 and the charge stays.
    let status: string | undefined = 'pending';
    for (let i = 0; i < 300 && status === 'pending'; i += 1) {
      status = (await client.GET('/api/v1/tasks/{id}', { params: { path: { id } } })).data?.data.status;
      if (status === 'pending') await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(status).toBe('completed');
    const late = await client.POST('/api/v1/tasks/{id}/cancel', { params: { path: { id } } });
    expect([late.response.status, late.error?.error.code]).toEqual([409, 'TASK_NOT_PENDING']);
    expect((await client.GET('/api/v1/balance')).data?.data.credits).toBe(80);
  }, 60_000);
});
