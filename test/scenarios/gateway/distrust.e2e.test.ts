/**
 * The gateway believes nothing it can check (issue 31, findings 3, 4, 6, 7 and 8), with a real
 * nats-server under the shipped per-role users, the gateway started as `media-worker gateway` starts
 * it (startGateway, as `gateway`), real HTTP, and this file playing a taken-over worker with its
 * host's credentials (`worker-takenover`): it answers `media.quote` and publishes terminal events
 * with nothing but what a worker may send.
 *
 * - A quote of 900 credits for a 20-credit image is refused (503, nothing charged) and counted as a
 *   security event; an honest one is charged its price.
 * - A completed event whose result names another customer's upload, another task's result or
 *   another host fails the task with its refund; nothing outside the task's folder is signed.
 * - Behind a trusted proxy the client is the rightmost untrusted X-Forwarded-For address, so a
 *   spoofed chain does not multiply the per-address budget.
 * - Nested JSON is refused before parsing, and another account is not starved meanwhile (its p50 printed).
 * - Serving files without a link secret or a public address is refused at start and by `config`;
 *   upload links never come from the Host header.
 */
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { spawn } from 'node:child_process';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { jetstream, type JetStreamClient } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { pino, type Logger } from 'pino';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { effectiveSettings } from '../../../src/cli/commands/config.js';
import { startGateway, type GatewayHandle } from '../../../src/gateway/gateway.js';
import {
  GatewaySettingsError,
  parseGatewaySettings,
  type GatewaySettingsInput,
} from '../../../src/gateway/settings.js';
import { openStore, type Store } from '../../../src/gateway/store/index.js';
import { BUNDLED_PHOTOS_DIR } from '../../../src/paths.js';
import {
  QUOTE_SUBJECT,
  claimTask,
  eventSubject,
  parseProtocolSettings,
  type TerminalEvent,
} from '../../../src/protocol/index.js';
import { provisionFromEnv } from '../../helpers/provision.js';
import { waitFor } from '../../worker/helpers/jetstream.js';
import { startRoleNats, type RoleNats } from '../../helpers/role-nats.js';
import { settledTask } from './e2e-harness.js';
import { freePort } from './processes.js';

const LINK_SECRET = 'distrust-test-secret-of-at-least-32-chars';

let roles: RoleNats;
/** The taken-over worker's connection: its host's user, nothing more. */
let worker: NatsConnection;
/** The operator's (accounts). */
let operator: NatsConnection;
let js: JetStreamClient;
let store: Store;
let dir: string;
let base: string;
let gateway: GatewayHandle;
const logLines: string[] = [];
const gateways: GatewayHandle[] = [];
/** How the fake worker prices the next quote: honestly, or at this many credits. */
let forgedPrice: number | null = null;
/** The worker host an attacker took over: its event is believed (it claimed the task), what it says is checked. */
const TAKEN_OVER = 'takenover';

function captureLogger(): Logger {
  return pino({ level: 'info' }, { write: (line: string) => void logLines.push(line) });
}

/** The gateway's user and inbox in the shipped configuration. */
function gatewayNats() {
  const { user, pass, inboxPrefix } = roles.auth('gateway');
  return { natsUrl: roles.url, natsUser: user, natsPassword: pass, natsInboxPrefix: inboxPrefix };
}

async function gatewayWith(settings: GatewaySettingsInput, port = 0): Promise<GatewayHandle> {
  const g = await startGateway(
    parseGatewaySettings({ host: '127.0.0.1', port: String(port), ...settings }),
    parseProtocolSettings({ ...gatewayNats(), resultsDir: path.join(dir, 'results'), publicBaseUrl: base }),
    captureLogger(),
  );
  gateways.push(g);
  return g;
}

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'media-gateway-distrust-'));
  roles = await startRoleNats(dir, { hosts: [TAKEN_OVER] });
  await provisionFromEnv(roles.env('operator'));
  worker = await roles.connectAs(`worker-${TAKEN_OVER}`);
  operator = await roles.connectAs('operator');
  js = jetstream(worker);
  const port = await freePort();
  base = `http://127.0.0.1:${port}/results/`;
  gateway = await gatewayWith({ serveResults: 'true', uploadsEnabled: 'true', linkSecret: LINK_SECRET }, port);
  store = await openStore(operator, 'GATEWAY');
  // The worker's quote service as a taken-over host runs it: same subject, same queue group.
  worker.subscribe(QUOTE_SUBJECT, {
    queue: 'q',
    callback: (_err, msg) => {
      const job = msg.json<{ model: string; input: { image_url: string; upscale_factor?: string } }>();
      const honest = {
        model: job.model,
        creditsUsed: 20,
        input: {
          image_url: job.input.image_url,
          upscale_factor: job.input.upscale_factor ?? '2',
          detected_dimensions: '40×27',
          output_tier: '24mp',
        },
      };
      msg.respond(JSON.stringify(forgedPrice === null ? honest : { ...honest, creditsUsed: forgedPrice }));
    },
  });
}, 60_000);

