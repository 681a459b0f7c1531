/**
 * The credit invariants of src/gateway/store/ledger.ts and service.ts, against a real nats-server
 * (in this process, no HTTP): never below zero, exactly N of many concurrent debits, one refund per
 * failed task whatever repeats, and a debit whose gateway died before publishing still becomes a
 * task and a job (the outbox consumer).
 */
import { jetstream, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureConsumers, startConsumers } from '../../../src/gateway/consumers.js';
import { GatewayMetrics } from '../../../src/gateway/metrics.js';
import { securityEvents } from '../../../src/gateway/security-events.js';
import { resultCheck } from '../../../src/gateway/result-check.js';
import { sweepPendingOnce } from '../../../src/gateway/pending-sweeper.js';
import { quoteGate } from '../../../src/gateway/quote-gate.js';
import { cancelClient } from '../../../src/gateway/cancel-client.js';
import { gatewayService, type GatewayService } from '../../../src/gateway/service.js';
import { openStore, type Store } from '../../../src/gateway/store/index.js';
import { Ledger, LedgerReplicaBehind } from '../../../src/gateway/store/ledger.js';
import { isNatsUnavailable } from '../../../src/gateway/nats-unavailable.js';
import { sleep } from '../../../src/sleep.js';
import { ensureStoreStreams } from '../../../src/gateway/store/streams.js';
import type { DebitEntry } from '../../../src/gateway/store/records.js';
import {
  advisoriesStreamConfig,
  eventsStreamConfig,
  jobsStreamConfig,
  parseProtocolSettings,
  type TerminalEvent,
} from '../../../src/protocol/index.js';
import { waitFor } from '../../worker/helpers/jetstream.js';
import { startNatsServer, type TestNatsServer } from '../../worker/helpers/nats-server.js';

const logger = pino({ level: 'silent' });
const protocol = parseProtocolSettings({});

let nats: TestNatsServer;
let nc: NatsConnection;
let jsm: JetStreamManager;
let store: Store;
let service: GatewayService;

beforeAll(async () => {
  nats = await startNatsServer();
  nc = await connect({ servers: nats.url });
  jsm = await jetstreamManager(nc);
  await jsm.streams.add(jobsStreamConfig(protocol));
  await jsm.streams.add(eventsStreamConfig(protocol));
  await jsm.streams.add(advisoriesStreamConfig(protocol));
  await ensureStoreStreams(jsm, 'GWTEST');
  store = await openStore(nc, 'GWTEST');
  const metrics = new GatewayMetrics();
  service = gatewayService({
    js: jetstream(nc),
    ledger: store.ledger,
    tasks: store.tasks,
    // Fixed prices: this file is about the ledger, not the worker's quote.
    quote: async (job) => ({
      model: job.model,
      creditsUsed: 15,
      input: { custom_mode: false, prompt: 'a song', instrumental: false },
    }),
    quoteGate: quoteGate(1000),
    cancel: cancelClient(nc, 1000),
    metrics,
    security: securityEvents(metrics, pino({ level: 'silent' })),
  });
});

afterAll(async () => {
  await nc?.close();
  await nats?.close();
});

const musicJob = { model: 'vendor-v5-generate-music', input: { prompt: 'a song', instrumental: false } } as const;

function debitOf(taskId: string, amount: number): Omit<DebitEntry, 'balance' | 'at' | 'type'> {
  return {
    amount,
    taskId,
    kind: 'music',
    job: {
      id: taskId,
      model: 'vendor-v5-generate-music',
      input: { prompt: 'x' },
      credits: amount,
      createdAt: new Date().toISOString(),
    },
    extras: {},
  };
}

function failedEvent(taskId: string): TerminalEvent {
  const at = new Date().toISOString();
  return {
    id: taskId,
    model: 'vendor-v5-generate-music',
    status: 'failed',
    result: null,
    creditsUsed: 0,
    refund: true,
    error: { code: 'GENERATION_FAILED', status: 500, message: 'boom' },
    createdAt: at,
    startedAt: at,
    finishedAt: at,
    durationMs: 0,
    attempt: 1,
    worker: 'test',
  };
}

