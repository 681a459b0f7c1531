/**
 * Signed webhooks end to end (issue 33, item 1), as shipped (dist/): a real nats-server under the
 * shipped per-role users, `media-worker serve` doing the work, `media-worker gateway` delivering,
 * and local receivers over real HTTP (GATEWAY_WEBHOOK_ALLOW_LOOPBACK, with a short retry schedule).
 * A receiver that fails twice then succeeds gets three requests with one webhook-id, each signed
 * by the account's secret; a gateway killed while its request is held delivers after its restart;
 * two gateways deliver each webhook once; a private webhook_url is refused at submission.
 */
import { createHmac } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import createClient from 'openapi-fetch';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUNDLED_PHOTOS_DIR } from '../../../src/paths.js';
import { waitFor } from '../../worker/helpers/jetstream.js';
import { startRoleNats, type RoleNats } from '../../helpers/role-nats.js';
import type { paths } from '../../gateway/openapi/api.js';
import {
  accountsCommand,
  serviceTestEnv,
  startGatewayProcess,
  startServeAndGateway,
  type RunningProcess,
} from './processes.js';

interface Received {
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
}

let roles: RoleNats;
let dir: string;
let media: Server;
let mediaUrl: string;
let receiver: Server;
let receiverUrl: string;
const received: Received[] = [];
/** Per path: how to answer the n-th request (0-based) there; held requests are answered later. */
const behaviour: Record<string, (n: number, res: ServerResponse) => void> = {};
const held: ServerResponse[] = [];
let serve: RunningProcess;
let gateway: RunningProcess & { url: string };
let env: NodeJS.ProcessEnv;
let gatewayEnv: NodeJS.ProcessEnv;
const extraGateways: RunningProcess[] = [];

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'media-webhooks-e2e-'));
  const png = await sharp(path.join(BUNDLED_PHOTOS_DIR, 'chelsea.png')).resize(40, 27).png().toBuffer();
  media = createServer((req, res) =>
    req.url === '/small.png' ? res.writeHead(200).end(png) : res.writeHead(404).end(),
  );
  await new Promise<void>((resolve) => media.listen(0, '127.0.0.1', resolve));
  mediaUrl = `http://127.0.0.1:${(media.address() as AddressInfo).port}`;

  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const p = req.url ?? '';
      const n = received.filter((r) => r.path === p).length;
      received.push({ path: p, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      (behaviour[p] ?? ((_n, r) => r.writeHead(200).end('ok')))(n, res);
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;

  roles = await startRoleNats(dir);
  ({ env, gatewayEnv, serve, gateway } = await startServeAndGateway(
    {
      // Music waits in the stream (priced, never run): a pending task to cancel.
      ...(await serviceTestEnv(dir)),
      GATEWAY_WEBHOOK_ALLOW_LOOPBACK: 'true',
      GATEWAY_WEBHOOK_RETRY_DELAYS_MS: '300,300,300,300',
    },
    undefined,
    roles.serviceEnvs(),
  ));
}, 180_000);

afterAll(async () => {
  for (const res of held) res.destroy();
  for (const g of extraGateways) await g.kill('SIGKILL');
  await gateway?.kill('SIGKILL');
  await serve?.kill('SIGKILL');
  await roles?.close();
  media?.close();
  receiver?.closeAllConnections();
  receiver?.close();
  await rm(dir, { recursive: true, force: true });
});

interface Account {
  id: string;
  key: string;
  secret: string;
}

async function newAccount(credits: number): Promise<Account> {
  const out = (await accountsCommand(['create', '--name', 'hooks', '--credits', String(credits)], env)) as {
    account: { id: string };
    apiKey: string;
    webhookSecret: string;
  };
  expect(out.webhookSecret).toMatch(/^whsec_[A-Za-z0-9+/]+={0,2}$/);
  return { id: out.account.id, key: out.apiKey, secret: out.webhookSecret };
}

async function api(
  method: string,
  route: string,
  key: string,
  body?: unknown,
  base = gateway.url,
): Promise<{
  status: number;
  body: { success: boolean; data?: Record<string, unknown>; error?: { code: string; message: string } };
}> {
  const res = await fetch(`${base}${route}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, body: (await res.json()) as never };
}

/** The receiver's check, written from the specification (not the gateway's code): any signature matching passes. */
function signedBy(secret: string, r: Received): boolean {
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  const expected = `v1,${createHmac('sha256', key)
    .update(`${String(r.headers['webhook-id'])}.${String(r.headers['webhook-timestamp'])}.${r.body}`)
    .digest('base64')}`;
  return String(r.headers['webhook-signature']).split(' ').includes(expected);
}

const at = (p: string) => received.filter((r) => r.path === p);

function imageJob(hook: string | undefined): Record<string, unknown> {
  return {
    model: 'vendor-image-upscale',
    input: { image_url: `${mediaUrl}/small.png`, upscale_factor: '2' },
    ...(hook === undefined ? {} : { webhook_url: `${receiverUrl}${hook}` }),
  };
}

async function settledWebhook(
  key: string,
  taskId: string,
  status: string,
  timeoutMs = 60_000,
): Promise<Record<string, unknown>> {
  return waitFor(
    `task ${taskId}'s webhook ${status}`,
    async () => {
      const polled = await api('GET', `/api/v1/tasks/${taskId}`, key);
      const webhook = polled.body.data?.['webhook'] as { status?: string } | undefined;
      return webhook?.status === status ? polled.body.data : undefined;
    },
    timeoutMs,
    200,
  );
}

