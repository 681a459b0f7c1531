/**
 * The poll view (src/gateway/poll-view/poll-view.ts) in this process against a real nats-server: two
 * views on two connections, as two gateways would hold them. What one writes, it serves at once
 * from memory; the other learns it from its watch; a watch that cannot start leaves lookups
 * correct (read from the store each time).
 */
import { jetstream } from '@nats-io/jetstream';
import { createServer, connect as tcpConnect, type Server, type Socket } from 'node:net';
import { connect } from '@nats-io/transport-node';
import { describe, expect, it } from 'vitest';
import { GatewayMetrics } from '../../../src/gateway/monitoring/metrics.js';
import { openStore } from '../../../src/gateway/store/index.js';
import { storeNames } from '../../../src/gateway/store/streams.js';
import { startPollView } from '../../../src/gateway/poll-view/poll-view.js';
import { waitFor } from '../../worker/helpers/jetstream.js';
import { pendingTask, pollViewFixture, viewLimits, viewLogger, viewReads } from './helpers.js';

const PREFIX = 'PVTEST';
const fixture = pollViewFixture(PREFIX);
const { gateway, connections, views } = fixture;

/**
 * A TCP relay to the server whose answers to the client can be held back for a while: a watch
 * behind it is late (yet still live, heard within its liveness), as under load or a slow network.
 */
async function holdableRelay(target: string): Promise<{ url: string; hold(ms: number): void; close(): void }> {
  const { hostname, port } = new URL(target);
  const pairs: { client: Socket; server: Socket }[] = [];
  const relay: Server = createServer((client) => {
    const server = tcpConnect(Number(port), hostname);
    client.pipe(server);
    server.pipe(client);
    pairs.push({ client, server });
  });
  await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
  const address = relay.address() as { port: number };
  return {
    url: `nats://127.0.0.1:${address.port}`,
    hold(ms) {
      for (const { server } of pairs) server.pause();
      setTimeout(() => pairs.forEach(({ server }) => server.resume()), ms);
    },
    close() {
      for (const { client, server } of pairs) {
        client.destroy();
        server.destroy();
      }
      relay.close();
    },
  };
}

describe('the poll view', () => {
  it('serves what its gateway wrote from memory at once, and what another wrote once its watch delivers it', async () => {
    const a = await gateway();
    const b = await gateway();
    const { account, apiKey } = await a.store.accounts.create('pv', 100);
    // A has the balance from its own write: no read of the store.
    expect(await a.view.balance(account.id)).toBe(100);
    expect(await viewReads(a, 'balances', 'miss')).toBe(0);
    expect(await b.view.accountOfKey(apiKey)).toBe(account.id);
    expect(await b.view.balance(account.id)).toBe(100);

    const task = pendingTask(account.id, 't_pv1');
    const stored = await a.store.tasks.ensure(task);
    expect(await b.view.task(account.id, task.id)).toEqual(task);
    await a.store.tasks.replace(stored, {
      ...task,
      status: 'completed',
      result: { image_url: 'x' },
      finishedAt: new Date().toISOString(),
    });
    expect((await a.view.task(account.id, task.id))?.status).toBe('completed');
    await waitFor(
      'B to see the completion',
      async () => (await b.view.task(account.id, task.id))?.status === 'completed',
      5_000,
      10,
    );
    // Another account's lookup of the task finds nothing.
    expect(await b.view.task('acct_other', task.id)).toBeNull();

    await a.store.ledger.topup(account.id, 50);
    expect(await a.view.balance(account.id)).toBe(150);
    await waitFor('B to see the top-up', async () => (await b.view.balance(account.id)) === 150, 5_000, 10);

    const keyId = (await a.store.accounts.listKeys(account.id))[0]!.keyId;
    await a.store.accounts.revokeKey(account.id, keyId);
    await waitFor(
      'both to refuse the revoked key',
      async () => (await a.view.accountOfKey(apiKey)) === null && (await b.view.accountOfKey(apiKey)) === null,
      5_000,
      10,
    );
    expect(await viewReads(b, 'tasks', 'hit')).toBeGreaterThan(0);
    expect(await viewReads(b, 'keys', 'hit')).toBeGreaterThan(0);
  }, 60_000);

  it("tells its listeners of every task record: its own writes at once, another gateway's by its watch (how live events learn a task settled)", async () => {
    const a = await gateway();
    const b = await gateway();
    const heardByA: string[] = [];
    const heardByB: string[] = [];
    a.view.onTask((t) => heardByA.push(`${t.id}:${t.status}`));
    b.view.onTask((t) => heardByB.push(`${t.id}:${t.status}`));
    const task = pendingTask('acct_listen', 't_pv_listen');
    const stored = await a.store.tasks.ensure(task);
    await a.store.tasks.replace(stored, {
      ...task,
      status: 'failed',
      error: { code: 'TASK_EXPIRED', message: 'expired' },
      finishedAt: new Date().toISOString(),
    });
    expect(heardByA).toContain('t_pv_listen:failed');
    await waitFor('B to hear the settled record', () => heardByB.includes('t_pv_listen:failed'), 5_000, 10);
    expect(heardByB.filter((h) => h.startsWith('t_pv_listen:'))).toEqual(['t_pv_listen:pending', 't_pv_listen:failed']);
  }, 60_000);

  it('shows a debit made through its gateway at once, however late its watch is (read-your-writes)', async () => {
    const relay = await holdableRelay(fixture.nats().url);
    try {
      const direct = await connect({ servers: fixture.nats().url });
      const watching = await connect({ servers: relay.url });
      connections.push(direct, watching);
      const store = await openStore(direct, PREFIX);
      const metrics = new GatewayMetrics();
      const view = await startPollView(
        {
          nc: watching,
          js: jetstream(watching),
          names: storeNames(PREFIX),
          tasks: store.tasks,
          ledger: store.ledger,
          accounts: store.accounts,
          logger: viewLogger,
          metrics,
        },
        viewLimits,
      );
      views.push(view);
      const { account } = await store.accounts.create('pv-ryw', 100);
      await waitFor(
        'the opening balance in memory',
        async () => (await view.balance(account.id)) === 100 && (await viewReads({ metrics }, 'balances', 'hit')) > 0,
        5_000,
        10,
      );
      // The watch hears nothing for 400 ms (under its liveness of 1.5 s): only the write itself can tell the view.
      relay.hold(400);
      const debit = await store.ledger.debit(account.id, {
        amount: 30,
        taskId: 't_pvryw',
        kind: 'image',
        job: {
          id: 't_pvryw',
          model: 'vendor-image-upscale',
          input: {},
          credits: 30,
          createdAt: new Date().toISOString(),
        },
        extras: {},
      });
      expect(debit.ok).toBe(true);
      expect(await view.balance(account.id)).toBe(70);
    } finally {
      relay.close();
    }
  }, 60_000);

  it('reads the store for every lookup of a family whose watch could not start', async () => {
    const broken = await gateway({ ...storeNames(PREFIX), accountsStream: 'PVTEST_NO_SUCH_STREAM' });
    const { account, apiKey } = await broken.store.accounts.create('pv-broken', 5);
    expect(await broken.view.accountOfKey(apiKey)).toBe(account.id);
    expect(await broken.view.accountOfKey(apiKey)).toBe(account.id);
    expect(await viewReads(broken, 'keys', 'bypass')).toBe(2);
    expect(await viewReads(broken, 'keys', 'hit')).toBe(0);
    expect(await broken.view.accountOfKey('mwk_unknown')).toBeNull();
  }, 60_000);
});