afterAll(async () => {
  for (const g of gateways) await g.stop().catch(() => undefined);
  await worker?.close();
  await operator?.close();
  await roles?.close();
  await rm(dir, { recursive: true, force: true });
});

async function account(credits: number): Promise<{ id: string; key: string }> {
  const made = await store.accounts.create('distrust', credits);
  return { id: made.account.id, key: made.apiKey };
}

interface Reply {
  status: number;
  body: { success: boolean; data?: Record<string, unknown>; error?: { code: string; message: string } };
}

async function call(
  url: string,
  method: string,
  key: string,
  body?: string,
  headers: Record<string, string> = {},
): Promise<Reply> {
  const res = await fetch(url, {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...headers,
    },
    ...(body === undefined ? {} : { body }),
  });
  return { status: res.status, body: (await res.json()) as Reply['body'] };
}

const submit = (key: string) =>
  call(
    `${gateway.url}/api/v1/tools/upscale-image`,
    'POST',
    key,
    JSON.stringify({ image_url: 'https://media.test/a.png' }),
  );
const balance = async (key: string) => (await call(`${gateway.url}/api/v1/balance`, 'GET', key)).body.data?.['credits'];

async function securityCount(kind: string): Promise<number> {
  const text = await (await fetch(`${gateway.url}/metrics`)).text();
  return Number(
    new RegExp(`^media_gateway_security_events_total\\{kind="${kind}"\\} (\\d+)$`, 'm').exec(text)?.[1] ?? Number.NaN,
  );
}

function completedEvent(taskId: string, result: unknown): TerminalEvent {
  const now = new Date().toISOString();
  return {
    id: taskId,
    model: 'vendor-image-upscale',
    status: 'completed',
    result,
    creditsUsed: 20,
    createdAt: now,
    startedAt: now,
    finishedAt: now,
    durationMs: 1,
    attempt: 1,
    worker: TAKEN_OVER,
  };
}

/** The taken-over host claims the task and marks its settlement (as its worker would), then publishes its event. */
async function publishEvent(event: TerminalEvent): Promise<void> {
  await claimTask(
    js,
    await js.jetstreamManager(),
    { claimsStream: 'MEDIA_CLAIMS', host: TAKEN_OVER, timeoutMs: 5000, leaseMs: 30_000 },
    event.id,
    'settle',
  );
  await js.publish(eventSubject(TAKEN_OVER, event.id), JSON.stringify(event));
}

const imageResult = (url: string) => ({ url, type: 'image', width: 80, height: 54, format: 'png' });

describe("a worker's quote is checked against the price list", () => {
  it('refuses 900 credits for a 20-credit image (503, nothing charged, a security event); charges an honest quote its price', async () => {
    const customer = await account(1000);
    forgedPrice = 900;
    const forged = await submit(customer.key);
    forgedPrice = null;
    expect([forged.status, forged.body.error?.code]).toEqual([503, 'SERVICE_UNAVAILABLE']);
    expect(await balance(customer.key)).toBe(1000);
    expect(await securityCount('forged_quote')).toBe(1);
    expect(
      logLines.some((l) =>
        /"level":50.*"security":"forged_quote".*creditsUsed is 900 where the price list gives 20/.test(l),
      ),
    ).toBe(true);
    const honest = await submit(customer.key);
    expect([honest.status, honest.body.data?.['creditsUsed']]).toEqual([200, 20]);
    expect(await balance(customer.key)).toBe(980);
  });
});

