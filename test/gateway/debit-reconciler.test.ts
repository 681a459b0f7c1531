/**
 * A debit never stays without its task (src/gateway/debit-reconciler.ts): on a real nats-server, a
 * debit whose request and outbox both failed to write its task record (what nats-server 2.10's
 * skipped redeliveries can leave after a partition) is found once it is older than the grace and
 * handed to `materialise`; a debit with its task, a young one, and one already read are not.
 */
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reconcileDebitsOnce, startDebitReconciler } from '../../src/gateway/debit-reconciler.js';
import { newTaskId } from '../../src/gateway/ids.js';
import { taskFromDebit } from '../../src/gateway/service.js';
import { openStore, type Store } from '../../src/gateway/store/index.js';
import type { DebitEntry } from '../../src/gateway/store/records.js';
import { ensureStoreStreams } from '../../src/gateway/store/streams.js';
import { startNatsServer, type TestNatsServer } from '../worker/helpers/nats-server.js';

let nats: TestNatsServer;
let nc: NatsConnection;
let jsm: JetStreamManager;
let store: Store;

beforeAll(async () => {
  nats = await startNatsServer();
  nc = await connect({ servers: nats.url });
  jsm = await jetstreamManager(nc);
  await ensureStoreStreams(jsm, 'RECON');
  store = await openStore(nc, 'RECON');
});

afterAll(async () => {
  await nc?.close();
  await nats?.close();
});

const accountId = 'acct_orphans';

/** A debit of 15 credits for a new task; its ledger sequence and entry. */
async function debit(): Promise<{ seq: number; entry: DebitEntry }> {
  const taskId = newTaskId();
  const outcome = await store.ledger.debit(accountId, {
    amount: 15,
    taskId,
    kind: 'music',
    job: { id: taskId, model: 'vendor-v5-generate-music', input: { prompt: 'x' }, credits: 15, createdAt: new Date().toISOString() },
    extras: {},
  });
  if (!outcome.ok) throw new Error('the test account ran out of credits');
  return { seq: outcome.seq, entry: outcome.entry };
}

describe('debits without a task', () => {
  const made: string[] = [];
  const deps = () => ({
    jsm,
    names: store.names,
    tasks: store.tasks,
    // As the outbox does: the task made (the job's publish is the service's, not tested here).
    service: {
      materialise: async (account: string, entry: DebitEntry, seq: number) => {
        made.push(entry.taskId);
        await store.tasks.ensure(taskFromDebit(account, entry, seq), entry.debits);
      },
    },
    logger: { info: () => undefined, warn: () => undefined },
  });

  it('makes the task of a debit that has none once it is older than the grace, and only that one, once', async () => {
    await store.ledger.open(accountId, 1000);
    const withTask = await debit();
    await store.tasks.ensure(taskFromDebit(accountId, withTask.entry, withTask.seq), withTask.entry.debits);
    const orphan = await debit();
    const young = await debit();
    const youngAt = (await jsm.direct.getMessage(store.names.ledgerStream, { seq: young.seq }))!.time.getTime();

    // The grace reaches to just before the young debit: it is left, and the next pass starts at it.
    const first = await reconcileDebitsOnce(deps(), 1, youngAt + 999, 1000);
    expect(made).toEqual([orphan.entry.taskId]);
    expect((await store.tasks.get(accountId, orphan.entry.taskId))?.value.status).toBe('pending');
    expect(first.made).toBe(1);
    expect(first.nextSeq).toBe(young.seq);

    // Later, the young one is old enough; nothing read before is read again.
    const second = await reconcileDebitsOnce(deps(), first.nextSeq, youngAt + 5000, 1000);
    expect(made).toEqual([orphan.entry.taskId, young.entry.taskId]);
    expect(second.nextSeq).toBe(young.seq + 1);
    expect((await reconcileDebitsOnce(deps(), 1, youngAt + 5000, 1000)).made).toBe(0);
  });

  it('started, reads what the ledger gets from then on, not the debits before it', async () => {
    made.length = 0;
    const before = await debit();
    const reconciler = startDebitReconciler(deps(), { intervalMs: 50, graceMs: 100 });
    await new Promise((resolve) => setTimeout(resolve, 100));
    const after = await debit();
    for (const end = Date.now() + 5000; !made.includes(after.entry.taskId) && Date.now() < end; ) await new Promise((resolve) => setTimeout(resolve, 50));
    await reconciler.stop();
    expect(made).toEqual([after.entry.taskId]);
    // Orphaned too, but older than this gateway: the outbox's.
    expect(made).not.toContain(before.entry.taskId);
  });
});