describe('gateway ledger', () => {
  it('accepts exactly 10 of 100 concurrent debits against a balance for 10, and ends at zero', async () => {
    const { account } = await store.accounts.create('race', 150);
    const outcomes = await Promise.all(
      Array.from({ length: 100 }, (_, i) => store.ledger.debit(account.id, debitOf(`race-${i}`, 15))),
    );
    expect(outcomes.filter((o) => o.ok)).toHaveLength(10);
    expect(await store.ledger.balance(account.id)).toBe(0);
    const entries = await store.ledger.entries(account.id);
    expect(entries.map((e) => e.value.type)).toEqual(['open', ...Array<string>(10).fill('debit')]);
    // Each entry's balance is the previous one minus its amount: no lost update.
    for (let i = 1; i < entries.length; i++)
      expect(entries[i]!.value.balance).toBe(entries[i - 1]!.value.balance - entries[i]!.value.amount);
  });

  it('never goes below zero: a debit over the balance is refused and writes nothing', async () => {
    const { account } = await store.accounts.create('poor', 10);
    const outcome = await store.ledger.debit(account.id, debitOf('poor-1', 15));
    expect(outcome).toEqual({ ok: false, balance: 10 });
    expect((await store.ledger.entries(account.id)).map((e) => e.value.type)).toEqual(['open']);
  });

  it('refunds a task once, even when 10 refunds of it race and when asked again later', async () => {
    const { account } = await store.accounts.create('refund', 100);
    const debit = await store.ledger.debit(account.id, debitOf('refund-1', 40));
    if (!debit.ok) throw new Error('debit refused');
    await store.ledger.topup(account.id, 5); // an unrelated entry between debit and refund
    const wrote = await Promise.all(
      Array.from({ length: 10 }, () =>
        store.ledger.refundOnce(account.id, 'refund-1', 40, debit.seq, 'GENERATION_FAILED'),
      ),
    );
    expect(wrote.filter(Boolean)).toHaveLength(1);
    expect(await store.ledger.refundOnce(account.id, 'refund-1', 40, debit.seq, 'GENERATION_FAILED')).toBe(false);
    expect(await store.ledger.balance(account.id)).toBe(105);
  });

  it('settles a failure event once: the same event again, or concurrently, changes nothing', async () => {
    const { account } = await store.accounts.create('settle', 30);
    const accepted = await service.submit(account.id, musicJob as never, 'generate', logger);
    const taskId = accepted['id'] as string;
    expect(await store.ledger.balance(account.id)).toBe(15);
    const results = await Promise.all([
      service.settle(failedEvent(taskId), logger),
      service.settle(failedEvent(taskId), logger),
    ]);
    expect(results.sort()).toEqual(['already settled', 'failed']);
    expect(await service.settle(failedEvent(taskId), logger)).toBe('already settled');
    expect(await store.ledger.balance(account.id)).toBe(30);
    const task = await store.tasks.get(account.id, taskId);
    expect(task?.value).toMatchObject({ status: 'failed', error: { code: 'GENERATION_FAILED' }, creditsRefunded: 15 });
    expect((await store.ledger.entries(account.id)).filter((e) => e.value.type === 'refund')).toHaveLength(1);
  });

  it("expires a task pending past its kind's lifetime: failed TASK_EXPIRED, refunded once, and a worker finishing it later changes nothing", async () => {
    const { account } = await store.accounts.create('expiry', 30);
    const accepted = await service.submit(account.id, musicJob as never, 'generate', logger);
    const taskId = accepted['id'] as string;
    expect(await store.ledger.balance(account.id)).toBe(15);
    const deps = {
      jsm,
      names: store.names,
      service,
      lifetimesMs: { image: 60_000, video: 60_000, lipsync: 60_000, music: 5_000, 'music-video': 60_000 },
      logger,
    };
    // Not yet: 1 s after submission.
    const early = await sweepPendingOnce(deps, 1, Date.now() + 1000);
    expect(early.expired).toBe(0);
    expect((await store.tasks.get(account.id, taskId))?.value.status).toBe('pending');
    // 6 s later, two gateways sweeping at once.
    const later = Date.now() + 6000;
    const passes = await Promise.all([sweepPendingOnce(deps, early.nextSeq, later), sweepPendingOnce(deps, 1, later)]);
    expect(passes.map((p) => p.expired).sort()).toEqual([0, 1]);
    const task = await store.tasks.get(account.id, taskId);
    expect(task?.value).toMatchObject({
      status: 'failed',
      error: { code: 'TASK_EXPIRED', message: expect.stringContaining('5 s') },
      creditsRefunded: 15,
    });
    expect(await store.ledger.balance(account.id)).toBe(30);
    // The worker finishes it after all: the task stays failed and refunded, charged nothing.
    const done = {
      ...failedEvent(taskId),
      status: 'completed' as const,
      result: { songs: [] },
      error: undefined,
      refund: undefined,
    };
    expect(await service.settle(done, logger)).toBe('already settled');
    expect(await store.ledger.balance(account.id)).toBe(30);
    expect((await store.ledger.entries(account.id)).filter((e) => e.value.type === 'refund')).toHaveLength(1);
  });

  it("pages an account's history by place, newest first, each page reading only its own places", async () => {
    const { account } = await store.accounts.create('history', 15 * 25);
    const ids: string[] = [];
    for (let i = 0; i < 25; i++)
      ids.push((await service.submit(account.id, musicJob as never, 'generate', logger))['id'] as string);
    expect((await store.ledger.last(account.id))?.value.debits).toBe(25);
    const first = await store.tasks.pageByPlace(account.id, 26, 10);
    expect(first).toEqual({ ids: ids.slice(15).reverse(), next: 16 });
    const second = await store.tasks.pageByPlace(account.id, first.next!, 10);
    expect(second).toEqual({ ids: ids.slice(5, 15).reverse(), next: 6 });
    const last = await store.tasks.pageByPlace(account.id, second.next!, 10);
    expect(last).toEqual({ ids: ids.slice(0, 5).reverse(), next: null });
  });

  it('completes a debit whose gateway died before creating the task and publishing the job (outbox)', async () => {
    const { account } = await store.accounts.create('crash', 50);
    // What a gateway killed right after the debit leaves behind: a debit, no task, no job.
    const debit = await store.ledger.debit(account.id, debitOf('crash-1', 15));
    expect(debit.ok).toBe(true);
    expect(await store.tasks.get(account.id, 'crash-1')).toBeNull();
    const names = {
      eventsStream: protocol.eventsStream,
      claimsStream: protocol.claimsStream,
      jobsStream: protocol.jobsStream,
      advisoriesStream: protocol.advisoriesStream,
      consumerPrefix: 'gwtest',
      names: store.names,
    };
    await ensureConsumers(jsm, names);
    const metrics = new GatewayMetrics();
    const loops = await startConsumers(
      jetstream(nc),
      names,
      service,
      metrics,
      logger,
      resultCheck('https://results.test/', securityEvents(metrics, logger)),
    );
    try {
      const task = await waitFor('the task', () => store.tasks.get(account.id, 'crash-1').then((t) => t ?? undefined));
      expect(task.value).toMatchObject({ status: 'pending', creditsUsed: 15, kind: 'music' });
      const job = await waitFor('the job', () =>
        jsm.streams
          .getMessage(protocol.jobsStream, { last_by_subj: 'media.jobs.music.vendor-v5-generate-music' })
          .catch(() => undefined),
      );
      expect(job?.json()).toMatchObject({ id: expect.any(String), model: 'vendor-v5-generate-music', credits: 15 });
      expect(await store.tasks.owner('crash-1')).toBe(account.id);
    } finally {
      await loops.stop();
    }
  });

  describe('with read replicas behind the leader', () => {
    // A store whose ledger forgets message ids after 1 s, so only the ledger's scan can find an
    // earlier debit of the task (as for a retry hours later with the same Idempotency-Key).
    let lagStore: Store;
    beforeAll(async () => {
      await ensureStoreStreams(jsm, 'GWLAG');
      lagStore = await openStore(nc, 'GWLAG');
      const info = await jsm.streams.info(lagStore.names.ledgerStream);
      await jsm.streams.update(lagStore.names.ledgerStream, { ...info.config, duplicate_window: 1_000_000_000 });
    });

    /** The store's ledger read through direct gets that end before `fromSeq` while `behind()` (a replica behind the leader). */
    function laggingLedger(fromSeq: number, behind: () => boolean): Ledger {
      const lagging = new Proxy(jsm, {
        get(target, prop, receiver) {
          if (prop !== 'direct') return Reflect.get(target, prop, receiver);
          return {
            getMessage: async (stream: string, query: { seq: number; next_by_subj: string }) => {
              const msg = await jsm.direct.getMessage(stream, query);
              return msg !== null && msg.seq >= fromSeq && behind() ? null : msg;
            },
          };
        },
      });
      return new Ledger(lagging, jetstream(nc), lagStore.names);
    }

    async function chargedAccount(name: string): Promise<{ accountId: string; openSeq: number; debitSeq: number }> {
      const { account } = await lagStore.accounts.create(name, 100);
      const openSeq = (await lagStore.ledger.entries(account.id))[0]!.seq;
      const debit = await lagStore.ledger.debit(account.id, debitOf(`${name}-1`, 15));
      if (!debit.ok) throw new Error('debit refused');
      await lagStore.ledger.topup(account.id, 1); // the account's last entry is not the debit
      await sleep(1_200); // past the duplicate window
      return { accountId: account.id, openSeq, debitSeq: debit.seq };
    }

    it('does not charge a task twice when the replica answering the scan has not got its debit yet', async () => {
      const { accountId, openSeq, debitSeq } = await chargedAccount('lag');
      let behind = true;
      setTimeout(() => (behind = false), 300);
      const again = await laggingLedger(debitSeq, () => behind).debit(accountId, debitOf('lag-1', 15), openSeq);
      expect(again).toMatchObject({ ok: true, seq: debitSeq });
      expect(await lagStore.ledger.balance(accountId)).toBe(86);
    });

    it('answers "NATS unavailable" (a 503), charging nothing, while the replicas stay behind', async () => {
      const { accountId, openSeq, debitSeq } = await chargedAccount('lagging');
      const failure = await laggingLedger(debitSeq, () => true)
        .debit(accountId, debitOf('lagging-1', 15), openSeq)
        .catch((err: unknown) => err);
      expect(failure).toBeInstanceOf(LedgerReplicaBehind);
      expect(isNatsUnavailable(failure)).toBe(true);
      expect(await lagStore.ledger.balance(accountId)).toBe(86);
    });

    it('refunds a task once when the replica answering the scan has not got its refund yet', async () => {
      const { accountId, debitSeq } = await chargedAccount('lagrefund');
      expect(await lagStore.ledger.refundOnce(accountId, 'lagrefund-1', 15, debitSeq, 'GENERATION_FAILED')).toBe(true);
      const refundSeq = (await lagStore.ledger.last(accountId))!.seq;
      await lagStore.ledger.topup(accountId, 1);
      await sleep(1_200);
      let behind = true;
      setTimeout(() => (behind = false), 300);
      expect(
        await laggingLedger(refundSeq, () => behind).refundOnce(
          accountId,
          'lagrefund-1',
          15,
          debitSeq,
          'GENERATION_FAILED',
        ),
      ).toBe(false);
      expect(await lagStore.ledger.balance(accountId)).toBe(102);
    });
  });
});
