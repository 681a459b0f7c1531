/**
 * The README's one-host recipe without opening the host (issue 31, finding 9), as shipped (dist/):
 * a real nats-server with the shipped per-role users (`provision` and `accounts` as operator, `serve`
 * as `worker-host1`, the gateway as `gateway`), `serve` and `gateway` with MEDIA_WORKER_PRIVATE_ORIGINS naming the gateway's
 * /results/ and no MEDIA_WORKER_ALLOW_PRIVATE_URLS. An upload is fetched and priced; every other
 * local place (the gateway outside /results/, an open port, a closed port, the metadata address)
 * is refused: plain http outside the prefix before any network, https with the one "Could not
 * fetch" message, so a customer learns nothing about the host's
 * ports; the worker's log has the detail.
 */
import { createServer } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../worker/helpers/jetstream.js';
import { BUNDLED_PHOTOS_DIR } from '../../../src/paths.js';
import { startRoleNats, type RoleNats } from '../../helpers/role-nats.js';
import { accountsCommand, freePort, serviceTestEnv, startServeAndGateway, type RunningProcess } from './processes.js';

function withoutPrivateUrls(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const { MEDIA_WORKER_ALLOW_PRIVATE_URLS: _allowed, ...rest } = env;
  return rest;
}

let roles: RoleNats;
let dir: string;
let serve: RunningProcess;
let gateway: RunningProcess & { url: string };
let env: NodeJS.ProcessEnv;
/** A local TCP service that is not HTTP (what a port scan would find open). */
let openPort: number;
let closeOpen: () => void;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'media-gateway-one-host-'));
  const listener = createServer((socket) => socket.end('SSH-2.0-OpenSSH_9.2\r\n'));
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  openPort = (listener.address() as { port: number }).port;
  closeOpen = () => listener.close();
  roles = await startRoleNats(dir);
  ({ env, serve, gateway } = await startServeAndGateway(
    {
      // The recipe allows the gateway's own origin (below), never private URLs in general.
      ...withoutPrivateUrls(await serviceTestEnv(dir)),
      GATEWAY_UPLOADS: 'true',
      MEDIA_WORKER_FETCH_CONNECT_TIMEOUT_MS: '2000',
    },
    (resultsBaseUrl) => ({ MEDIA_WORKER_PRIVATE_ORIGINS: resultsBaseUrl }),
    roles.serviceEnvs(),
  ));
}, 180_000);

afterAll(async () => {
  await gateway?.kill('SIGKILL');
  await serve?.kill('SIGKILL');
  await roles?.close();
  closeOpen?.();
  await rm(dir, { recursive: true, force: true });
});

async function submit(
  key: string,
  url: string,
): Promise<{ status: number; body: { data?: Record<string, unknown>; error?: { code: string; message: string } } }> {
  const res = await fetch(`${gateway.url}/api/v1/tools/upscale-image`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ image_url: url }),
  });
  return { status: res.status, body: (await res.json()) as { data?: Record<string, unknown> } };
}

describe('the one-host recipe', () => {
  it('fetches an upload from the gateway and nothing else on the host, with one message for every refusal', async () => {
    expect(env['MEDIA_WORKER_ALLOW_PRIVATE_URLS']).toBeUndefined();
    const { apiKey } = (await accountsCommand(['create', '--name', 'one-host', '--credits', '100'], env)) as {
      apiKey: string;
    };
    const png = await sharp(path.join(BUNDLED_PHOTOS_DIR, 'chelsea.png')).resize(12, 9).png().toBuffer();
    const uploaded = await fetch(`${gateway.url}/api/v1/uploads`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'image/png' },
      body: png,
    });
    const link = ((await uploaded.json()) as { data: { url: string } }).data.url;
    const ok = await submit(apiKey, link);
    expect([ok.status, ok.body.data?.['input']]).toEqual([
      200,
      expect.objectContaining({ detected_dimensions: '12×9' }),
    ]);

    const gatewayPort = new URL(gateway.url).port;
    const closedPort = await freePort();
    // Plain http is taken only under the named prefix: elsewhere it is refused before any network.
    for (const url of [
      `http://127.0.0.1:${gatewayPort}/metrics`,
      `http://127.0.0.1:${gatewayPort}/results/../api/v1/balance`,
      `http://127.0.0.1:${openPort}/x.png`,
    ]) {
      const r = await submit(apiKey, url);
      expect([r.status, r.body.error?.code, r.body.error?.message]).toEqual([
        400,
        'INVALID_URL',
        'Expected an https URL for the image input but received a plain http URL',
      ]);
    }
    // Over https, an open port, a closed one, a name for loopback and the metadata address read alike.
    const places = [
      `https://127.0.0.1:${openPort}/x.png`,
      `https://127.0.0.1:${closedPort}/x.png`,
      `https://localhost:${openPort}/x.png`,
      `https://127.0.0.1:${gatewayPort}/results/x.png`,
      'https://169.254.169.254/latest/meta-data/x.png',
    ];
    for (const url of places) {
      const r = await submit(apiKey, url);
      const shown = new URL(url);
      expect([r.status, r.body.error?.code, r.body.error?.message]).toEqual([
        422,
        'FETCH_FAILED',
        `Could not fetch the image input from ${shown.protocol}//${shown.host}${shown.pathname}`,
      ]);
    }
    // The balance paid for the one upload only.
    const balance = await fetch(`${gateway.url}/api/v1/balance`, { headers: { authorization: `Bearer ${apiKey}` } });
    expect(((await balance.json()) as { data: { credits: number } }).data.credits).toBe(80);
    // The worker's log has what really happened (through its pipe, which may trail the answer: waited for).
    const logged =
      /"code":"FETCH_FAILED","detail":"Expected a public address for the image input but received 127\.0\.0\.1 \(loopback\)"/;
    await waitFor('the worker to log the refusal', () => logged.test(serve.output()), 10_000);
  }, 60_000);
});