describe("a worker's result may reference only its own task's folder", () => {
  it("fails and refunds a task whose result names another customer's upload, another task or another host; signs only the task's own files", async () => {
    const attacker = await account(100);
    const victim = await account(100);
    const png = await sharp(path.join(BUNDLED_PHOTOS_DIR, 'chelsea.png')).resize(8, 6).png().toBuffer();
    const uploaded = await fetch(`${gateway.url}/api/v1/uploads`, {
      method: 'POST',
      headers: { authorization: `Bearer ${victim.key}`, 'content-type': 'image/png' },
      body: png,
    });
    const uploadUrl = ((await uploaded.json()) as { data: { url: string } }).data.url;
    const uploadPath = uploadUrl.split('?')[0]!;
    expect(uploadPath.startsWith(`${base}uploads/${victim.id}/`)).toBe(true);

    const own = (await submit(attacker.key)).body.data!['id'] as string;
    const victimTask = (await submit(victim.key)).body.data!['id'] as string;
    const honestTask = (await submit(victim.key)).body.data!['id'] as string;
    const liarTask = (await submit(victim.key)).body.data!['id'] as string;
    const otherResult = `${base}image/${honestTask}/output.png`;
    expect([await balance(attacker.key), await balance(victim.key)]).toEqual([80, 40]);

    // The attacker's own task, "completed" with the victim's upload and another task's result.
    await publishEvent({ ...completedEvent(own, { songs: [] }), result: imageResult(uploadPath) });
    await publishEvent(completedEvent(victimTask, imageResult('https://evil.example/your-upscale.exe')));
    // The honest one's file is stored where the gateway checks it (size and sha256, protocol 2.1).
    const honestBytes = Buffer.from('stored result');
    await mkdir(path.join(dir, 'results', 'image', honestTask), { recursive: true });
    await writeFile(path.join(dir, 'results', 'image', honestTask, 'output.png'), honestBytes);
    const honestFile = {
      key: `image/${honestTask}/output.png`,
      url: otherResult,
      size: honestBytes.length,
      sha256: createHash('sha256').update(honestBytes).digest('hex'),
    };
    await publishEvent({ ...completedEvent(honestTask, imageResult(otherResult)), files: [honestFile] });
    // "Completed", its own key listed, but the stored copy is not what the event says (a host that stored nothing, or lies).
    const liarUrl = `${base}image/${liarTask}/output.png`;
    await mkdir(path.join(dir, 'results', 'image', liarTask), { recursive: true });
    await writeFile(path.join(dir, 'results', 'image', liarTask, 'output.png'), Buffer.from('half of it'));
    await publishEvent({
      ...completedEvent(liarTask, imageResult(liarUrl)),
      files: [{ ...honestFile, key: `image/${liarTask}/output.png`, url: liarUrl }],
    });

    const settled = async (key: string, id: string) =>
      (await settledTask(id, (route) => call(`${gateway.url}${route}`, 'GET', key))).body.data ?? {};
    const attackerView = await settled(attacker.key, own);
    expect(attackerView).toMatchObject({ status: 'failed', creditsRefunded: 20, error: { code: 'UPSCALE_FAILED' } });
    expect(JSON.stringify(attackerView)).not.toContain('uploads');
    const victimView = await settled(victim.key, victimTask);
    expect(victimView).toMatchObject({ status: 'failed', creditsRefunded: 20 });
    expect(JSON.stringify(victimView)).not.toContain('evil.example');
    // The honest task's own result is shown, signed, with the result lifetime.
    const honestView = await settled(victim.key, honestTask);
    expect(honestView['status']).toBe('completed');
    expect((honestView['result'] as { url: string }).url).toMatch(
      new RegExp(`^${otherResult.replace(/[.?]/g, '\\$&')}\\?expires=\\d+&sig=`),
    );
    expect(await settled(victim.key, liarTask)).toMatchObject({
      status: 'failed',
      creditsRefunded: 20,
      error: { code: 'UPSCALE_FAILED' },
    });
    expect([await balance(attacker.key), await balance(victim.key)]).toEqual([100, 80]);
    expect(await securityCount('forged_result')).toBe(3);
    expect(logLines.filter((l) => l.includes('"security":"forged_result"'))).toHaveLength(3);
    expect(
      logLines.some((l) =>
        /"security":"forged_result".*the stored copy is not what the event says.*holds 10 bytes, not the 13/.test(l),
      ),
    ).toBe(true);
  });
});

