/**
 * Quotes shared fairly with money on the account (issue 31, finding 5), with a real nats-server,
 * two gateways started as `media-worker gateway` starts them, and a real worker quote service whose
 * quotes really download (src/media/fetch.ts) and probe (sharp): an account holding exactly an
 * image's price feeds slow URLs (one byte a second) through both gateways, and another account's
 * submission is answered within 5 s. The account's cap is shared out between the gateways
 * (GATEWAY_INSTANCES), the worker holds it to its share of the slots, and the slow downloads are
 * cut by the minimum transfer rate, not by the deadline. NATS is the shipped per-role configuration
 * (test/helpers/role-nats.ts): the worker as host `host1`, the gateways as gateway, accounts and
 * provisioning as operator.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { NatsConnection } from '@nats-io/transport-node';
import { pino } from 'pino';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type GatewayHandle } from '../../../src/gateway/gateway.js';
import { parseGatewaySettings } from '../../../src/gateway/settings.js';
import { openStore, type Store } from '../../../src/gateway/store/index.js';
import { quoteJob } from '../../../src/jobs/index.js';
import { createMediaDeps } from '../../../src/media/index.js';
import { BUNDLED_PHOTOS_DIR } from '../../../src/paths.js';
import { parseProtocolSettings } from '../../../src/protocol/index.js';
import { provisionFromEnv } from '../../helpers/provision.js';
import { waitFor } from '../../worker/helpers/jetstream.js';
import { startTestWorker, type TestWorker } from '../../worker/helpers/in-process.js';
import { startRoleNats, type RoleNats } from '../../helpers/role-nats.js';
import { startMediaServer, type MediaServer } from './media-server.js';

/** The rate window of the worker's downloads here (5 s by default). */
const RATE_WINDOW_MS = 2000;

let roles: RoleNats;
let nc: NatsConnection;
let store: Store;
let media: MediaServer;
let mediaUrl: string;
let dir: string;
let worker: TestWorker;
const gateways: GatewayHandle[] = [];
/** Connections the media server has open on /slow/*, and how many it ever saw. */
let slow: MediaServer['slow'];

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'media-gateway-fair-'));
  const png = await sharp(path.join(BUNDLED_PHOTOS_DIR, 'chelsea.png')).resize(40, 27).png().toBuffer();
  media = await startMediaServer({ '/small.png': png }, { slowBody: png });
  mediaUrl = media.url;
  slow = media.slow;

  roles = await startRoleNats(dir);
  await provisionFromEnv(roles.env('operator'));
  // Accounts are the operator's (`media-worker accounts`).
  nc = await roles.connectAs('operator');
  // Two quote slots, as the finding's worker had; the quotes fetch and probe for real.
  worker = await startTestWorker(
    roles.url,
    { ...roles.settingsOf('worker-host1'), quoteConcurrency: 2, quoteUnserved: 'price' },
    async (job, signal) => {
      const jobDir = await mkdtemp(path.join(dir, 'job-'));
      try {
        const deps = createMediaDeps({
          dir: jobDir,
          signal,
          allowHttp: true,
          allowPrivate: true,
          rateWindowMs: RATE_WINDOW_MS,
        });
        return (await quoteJob(job, deps, signal)).quote;
      } finally {
        await rm(jobDir, { recursive: true, force: true });
      }
    },
    { provisionAs: roles.settingsOf('operator') },
  );
  const { user, pass, inboxPrefix } = roles.auth('gateway');
  for (let i = 0; i < 2; i++) {
    gateways.push(
      await startGateway(
        parseGatewaySettings({
          host: '127.0.0.1',
          port: '0',
          quotesPerAccount: '2',
          gatewayInstances: '2',
          quoteTimeoutMs: '60000',
        }),
        parseProtocolSettings({
          natsUrl: roles.url,
          natsUser: user,
          natsPassword: pass,
          natsInboxPrefix: inboxPrefix,
          resultsDir: path.join(dir, 'results'),
        }),
        pino({ level: 'silent' }),
      ),
    );
  }
  store = await openStore(nc, 'GATEWAY');
}, 60_000);

afterAll(async () => {
  for (const g of gateways) await g.stop().catch(() => undefined);
  await worker?.stop();
  await nc?.close();
  await roles?.close();
  media?.close();
  await rm(dir, { recursive: true, force: true });
});

async function submit(
  gateway: GatewayHandle,
  key: string,
  url: string,
): Promise<{
  status: number;
  ms: number;
  body: { data?: Record<string, unknown>; error?: { code: string; message: string } };
}> {
  const started = Date.now();
  const res = await fetch(`${gateway.url}/api/v1/tools/upscale-image`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ image_url: url }),
  });
  return {
    status: res.status,
    body: (await res.json()) as { data?: Record<string, unknown> },
    ms: Date.now() - started,
  };
}

describe('quotes shared fairly with money on the account', () => {
  it('answers another account within 5 s while one holds slow URLs through every gateway, and cuts the slow downloads by their rate', async () => {
    const flooder = (await store.accounts.create('flooder', 20)).apiKey;
    const other = (await store.accounts.create('other', 20)).apiKey;
    // Two slow submissions through each gateway: each gateway admits one (the cap of 2 shared by 2 gateways).
    const flood = [0, 0, 1, 1].map((g, i) => submit(gateways[g]!, flooder, `${mediaUrl}/slow/${i}.png`));
    await waitFor('a slow download', () => (slow.open >= 1 ? true : undefined));
    const answered = await submit(gateways[0]!, other, `${mediaUrl}/small.png`);
    expect([answered.status, answered.body.data?.['creditsUsed']]).toEqual([200, 20]);
    expect(answered.ms).toBeLessThan(5000);
    // The worker holds the flooder to one of its two slots: never two slow downloads at once.
    expect(slow.open).toBeLessThanOrEqual(1);

    const replies = await Promise.all(flood);
    const codes = replies.map((r) => r.body.error?.code).sort();
    expect(codes).toEqual(['FETCH_FAILED', 'FETCH_FAILED', 'TOO_MANY_QUOTES', 'TOO_MANY_QUOTES']);
    for (const r of replies.filter((x) => x.body.error?.code === 'FETCH_FAILED')) {
      expect([r.status, r.body.error?.message]).toEqual([
        422,
        expect.stringMatching(/^Could not fetch the image input from http:\/\/127\.0\.0\.1:\d+\/slow\/\d\.png$/),
      ]);
      // Cut by the rate (one window per download, one waiting for the other), far from the 60 s deadline.
      expect(r.ms).toBeLessThan(3 * RATE_WINDOW_MS + 2000);
    }
    expect(slow.seen).toBe(2);
    console.info(
      `fair quotes: the other account answered in ${answered.ms} ms; the flooder's slow quotes cut after ${replies.map((r) => r.ms).join(', ')} ms`,
    );
  }, 30_000);
});
