/**
 * Polls answered from memory (src/gateway/view) stay correct across gateways: two `media-worker
 * gateway` processes and one `serve` on one nats-server under the shipped per-role users (so the
 * watches' consumers need no permission deploy/nats lacks). A completion settled by one gateway is
 * served by the other within 1 s; a key revoked with `accounts revoke-key` is refused by both
 * within 1 s; a task submitted on one is found at once on the other; a balance debited on one is
 * shown debited by that one at once (read-your-writes) and by the other within 1 s.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashApiKey } from '../../../src/gateway/ids.js';
import { BUNDLED_PHOTOS_DIR } from '../../../src/paths.js';
import { startRoleNats, type RoleNats } from '../../helpers/role-nats.js';
import { waitFor } from '../../worker/helpers/jetstream.js';
import {
  accountsCommand,
  serviceTestEnv,
  startGatewayProcess,
  startServeAndGateway,
  type RunningProcess,
} from './processes.js';

/** The bound the view promises for a change made elsewhere (docs/operations.md, "Polling from memory"). */
const CROSS_GATEWAY_MS = 1000;

let roles: RoleNats;
let dir: string;
let media: Server;
let imageUrl: string;
let serve: RunningProcess;
let gatewayA: RunningProcess & { url: string };
let gatewayB: RunningProcess & { url: string };
let operatorEnv: NodeJS.ProcessEnv;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'media-poll-view-'));
  const png = await sharp(path.join(BUNDLED_PHOTOS_DIR, 'chelsea.png')).resize(40, 27).png().toBuffer();
  media = createServer((_req, res) => res.writeHead(200, { 'content-type': 'image/png' }).end(png));
  await new Promise<void>((resolve) => media.listen(0, '127.0.0.1', resolve));
  imageUrl = `http://127.0.0.1:${(media.address() as AddressInfo).port}/small.png`;
  roles = await startRoleNats(dir);
  const env = await serviceTestEnv(dir);
  let gatewayEnv: NodeJS.ProcessEnv;
  ({
    env: operatorEnv,
    gatewayEnv,
    serve,
    gateway: gatewayA,
  } = await startServeAndGateway(env, undefined, roles.serviceEnvs()));
  gatewayB = await startGatewayProcess({ ...gatewayEnv, GATEWAY_PORT: '0' });
}, 180_000);

afterAll(async () => {
  await gatewayA?.kill('SIGKILL');
  await gatewayB?.kill('SIGKILL');
  await serve?.kill('SIGKILL');
  await roles?.close();
  media?.close();
  await rm(dir, { recursive: true, force: true });
});

interface Reply {
  status: number;
  data: Record<string, unknown>;
}

