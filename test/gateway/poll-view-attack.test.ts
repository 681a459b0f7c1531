/**
 * The poll view (src/gateway/view) tried as an attacker and as an operator would, against a real
 * nats-server: a flood of polls of an unknown task id or API key costs one store read, not one per
 * poll, yet a record written later (on another gateway) is served at once; another account never
 * gets the task; a key revoked after a NATS restart (watches re-created) is refused by every gateway.
 */
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashApiKey } from '../../src/gateway/ids.js';
import { GatewayMetrics } from '../../src/gateway/metrics.js';
import { openStore, type Store } from '../../src/gateway/store/index.js';
import type { TaskRecord } from '../../src/gateway/store/records.js';
import { ensureStoreStreams, storeNames } from '../../src/gateway/store/streams.js';
import { writeIf } from '../../src/gateway/store/subject-store.js';
import { startPollView, type PollView } from '../../src/gateway/view/poll-view.js';
import { waitFor } from '../worker/helpers/jetstream.js';
import { startNatsServer, type TestNatsServer } from '../worker/helpers/nats-server.js';

const PREFIX = 'PVATK';
const logger = pino({ level: 'silent' });
const limits = { maxEntries: 100, maxAgeMs: 60_000 };

let nats: TestNatsServer;
const connections: NatsConnection[] = [];
const views: PollView[] = [];

interface Gateway {
  nc: NatsConnection;
  store: Store;
  view: PollView;
  metrics: GatewayMetrics;
}

async function gateway(): Promise<Gateway> {
  const nc = await connect({ servers: nats.url, maxReconnectAttempts: -1, reconnectTimeWait: 200 });
  connections.push(nc);
  const store = await openStore(nc, PREFIX);
  const metrics = new GatewayMetrics();
  const view = await startPollView({ nc, js: jetstream(nc), names: storeNames(PREFIX), tasks: store.tasks, ledger: store.ledger, accounts: store.accounts, logger, metrics }, limits);
  views.push(view);
  return { nc, store, view, metrics };
}

async function reads(g: Gateway, family: string, outcome: string): Promise<number> {
  const metric = (await g.metrics.viewReads.get()).values.find((v) => v.labels['family'] === family && v.labels['outcome'] === outcome);
  return metric?.value ?? 0;
}

function pendingTask(accountId: string, id: string): TaskRecord {
  return { id, accountId, model: 'vendor-image-upscale', kind: 'image', status: 'pending', creditsUsed: 20, createdAt: new Date().toISOString(), debitSeq: 1, extras: {} };
}

beforeAll(async () => {
  nats = await startNatsServer();
  const nc = await connect({ servers: nats.url });
  connections.push(nc);
  await ensureStoreStreams(await jetstreamManager(nc), PREFIX);
}, 60_000);

afterAll(async () => {
  for (const view of views) await view.stop();
  for (const nc of connections) await nc.close();
  await nats?.close();
});

describe('the poll view under attack', () => {
  it('a flood of polls of an unknown task id reads the store once; the task, written later elsewhere, is served at once', async () => {
    const a = await gateway();
    const b = await gateway();
    const { account } = await a.store.accounts.create('pva-404', 100);
    for (let i = 0; i < 50; i += 1) expect(await b.view.task(account.id, 't_pva_later')).toBeNull();
    expect(await reads(b, 'tasks', 'miss')).toBe(1);
    expect(await reads(b, 'tasks', 'hit')).toBe(49);
    // Written on A: B's remembered "none" is replaced by its watch, not served for its lifetime.
    const task = pendingTask(account.id, 't_pva_later');
    await a.store.tasks.ensure(task);
    await waitFor('B to serve the new task', async () => (await b.view.task(account.id, task.id)) !== null, 5_000, 10);
    expect(await b.view.task(account.id, task.id)).toEqual(task);
    // Another account asking for this id gets nothing, before and after it is cached for its owner.
    expect(await b.view.task('acct_pva_other', task.id)).toBeNull();
    expect(await b.view.task('acct_pva_other', task.id)).toBeNull();
  }, 60_000);

  it('a flood of requests with an unknown API key reads the store once; a key made later elsewhere is accepted at once', async () => {
    const a = await gateway();
    const b = await gateway();
    const { account } = await a.store.accounts.create('pva-keys', 100);
    const apiKey = `mwk_${'z'.repeat(40)}`;
    const before = await reads(b, 'keys', 'miss');
    for (let i = 0; i < 50; i += 1) expect(await b.view.accountOfKey(apiKey)).toBeNull();
    expect((await reads(b, 'keys', 'miss')) - before).toBe(1);
    await writeIf(jetstream(a.nc), a.store.names.keySubject(hashApiKey(apiKey)), { accountId: account.id, createdAt: new Date().toISOString() }, 0);
    await waitFor('B to accept the new key', async () => (await b.view.accountOfKey(apiKey)) === account.id, 5_000, 10);
  }, 60_000);

  it('a key revoked after a NATS restart (the watches re-created) is refused by both gateways', async () => {
    const a = await gateway();
    const b = await gateway();
    const { account, apiKey } = await a.store.accounts.create('pva-restart', 100);
    expect(await b.view.accountOfKey(apiKey)).toBe(account.id);
    await nats.restart(300);
    // Back and live again: B serves the key from memory (a hit) once more.
    await waitFor(
      'B live again after the restart',
      async () => {
        const hits = await reads(b, 'keys', 'hit');
        return (await b.view.accountOfKey(apiKey).catch(() => null)) === account.id && (await reads(b, 'keys', 'hit')) > hits;
      },
      30_000,
      100,
    );
    const keyId = (await a.store.accounts.listKeys(account.id))[0]!.keyId;
    await a.store.accounts.revokeKey(account.id, keyId);
    await waitFor('both to refuse the revoked key', async () => (await a.view.accountOfKey(apiKey)) === null && (await b.view.accountOfKey(apiKey)) === null, 5_000, 10);
  }, 90_000);
});