describe('signed webhooks', () => {
  it("the OpenAPI document describes the webhook request as each submission's callback", async () => {
    const doc = (await (await fetch(`${gateway.url}/api/v1/openapi.json`)).json()) as {
      paths: Record<string, Record<string, { callbacks?: Record<string, Record<string, unknown>> }>>;
    };
    for (const route of [
      '/api/v1/generate',
      '/api/v1/tools/lipsync',
      '/api/v1/tools/upscale-image',
      '/api/v1/tools/upscale-video',
    ]) {
      const callback = doc.paths[route]?.['post']?.callbacks?.['taskFinished']?.['{$request.body#/webhook_url}'] as
        { post: { parameters: { name: string }[] } } | undefined;
      expect(
        callback?.post.parameters.map((p) => p.name),
        route,
      ).toEqual(['webhook-id', 'webhook-timestamp', 'webhook-signature']);
    }
    expect(doc.paths['/api/v1/tasks/{id}/webhook/retry']?.['post']).toBeDefined();
  });

  it('a private or non-https webhook_url is refused at submission with 400 INVALID_WEBHOOK_URL, nothing charged', async () => {
    const account = await newAccount(100);
    for (const hook of [
      'https://10.0.0.5/hook',
      'http://169.254.169.254/latest',
      'https://[fd00::1]/x',
      'ftp://127.0.0.1/x',
      'not a url',
    ]) {
      const res = await api('POST', '/api/v1/generate', account.key, { ...imageJob(undefined), webhook_url: hook });
      expect(res.status, hook).toBe(400);
      expect(res.body.error?.code, hook).toBe('INVALID_WEBHOOK_URL');
      expect(res.body.error?.message.length).toBeGreaterThan(20);
    }
    // The generated client knows webhook_url and the code.
    const client = createClient<paths>({ baseUrl: gateway.url, headers: { authorization: `Bearer ${account.key}` } });
    const tool = await client.POST('/api/v1/tools/upscale-image', {
      body: { image_url: `${mediaUrl}/small.png`, webhook_url: 'https://192.168.0.1/' },
    });
    expect([tool.response.status, tool.error?.error.code]).toEqual([400, 'INVALID_WEBHOOK_URL']);
    expect((await api('GET', '/api/v1/balance', account.key)).body.data?.['credits']).toBe(100);
  }, 60_000);

  it('a receiver failing twice gets three signed requests with one webhook-id; the body is the polled task', async () => {
    behaviour['/flaky'] = (n, res) => (n < 2 ? res.writeHead(500).end('not yet') : res.writeHead(204).end());
    const account = await newAccount(100);
    const submitted = await api('POST', '/api/v1/generate', account.key, imageJob('/flaky'));
    expect(submitted.status).toBe(200);
    const id = submitted.body.data?.['id'] as string;
    const task = await settledWebhook(account.key, id, 'delivered');
    const requests = at('/flaky');
    expect(requests).toHaveLength(3);
    expect(new Set(requests.map((r) => r.headers['webhook-id']))).toEqual(new Set([`msg_${id}_completed`]));
    for (const r of requests) {
      expect(signedBy(account.secret, r)).toBe(true);
      expect(signedBy('whsec_' + Buffer.from('another secret!!').toString('base64'), r)).toBe(false);
      expect(Math.abs(Number(r.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(300);
      expect(r.headers['content-type']).toBe('application/json');
    }
    const { webhook, ...polled } = task;
    expect(JSON.parse(requests[2]!.body)).toEqual({ success: true, data: polled });
    expect(polled['status']).toBe('completed');
    expect(webhook).toMatchObject({
      id: `msg_${id}_completed`,
      event: 'completed',
      status: 'delivered',
      attempts: 3,
      lastResponse: { status: 204 },
    });
    const metrics = await (await fetch(`${gateway.url}/metrics`)).text();
    const count = (outcome: string) =>
      Number(
        new RegExp(`^media_gateway_webhook_attempts_total\\{outcome="${outcome}"\\} (\\d+)`, 'm').exec(metrics)?.[1] ??
          0,
      );
    expect(count('retried')).toBeGreaterThanOrEqual(2);
    expect(count('delivered')).toBeGreaterThanOrEqual(1);

    // Sent again on request: the same id, signed by both secrets during a rotation. The secret is
    // printed once: asked again without --rotate, it is refused.
    await expect(accountsCommand(['webhook-secret', account.id], env)).rejects.toThrow(/--rotate/);
    const rotated = (await accountsCommand(['webhook-secret', account.id, '--rotate'], env)) as {
      webhookSecret: string;
    };
    expect(rotated.webhookSecret).not.toBe(account.secret);
    const client = createClient<paths>({ baseUrl: gateway.url, headers: { authorization: `Bearer ${account.key}` } });
    const again = await client.POST('/api/v1/tasks/{id}/webhook/retry', { params: { path: { id } } });
    expect(again.response.status).toBe(202);
    expect(again.data?.data.webhook?.id).toBe(`msg_${id}_completed`);
    await waitFor('the retried webhook', () => at('/flaky').length === 4, 30_000);
    const fourth = at('/flaky')[3]!;
    expect(fourth.headers['webhook-id']).toBe(`msg_${id}_completed`);
    expect(String(fourth.headers['webhook-signature']).split(' ')).toHaveLength(2);
    expect(signedBy(account.secret, fourth)).toBe(true);
    expect(signedBy(rotated.webhookSecret, fourth)).toBe(true);
    await settledWebhook(account.key, id, 'delivered');

    // Another account's task is not found; a task without a webhook cannot be retried.
    const other = await newAccount(100);
    expect((await api('POST', `/api/v1/tasks/${id}/webhook/retry`, other.key)).status).toBe(404);
    const plain = await api('POST', '/api/v1/generate', account.key, imageJob(undefined));
    const refused = await api('POST', `/api/v1/tasks/${plain.body.data?.['id'] as string}/webhook/retry`, account.key);
    expect(refused.status).toBe(409);
    expect(refused.body.error?.code).toBe('WEBHOOK_NOT_RETRYABLE');
  }, 120_000);

  it("a cancelled task's webhook goes to the account's default endpoint; 410 turns that endpoint off", async () => {
    behaviour['/gone'] = (_n, res) => res.writeHead(410).end('gone');
    const account = await newAccount(1000);
    await accountsCommand(['webhook-url', account.id, `${receiverUrl}/gone`], env);
    const music = { model: 'vendor-v5-generate-music', input: { prompt: 'a short tune', instrumental: true } };
    const submitted = await api('POST', '/api/v1/generate', account.key, music);
    expect(submitted.status).toBe(200);
    const id = submitted.body.data?.['id'] as string;
    expect((await api('POST', `/api/v1/tasks/${id}/cancel`, account.key)).status).toBe(200);
    const task = await settledWebhook(account.key, id, 'failed');
    expect(task['webhook']).toMatchObject({ event: 'cancelled', attempts: 1, lastResponse: { status: 410 } });
    const request = at('/gone').find((r) => r.headers['webhook-id'] === `msg_${id}_cancelled`)!;
    expect(signedBy(account.secret, request)).toBe(true);
    expect(JSON.parse(request.body)).toMatchObject({
      success: true,
      data: { id, status: 'failed', error: { code: 'CANCELLED' } },
    });
    // The default is off: the next task has no webhook.
    const next = await api('POST', '/api/v1/generate', account.key, music);
    const nextId = next.body.data?.['id'] as string;
    await api('POST', `/api/v1/tasks/${nextId}/cancel`, account.key);
    const polled = await api('GET', `/api/v1/tasks/${nextId}`, account.key);
    expect(polled.body.data?.['status']).toBe('failed');
    expect(polled.body.data?.['webhook']).toBeUndefined();
  }, 120_000);

  it('a gateway killed while its request is held delivers the same webhook after its restart', async () => {
    behaviour['/hang'] = (n, res) => (n === 0 ? held.push(res) : res.writeHead(200).end());
    const account = await newAccount(100);
    const submitted = await api('POST', '/api/v1/generate', account.key, imageJob('/hang'));
    const id = submitted.body.data?.['id'] as string;
    await waitFor('the first request', () => at('/hang').length === 1, 60_000);
    await gateway.kill('SIGKILL');
    gateway = await startGatewayProcess(gatewayEnv);
    const task = await settledWebhook(account.key, id, 'delivered', 90_000);
    const requests = at('/hang');
    expect(requests.length).toBe(2);
    expect(requests.map((r) => r.headers['webhook-id'])).toEqual([`msg_${id}_completed`, `msg_${id}_completed`]);
    expect(requests.every((r) => signedBy(account.secret, r))).toBe(true);
    expect(task['webhook']).toMatchObject({ status: 'delivered' });
  }, 150_000);

  it('with two gateways each webhook is delivered once', async () => {
    const second = await startGatewayProcess({ ...gatewayEnv, GATEWAY_PORT: '0' });
    extraGateways.push(second);
    const account = await newAccount(1000);
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      const res = await api(
        'POST',
        '/api/v1/generate',
        account.key,
        imageJob('/twice'),
        i % 2 === 0 ? gateway.url : second.url,
      );
      expect(res.status).toBe(200);
      ids.push(res.body.data?.['id'] as string);
    }
    for (const id of ids) await settledWebhook(account.key, id, 'delivered', 90_000);
    // Time for a second delivery, were there one.
    await new Promise((r) => setTimeout(r, 3000));
    const byId = at('/twice').map((r) => r.headers['webhook-id']);
    expect(byId.sort()).toEqual(ids.map((id) => `msg_${id}_completed`).sort());
  }, 180_000);
});