describe('served files fail closed', () => {
  it('refuses to start serving files without a link secret or a public address, and so does `config`', async () => {
    await expect(gatewayWith({ serveResults: 'true' })).rejects.toThrow(GatewaySettingsError);
    const settings = parseGatewaySettings({
      host: '127.0.0.1',
      port: '0',
      serveResults: 'true',
      uploadsEnabled: 'true',
      linkSecret: LINK_SECRET,
    });
    const noAddress = parseProtocolSettings({ ...gatewayNats(), resultsDir: path.join(dir, 'results') });
    await expect(startGateway(settings, noAddress, captureLogger())).rejects.toThrow(
      /Expected RESULTS_BASE_URL or GATEWAY_PUBLIC_URL to be set with GATEWAY_SERVE_RESULTS=true and GATEWAY_UPLOADS=true/,
    );
    const { problems } = effectiveSettings({ GATEWAY_SERVE_RESULTS: 'true', GATEWAY_UPLOADS: 'true' });
    expect(problems).toContain(
      'Invalid setting GATEWAY_SERVE_RESULTS: Expected GATEWAY_LINK_SECRET and RESULTS_BASE_URL or GATEWAY_PUBLIC_URL to be set with GATEWAY_SERVE_RESULTS=true and GATEWAY_UPLOADS=true (files are served only through signed links under a configured public address) but received them unset',
    );
  });

  it('builds upload links under the configured address whatever the Host header says, and serves nothing unsigned', async () => {
    const customer = await account(0);
    const png = await sharp(path.join(BUNDLED_PHOTOS_DIR, 'chelsea.png')).resize(8, 6).png().toBuffer();
    const url = new URL(gateway.url);
    const reply = await new Promise<string>((resolve, reject) => {
      const req = request(
        {
          host: url.hostname,
          port: url.port,
          path: '/api/v1/uploads',
          method: 'POST',
          headers: {
            host: 'evil.example',
            authorization: `Bearer ${customer.key}`,
            'content-type': 'image/png',
            'content-length': String(png.length),
          },
        },
        (res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += c.toString()));
          res.on('end', () => resolve(text));
        },
      );
      req.on('error', reject);
      req.end(png);
    });
    const link = (JSON.parse(reply) as { data: { url: string } }).data.url;
    expect(link.startsWith(`${base}uploads/${customer.id}/`)).toBe(true);
    const unsigned = await fetch(link.split('?')[0]!);
    expect(unsigned.status).toBe(404);
    expect((await fetch(link)).status).toBe(200);
  });
});

describe('behind a proxy', () => {
  it('counts the rightmost untrusted X-Forwarded-For address: a spoofed chain gets the one budget (addresses and hop counts)', async () => {
    for (const trustProxy of ['127.0.0.1', '1']) {
      const behind = await gatewayWith({ trustProxy, rateLimitPerAddress: '10', rateLimitWindowMs: '60000' });
      const statuses = await Promise.all(
        Array.from({ length: 25 }, (_, i) =>
          fetch(`${behind.url}/api/v1/balance`, {
            headers: { 'x-forwarded-for': `198.51.100.${i}, 203.0.113.7` },
          }).then((r) => r.status),
        ),
      );
      expect([trustProxy, statuses.filter((s) => s === 429).length]).toEqual([trustProxy, 15]);
      // Another client behind the same proxy has its own budget.
      expect(
        (await fetch(`${behind.url}/api/v1/balance`, { headers: { 'x-forwarded-for': '203.0.113.8' } })).status,
      ).toBe(401);
    }

    // A client that connects directly (not through a trusted proxy) is its socket address, whatever X-Forwarded-For it writes.
    const elsewhere = await gatewayWith({
      trustProxy: '10.0.0.5',
      rateLimitPerAddress: '10',
      rateLimitWindowMs: '60000',
    });
    const direct = await Promise.all(
      Array.from({ length: 25 }, (_, i) =>
        fetch(`${elsewhere.url}/api/v1/balance`, { headers: { 'x-forwarded-for': `198.51.100.${i}` } }).then(
          (r) => r.status,
        ),
      ),
    );
    expect(direct.filter((s) => s === 429)).toHaveLength(15);
  });
});