async function api(base: string, method: string, route: string, key: string, body?: unknown): Promise<Reply> {
  const res = await fetch(`${base}${route}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const json = (await res.json()) as { data?: Record<string, unknown>; error?: Record<string, unknown> };
  return { status: res.status, data: json.data ?? json.error ?? {} };
}

async function newAccount(credits: number): Promise<{ id: string; key: string }> {
  const out = (await accountsCommand(['create', '--name', 'poll-view', '--credits', String(credits)], operatorEnv)) as {
    account: { id: string };
    apiKey: string;
  };
  return { id: out.account.id, key: out.apiKey };
}

/** Polls both gateways in turn until `done` holds on both; when it first held on each. */
async function firstSeen(
  route: string,
  key: string,
  done: (reply: Reply) => boolean,
  timeoutMs: number,
): Promise<{ a: number; b: number }> {
  const seen: { a?: number; b?: number } = {};
  await waitFor(
    `${route} on both gateways`,
    async () => {
      const [a, b] = await Promise.all([api(gatewayA.url, 'GET', route, key), api(gatewayB.url, 'GET', route, key)]);
      const now = Date.now();
      if (seen.a === undefined && done(a)) seen.a = now;
      if (seen.b === undefined && done(b)) seen.b = now;
      return seen.a !== undefined && seen.b !== undefined;
    },
    timeoutMs,
    20,
  );
  return { a: seen.a!, b: seen.b! };
}

/** A counter of the gateway's poll view (media_gateway_view_reads_total). */
async function viewReads(base: string, family: string, outcome: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const line = new RegExp(
    `^media_gateway_view_reads_total\\{family="${family}",outcome="${outcome}"\\} (\\d+)$`,
    'm',
  ).exec(text);
  return Number(line?.[1] ?? 0);
}

describe('two gateways answering polls from memory', () => {
  it('finds a task submitted on A at once on B, and serves its completion on both within 1 s of each other', async () => {
    const account = await newAccount(100);
    const submitted = await api(gatewayA.url, 'POST', '/api/v1/tools/upscale-image', account.key, {
      image_url: imageUrl,
      upscale_factor: '2',
    });
    expect(submitted.status).toBe(200);
    const id = submitted.data['id'] as string;
    // B has never seen the task: it must read the store, not answer 404.
    const onB = await api(gatewayB.url, 'GET', `/api/v1/tasks/${id}`, account.key);
    expect(onB.status).toBe(200);
    expect(onB.data['id']).toBe(id);
    // Both now hold it as pending; whichever settles the worker's event, the other learns it from its watch.
    const seen = await firstSeen(`/api/v1/tasks/${id}`, account.key, (r) => r.data['status'] === 'completed', 120_000);
    expect(Math.abs(seen.a - seen.b)).toBeLessThan(CROSS_GATEWAY_MS);
    const [a, b] = await Promise.all([
      api(gatewayA.url, 'GET', `/api/v1/tasks/${id}`, account.key),
      api(gatewayB.url, 'GET', `/api/v1/tasks/${id}`, account.key),
    ]);
    expect(b.data).toEqual(a.data);
    // The polls were answered from memory, not by reading the store each time.
    for (const base of [gatewayA.url, gatewayB.url]) {
      expect(await viewReads(base, 'tasks', 'hit')).toBeGreaterThan(0);
      expect(await viewReads(base, 'keys', 'hit')).toBeGreaterThan(0);
    }
    expect(a.data['result']).toBeTruthy();
  }, 180_000);

  it('shows a debit on the gateway that made it at once, and on the other within 1 s', async () => {
    const account = await newAccount(1000);
    // Both gateways hold the balance before the debit.
    for (const base of [gatewayA.url, gatewayB.url])
      expect((await api(base, 'GET', '/api/v1/balance', account.key)).data['credits']).toBe(1000);
    const submitted = await api(gatewayA.url, 'POST', '/api/v1/generate', account.key, {
      model: 'vendor-v5-generate-music',
      input: { prompt: 'poll view' },
    });
    expect(submitted.status).toBe(200);
    const remaining = submitted.data['creditsRemaining'] as number;
    expect(remaining).toBeLessThan(1000);
    const doneAt = Date.now();
    expect((await api(gatewayA.url, 'GET', '/api/v1/balance', account.key)).data['credits']).toBe(remaining);
    const seen = await firstSeen('/api/v1/balance', account.key, (r) => r.data['credits'] === remaining, 10_000);
    expect(seen.b - doneAt).toBeLessThan(CROSS_GATEWAY_MS);
  }, 60_000);

  it('refuses a key on both gateways within 1 s of its revocation', async () => {
    const account = await newAccount(10);
    // Both gateways hold the key as valid.
    for (const base of [gatewayA.url, gatewayB.url])
      expect((await api(base, 'GET', '/api/v1/balance', account.key)).status).toBe(200);
    await accountsCommand(['revoke-key', account.id, hashApiKey(account.key).slice(0, 16)], operatorEnv);
    const revokedAt = Date.now();
    const seen = await firstSeen('/api/v1/balance', account.key, (r) => r.status === 401, 10_000);
    expect(Math.max(seen.a, seen.b) - revokedAt).toBeLessThan(CROSS_GATEWAY_MS);
  }, 60_000);
});
