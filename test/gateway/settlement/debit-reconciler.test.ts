/**
 * A debit never stays without its task and job (src/gateway/settlement/debit-reconciler.ts): on a real
 * nats-server, a debit whose request and outbox both failed to write its task record (what
 * nats-server 2.10's skipped redeliveries can leave after a partition) is found once it is older
 * than the grace and handed to `materialise`; a debit with its task, a young one, and one already
 * read are not. A pending task's job is published again under its message id, stored only when the
 * jobs stream held no copy, and not at all once the debit is too old for the stream to drop a copy.
 */
import { jetstream, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  REPUBLISH_MARGIN_MS,
  reconcileDebitsOnce,
  startDebitReconciler,
} from '../../../src/gateway/settlement/debit-reconciler.js';
import { taskFromDebit } from '../../../src/gateway/service.js';
import { openStore, type Store } from '../../../src/gateway/store/index.js';
import type { DebitEntry } from '../../../src/gateway/store/records.js';
import { ensureStoreStreams } from '../../../src/gateway/store/streams.js';
import { musicDebit } from '../helpers/music-debit.js';
import { startNatsServer, type TestNatsServer } from '../../worker/helpers/nats-server.js';

let nats: TestNatsServer;
let nc: NatsConnection;
let jsm: JetStreamManager;
let store: Store;
const accountId = 'acct_orphans';

beforeAll(async () => {
  nats = await startNatsServer();
  nc = await connect({ servers: nats.url });
  jsm = await jetstreamManager(nc);
  await ensureStoreStreams(jsm, 'RECON');
  // A jobs stream as the worker's (its server-default duplicate window, 2 min).
  await jsm.streams.add({ name: 'RECON_JOBS', subjects: ['recon.jobs.>'] });
  store = await openStore(nc, 'RECON');
  await store.ledger.open(accountId, 1000);
});

afterAll(async () => {
  await nc?.close();
  await nats?.close();
});

const debit = () => musicDebit(store.ledger, accountId);

const jobsHeld = async (taskId: string) => {
  let n = 0;
  for (let seq = 1; ; seq++) {
    const msg = await jsm.streams.getMessage('RECON_JOBS', { seq, next_by_subj: 'recon.jobs.>' } as never);
    if (msg === null) return n;
    if (msg.header.get('Nats-Msg-Id') === taskId) n += 1;
    seq = msg.seq;
  }
};

describe('debits without a task', () => {
  const made: string[] = [];
  // As the service's publishJob, on a stream of the test's own.
  const publishJob = async (entry: DebitEntry) => ({
    duplicate: (
      await jetstream(nc).publish(`recon.jobs.${entry.kind}`, JSON.stringify(entry.job), { msgID: entry.taskId })
    ).duplicate,
  });
  const deps = (jobsDuplicateWindowMs = 120_000) => ({
    jobsDuplicateWindowMs,
    jsm,
    names: store.names,
    tasks: store.tasks,
    // As the outbox does: the task made and its job published.
    service: {
      materialise: async (account: string, entry: DebitEntry, seq: number) => {
        made.push(entry.taskId);
        await store.tasks.ensure(taskFromDebit(account, entry, seq), entry.debits);
        await publishJob(entry);
      },
      publishJob,
    },
    logger: { info: () => undefined, warn: () => undefined },
  });

  it('makes the task of a debit that has none once it is older than the grace, and only that one, once', async () => {
    const withTask = await debit();
    // Its task settled (a pending one's job would be published again: the next test).
    const settledTask = await store.tasks.ensure(
      taskFromDebit(accountId, withTask.entry, withTask.seq),
      withTask.entry.debits,
    );
    await store.tasks.replace(settledTask, { ...settledTask.value, status: 'completed' });
    const orphan = await debit();
    const young = await debit();
    const youngAt = (await jsm.direct.getMessage(store.names.ledgerStream, { seq: young.seq }))!.time.getTime();

    // The grace reaches to just before the young debit: it is left, and the next pass starts at it.
    const first = await reconcileDebitsOnce(deps(), 1, youngAt + 999, 1000);
    expect(made).toEqual([orphan.entry.taskId]);
    expect((await store.tasks.get(accountId, orphan.entry.taskId))?.value.status).toBe('pending');
    expect(first.repaired).toBe(1);
    expect(first.nextSeq).toBe(young.seq);

    // Later, the young one is old enough; nothing read before is read again.
    const second = await reconcileDebitsOnce(deps(), first.nextSeq, youngAt + 5000, 1000);
    expect(made).toEqual([orphan.entry.taskId, young.entry.taskId]);
    expect(second.nextSeq).toBe(young.seq + 1);
    expect((await reconcileDebitsOnce(deps(), 1, youngAt + 5000, 1000)).repaired).toBe(0);
  });

  it('started, reads what the ledger gets from then on, not the debits before it', async () => {
    made.length = 0;
    const before = await debit();
    const reconciler = startDebitReconciler(deps(), { intervalMs: 50, graceMs: 100 });
    await new Promise((resolve) => setTimeout(resolve, 100));
    const after = await debit();
    for (const end = Date.now() + 5000; !made.includes(after.entry.taskId) && Date.now() < end;)
      await new Promise((resolve) => setTimeout(resolve, 50));
    await reconciler.stop();
    expect(made).toEqual([after.entry.taskId]);
    // Orphaned too, but older than this gateway: the outbox's.
    expect(made).not.toContain(before.entry.taskId);
  });

  it("publishes a pending task's job again when the jobs stream has no copy, and only while a copy would be dropped", async () => {
    made.length = 0;
    const fromSeq = (await jsm.streams.info(store.names.ledgerStream)).state.last_seq + 1;
    const withJob = await debit();
    const withoutJob = await debit();
    const settled = await debit();
    for (const d of [withJob, withoutJob, settled])
      await store.tasks.ensure(taskFromDebit(accountId, d.entry, d.seq), d.entry.debits);
    await jetstream(nc).publish('recon.jobs.music', JSON.stringify(withJob.entry.job), { msgID: withJob.entry.taskId });
    const current = (await store.tasks.get(accountId, settled.entry.taskId))!;
    await store.tasks.replace(current, { ...current.value, status: 'completed' });
    const lastAt = (await jsm.direct.getMessage(store.names.ledgerStream, { seq: settled.seq }))!.time.getTime();

    // Too old for the stream to drop a copy (a window of margin + 1 s, the debits 1 s old): nothing published.
    expect((await reconcileDebitsOnce(deps(REPUBLISH_MARGIN_MS + 1000), fromSeq, lastAt + 1000, 500)).repaired).toBe(0);
    expect(await jobsHeld(withoutJob.entry.taskId)).toBe(0);

    const pass = await reconcileDebitsOnce(deps(), fromSeq, lastAt + 1000, 500);
    expect(pass).toEqual({ nextSeq: settled.seq + 1, repaired: 1 });
    expect(made).toEqual([]);
    expect(await jobsHeld(withoutJob.entry.taskId)).toBe(1);
    expect(await jobsHeld(withJob.entry.taskId)).toBe(1);
    expect(await jobsHeld(settled.entry.taskId)).toBe(0);
    // Again: every copy is there, nothing more is stored.
    expect((await reconcileDebitsOnce(deps(), fromSeq, lastAt + 1000, 500)).repaired).toBe(0);
    expect(await jobsHeld(withoutJob.entry.taskId)).toBe(1);
  });
});