/**
 * Four connections sending nested JSON (refused by the depth scan) and 60 KB arrays (parsed, then
 * refused), each one every 100 ms: 40 a second, twice the average the default per-account rate
 * limit allows (1200 a minute). The finding: 1 MB of nested brackets at 2.4 a second.
 */
const FLOOD = `
const nested = '['.repeat(60000);
const wide = '['.repeat(15) + '1,'.repeat(30000) + '1' + ']'.repeat(15);
let sent = 0;
let stop = false;
process.on('SIGTERM', () => { stop = true; });
const loops = [0, 1, 2, 3].map(async (i) => {
  while (!stop) {
    await fetch(process.env.URL, { method: 'POST', headers: { authorization: 'Bearer ' + process.env.KEY, 'content-type': 'application/json' }, body: i % 2 === 0 ? nested : wide }).then((r) => r.arrayBuffer()).catch(() => undefined);
    sent += 1;
    // Its count as it goes: the test samples until the flood has sent enough, not for a time.
    console.log('sent ' + sent);
    await new Promise((r) => setTimeout(r, 100));
  }
});
await Promise.all(loops);
`;

describe('abusive bodies', () => {
  it('refuses nested and oversized JSON before parsing while another account is still served', async () => {
    const abuser = await account(0);
    const other = await account(0);
    const nested = '['.repeat(60_000);
    const huge = `{"model":"vendor-v5-generate-music","input":{"prompt":"${'x'.repeat(1_000_000)}"}}`;
    const first = await call(`${gateway.url}/api/v1/generate`, 'POST', abuser.key, nested);
    expect([first.status, first.body.error?.message]).toEqual([
      400,
      'Expected JSON nested at most 16 levels deep but received deeper nesting',
    ]);
    const big = await call(`${gateway.url}/api/v1/generate`, 'POST', abuser.key, huge);
    expect([big.status, big.body.error?.code]).toEqual([413, 'PAYLOAD_TOO_LARGE']);

    const calm: number[] = [];
    for (let i = 0; i < 20; i++) {
      const started = performance.now();
      await call(`${gateway.url}/api/v1/balance`, 'GET', other.key);
      calm.push(performance.now() - started);
    }
    calm.sort((a, b) => a - b);
    console.info(`calm p50 ${calm[10]!.toFixed(1)} ms`);
    // The flood comes from another process, so that its own work does not slow this one's client.
    const flooder = spawn(process.execPath, ['--input-type=module', '-e', FLOOD], {
      env: { ...process.env, URL: `${gateway.url}/api/v1/generate`, KEY: abuser.key },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let flooded = '';
    flooder.stdout.on('data', (c: Buffer) => (flooded += c.toString()));
    const sentSoFar = (): number => Number([...flooded.matchAll(/sent (\d+)\n/g)].at(-1)?.[1] ?? 0);
    await waitFor('the flood to start', () => sentSoFar() >= 8);
    const before = sentSoFar();
    const samples: number[] = [];
    // One balance request every 50 ms while the flood sends 60 abusive bodies (at least 20 requests):
    // counted by the flood, not timed, so a busy machine that slows the flood lengthens the sampling
    // (3 s on a quiet machine; a fixed 3 s saw 47 bodies under load 18).
    while (sentSoFar() - before < 60 || samples.length < 20) {
      const started = performance.now();
      expect((await call(`${gateway.url}/api/v1/balance`, 'GET', other.key)).status).toBe(200);
      samples.push(performance.now() - started);
      await new Promise((r) => setTimeout(r, 50));
    }
    const exited = new Promise((resolve) => flooder.once('exit', resolve));
    flooder.kill('SIGTERM');
    await exited;
    const abusive = sentSoFar() - before;
    samples.sort((a, b) => a - b);
    const p50 = samples[Math.floor(samples.length / 2)]!;
    console.info(
      `abusive bodies: ${abusive} sent meanwhile; other account: ${samples.length} requests, p50 ${p50.toFixed(1)} ms, p90 ${samples[Math.floor(samples.length * 0.9)]!.toFixed(1)} ms`,
    );
    expect(abusive).toBeGreaterThanOrEqual(60);
    // Not a timing goal (the figure is measured and recorded in docs/benchmarks.md): a starved event
    // loop, as the finding's 2-2.6 s, fails this on any machine.
    expect(p50).toBeLessThan(500);
  }, 30_000);
});
