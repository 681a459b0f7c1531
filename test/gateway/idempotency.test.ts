/**
 * The pieces of `Idempotency-Key` (src/gateway/idempotency.ts, store/idempotency-keys.ts, the
 * ledger's once-only debit) on a real nats-server, without HTTP: the header's rules, the decision
 * table, a claim whose gateway died taken over with the same task id, a submission whose debit was
 * not confirmed kept bound to its key, and one debit of a task however many writers try.
 */
import { jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  acquireKey,
  decide,
  parseIdempotencyKey,
  requestFingerprint,
  type Acquired,
} from '../../src/gateway/idempotency.js';
import { newTaskId } from '../../src/gateway/ids.js';
import { openStore, type Store } from '../../src/gateway/store/index.js';
import { ensureStoreStreams } from '../../src/gateway/store/streams.js';
import type { Reservation } from '../../src/gateway/store/idempotency-keys.js';
import { startNatsServer, type TestNatsServer } from '../worker/helpers/nats-server.js';

let nats: TestNatsServer;
let nc: NatsConnection;
let store: Store;

beforeAll(async () => {
  nats = await startNatsServer();
  nc = await connect({ servers: nats.url });
  await ensureStoreStreams(await jetstreamManager(nc), 'IDEM');
  store = await openStore(nc, 'IDEM');
});

afterAll(async () => {
  await nc?.close();
  await nats?.close();
});

describe('the Idempotency-Key header', () => {
  it('takes a bare token or an sf-string of 1-255 visible ASCII characters, and refuses anything else with INVALID_IDEMPOTENCY_KEY', () => {
    expect(parseIdempotencyKey(undefined)).toBeUndefined();
    expect(parseIdempotencyKey('8e03978e-40d5-43e8-bc93-6894a57f9324')).toBe('8e03978e-40d5-43e8-bc93-6894a57f9324');
    expect(parseIdempotencyKey('"8e03978e"')).toBe('8e03978e');
    expect(parseIdempotencyKey('k'.repeat(255))).toHaveLength(255);
    for (const bad of ['', '""', 'k'.repeat(256), 'a b', 'a"b', 'a\\b', 'caf\u00e9', ['a', 'b']]) {
      expect(() => parseIdempotencyKey(bad)).toThrow(
        expect.objectContaining({ code: 'INVALID_IDEMPOTENCY_KEY', status: 400 }),
      );
    }
  });

  it('fingerprints method, path and body, whatever the order of object keys', () => {
    const a = requestFingerprint('POST', '/api/v1/generate', { model: 'm', input: { a: 1, b: [1, { c: 2, d: 3 }] } });
    expect(
      requestFingerprint('post', '/api/v1/generate', { input: { b: [1, { d: 3, c: 2 }], a: 1 }, model: 'm' }),
    ).toBe(a);
    expect(
      requestFingerprint('POST', '/api/v1/estimate', { model: 'm', input: { a: 1, b: [1, { c: 2, d: 3 }] } }),
    ).not.toBe(a);
    expect(
      requestFingerprint('POST', '/api/v1/generate', { model: 'm', input: { a: 1, b: [{ c: 2, d: 3 }, 1] } }),
    ).not.toBe(a);
  });
});

describe('decide', () => {
  const reservation = { taskId: 't_1', ledgerSeq: 4 };
  it('claims a new or freed key, replays an answer, refuses another request, waits on a live claim and takes over an expired one', () => {
    expect(decide(undefined, 'f', 0)).toEqual({ action: 'claim', reservation: undefined });
    expect(decide({ state: 'free' }, 'f', 0)).toEqual({ action: 'claim', reservation: undefined });
    expect(decide({ state: 'answered', fingerprint: 'f', status: 202, body: { x: 1 }, at: '' }, 'f', 0)).toEqual({
      action: 'replay',
      status: 202,
      body: { x: 1 },
    });
    expect(decide({ state: 'answered', fingerprint: 'f', status: 202, body: {}, at: '' }, 'g', 0)).toEqual({
      action: 'reused',
    });
    expect(decide({ state: 'claimed', fingerprint: 'f', leaseUntil: 100, reservation }, 'f', 99)).toEqual({
      action: 'in use',
    });
    expect(decide({ state: 'claimed', fingerprint: 'f', leaseUntil: 100, reservation }, 'g', 99)).toEqual({
      action: 'reused',
    });
    expect(decide({ state: 'claimed', fingerprint: 'f', leaseUntil: 100, reservation }, 'f', 100)).toEqual({
      action: 'claim',
      reservation,
    });
    expect(decide({ state: 'claimed', fingerprint: 'f', leaseUntil: 100, reservation }, 'g', 100)).toEqual({
      action: 'reused',
    });
  });
});

describe('claims in JetStream', () => {
  let reserved = 0;
  const acquire = (accountId: string, key: string, leaseMs: number): Promise<Acquired> =>
    acquireKey(store.idempotency, {
      accountId,
      key,
      fingerprint: 'fp',
      leaseMs,
      reserve: async () => {
        reserved += 1;
        return { taskId: newTaskId(), ledgerSeq: (await store.ledger.last(accountId))?.seq ?? 0 };
      },
      warn: (message, err) => {
        throw new Error(`${message}: ${String(err)}`);
      },
    });
  const held = (a: Acquired) => ('held' in a ? a.held : expect.fail('expected the key to be held'));

  it('lets exactly one of 30 concurrent claims win; the others are told it is in use', async () => {
    const results = await Promise.allSettled(Array.from({ length: 30 }, () => acquire('acct_race', 'k1', 60_000)));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const refused = results
      .filter((r): r is PromiseRejectedResult => r.status === 'rejected')
      .map((r) => (r.reason as { code: string }).code);
    expect(new Set(refused)).toEqual(new Set(['IDEMPOTENCY_KEY_IN_USE']));
  });

  it('takes over a claim whose lease ran out with the same task id and ledger sequence, and the old holder can no longer answer for it', async () => {
    reserved = 0;
    const first = held(await acquire('acct_takeover', 'k2', 1));
    await new Promise((resolve) => setTimeout(resolve, 5));
    const second = held(await acquire('acct_takeover', 'k2', 60_000));
    expect(second.reservation).toEqual(first.reservation);
    expect(reserved).toBe(1);
    // The first holder's late answer expects the sequence it claimed at: refused, and told (warn).
    await expect(first.answered(200, { late: true })).rejects.toThrow(/could not be stored/);
    await second.answered(200, { id: second.reservation?.taskId });
    expect(await acquire('acct_takeover', 'k2', 60_000)).toEqual({
      replay: { status: 200, body: { id: second.reservation?.taskId } },
    });
  });

  it('frees the key of a request that changed nothing, and keeps it bound to its task after an unconfirmed debit', async () => {
    reserved = 0;
    const failed = held(await acquire('acct_fail', 'k3', 60_000));
    await failed.failed(false);
    const fresh = held(await acquire('acct_fail', 'k3', 60_000));
    expect(fresh.reservation?.taskId).not.toBe(failed.reservation?.taskId);
    await fresh.failed(true);
    // Bound: open at once to the same request, with the same task id; another request is refused.
    const retry = held(await acquire('acct_fail', 'k3', 60_000));
    expect(retry.reservation).toEqual(fresh.reservation);
    await expect(
      acquireKey(store.idempotency, {
        accountId: 'acct_fail',
        key: 'k3',
        fingerprint: 'other',
        leaseMs: 1,
        warn: () => {},
      }),
    ).rejects.toThrow(expect.objectContaining({ code: 'IDEMPOTENCY_KEY_REUSED', status: 422 }));
    expect(reserved).toBe(2);
  });

  it("keeps a taken-over key bound when its request fails before charging: the first attempt's debit may land later, and the key then charges that task only", async () => {
    const accountId = 'acct_late_debit';
    await store.ledger.open(accountId, 1000);
    const debitOf = (r: Reservation) => ({
      amount: 15,
      taskId: r.taskId,
      kind: 'music' as const,
      job: {
        id: r.taskId,
        model: 'vendor-v5-generate-music',
        input: { prompt: 'x' },
        credits: 15,
        createdAt: new Date().toISOString(),
      },
      extras: {},
    });
    // The first attempt sent its debit, but NATS did not confirm it (a partition): the key stays bound.
    const first = held(await acquire(accountId, 'k5', 60_000));
    await first.failed(true);
    // The client's retry, through another gateway, takes the key over and fails before charging
    // (no worker answered its quote), saying it changed nothing.
    const takeover = held(await acquire(accountId, 'k5', 60_000));
    expect(takeover.reservation).toEqual(first.reservation);
    await takeover.failed(false);
    // The first attempt's debit lands only now (it was on its way, as the partition suite saw).
    expect((await store.ledger.debit(accountId, debitOf(first.reservation!), first.reservation!.ledgerSeq)).ok).toBe(
      true,
    );
    // The next retry charges that same task, found charged: one debit for the key, not two.
    const next = held(await acquire(accountId, 'k5', 60_000));
    expect(next.reservation).toEqual(first.reservation);
    const outcome = await store.ledger.debit(accountId, debitOf(next.reservation!), next.reservation!.ledgerSeq);
    expect(outcome.ok && outcome.entry.taskId).toBe(first.reservation!.taskId);
    expect((await store.ledger.entries(accountId)).filter((e) => e.value.type === 'debit')).toHaveLength(1);
    expect(await store.ledger.balance(accountId)).toBe(1000 - 15);
  });
});

describe('an outcome NATS did not take', () => {
  /** The store, with the next `failures` writes after the claim failing as a partition fails them (no responders). */
  const flaky = (failures: number) => {
    let writes = 0;
    const keys = Object.create(store.idempotency) as typeof store.idempotency;
    keys.write = async (...args) => {
      writes += 1;
      if (writes > 1 && writes <= 1 + failures)
        throw Object.assign(new Error('no responders'), { name: 'NoRespondersError' });
      return store.idempotency.write(...args);
    };
    return keys;
  };
  const acquireWith = (keys: typeof store.idempotency, key: string, warnings: string[] = []) =>
    acquireKey(keys, {
      accountId: 'acct_unanswered',
      key,
      fingerprint: 'fp',
      leaseMs: 60_000,
      reserve: async () => ({ taskId: newTaskId(), ledgerSeq: 0 }),
      warn: (message) => warnings.push(message),
    });
  const eventually = async (what: () => Promise<boolean>) => {
    for (const end = Date.now() + 5000; Date.now() < end; await new Promise((resolve) => setTimeout(resolve, 100)))
      if (await what()) return true;
    return false;
  };

  it('gives the key back once NATS answers again, not after the lease: a retry claims it within seconds instead of 409 for the rest of the lease', async () => {
    const warnings: string[] = [];
    const got = await acquireWith(flaky(3), 'k6', warnings);
    const first = 'held' in got ? got.held : expect.fail('expected the key to be held');
    await first.failed(false);
    expect(warnings).toEqual([expect.stringMatching(/could not be given back yet/)]);
    const claimed = await eventually(
      async () => (await store.idempotency.get('acct_unanswered', 'k6'))?.value.state === 'free',
    );
    expect(claimed, 'the key given back within 5 s').toBe(true);
    const retry = await acquireWith(store.idempotency, 'k6');
    expect('held' in retry && retry.held.reservation?.taskId).not.toBe(first.reservation?.taskId);
  });

  it('opens a bound key to a retry once NATS answers again, keeping its task id, and stores a late answer for replay', async () => {
    const got = await acquireWith(flaky(2), 'k7');
    const first = 'held' in got ? got.held : expect.fail('expected the key to be held');
    await first.failed(true);
    expect(
      await eventually(async () => {
        const r = (await store.idempotency.get('acct_unanswered', 'k7'))?.value;
        return r?.state === 'claimed' && r.leaseUntil === 0;
      }),
    ).toBe(true);
    const retry = await acquireWith(flaky(2), 'k7');
    const second = 'held' in retry ? retry.held : expect.fail('expected the bound key to open to its retry');
    expect(second.reservation).toEqual(first.reservation);
    await second.answered(202, { id: second.reservation?.taskId });
    expect(
      await eventually(async () => (await store.idempotency.get('acct_unanswered', 'k7'))?.value.state === 'answered'),
    ).toBe(true);
    expect(await acquireWith(store.idempotency, 'k7')).toEqual({
      replay: { status: 202, body: { id: first.reservation?.taskId } },
    });
  });

  it('releases a claim NATS stored but did not confirm: a retry claims the key within seconds instead of 409 for the rest of the lease', async () => {
    // The claim lands, and its answer is lost (no responders while the stream elects).
    const keys = Object.create(store.idempotency) as typeof store.idempotency;
    let writes = 0;
    keys.write = async (...args) => {
      const seq = await store.idempotency.write(...args);
      if (++writes === 1) throw Object.assign(new Error('no responders'), { name: 'NoRespondersError' });
      return seq;
    };
    await expect(acquireWith(keys, 'k9')).rejects.toThrow('no responders');
    expect((await store.idempotency.get('acct_unanswered', 'k9'))?.value).toMatchObject({ state: 'claimed' });
    expect(
      await eventually(async () => (await store.idempotency.get('acct_unanswered', 'k9'))?.value.state === 'free'),
      'the key given back within 5 s',
    ).toBe(true);
    expect('held' in (await acquireWith(store.idempotency, 'k9'))).toBe(true);
  });

  it('leaves alone a key that another request claimed after an unconfirmed claim that was not stored', async () => {
    const keys = Object.create(store.idempotency) as typeof store.idempotency;
    keys.write = async () => {
      throw Object.assign(new Error('no responders'), { name: 'NoRespondersError' });
    };
    await expect(acquireWith(keys, 'k10')).rejects.toThrow('no responders');
    const other = await acquireWith(store.idempotency, 'k10');
    expect('held' in other).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect((await store.idempotency.get('acct_unanswered', 'k10'))?.value).toMatchObject({
      state: 'claimed',
      leaseUntil: expect.any(Number),
    });
    expect(await acquireWith(store.idempotency, 'k10').catch((err: unknown) => (err as { code?: string }).code)).toBe(
      'IDEMPOTENCY_KEY_IN_USE',
    );
  });

  it("tries no longer than the claim's lease, and says so; a retry then takes the key over", async () => {
    const warnings: string[] = [];
    const leaseEnds = Date.now() + 700;
    const got = await acquireKey(flaky(1000), {
      accountId: 'acct_unanswered',
      key: 'k8',
      fingerprint: 'fp',
      leaseMs: 700,
      warn: (message) => warnings.push(message),
    });
    const first = 'held' in got ? got.held : expect.fail('expected the key to be held');
    await first.failed(false);
    expect(await eventually(async () => warnings.length === 2)).toBe(true);
    expect(warnings).toEqual([
      expect.stringMatching(/could not be given back yet/),
      expect.stringMatching(/before its claim's lease ended/),
    ]);
    expect((await store.idempotency.get('acct_unanswered', 'k8'))?.value).toMatchObject({ state: 'claimed' });
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, leaseEnds - Date.now()) + 20));
    expect('held' in (await acquireWith(store.idempotency, 'k8'))).toBe(true);
  });
});

describe('a debit once after a ledger sequence', () => {
  it('is written once for a task however many writers try it at once, each told the same entry', async () => {
    const accountId = 'acct_once';
    await store.ledger.open(accountId, 1000);
    const reservation: Reservation = { taskId: newTaskId(), ledgerSeq: (await store.ledger.last(accountId))!.seq };
    const debit = {
      amount: 15,
      taskId: reservation.taskId,
      kind: 'music' as const,
      job: {
        id: reservation.taskId,
        model: 'vendor-v5-generate-music',
        input: { prompt: 'x' },
        credits: 15,
        createdAt: new Date().toISOString(),
      },
      extras: {},
    };
    // Other debits of the account in between are no obstacle.
    const other = { ...debit, taskId: 't_other', job: { ...debit.job, id: 't_other' } };
    const outcomes = await Promise.all([
      ...Array.from({ length: 10 }, () => store.ledger.debit(accountId, debit, reservation.ledgerSeq)),
      store.ledger.debit(accountId, other),
    ]);
    const seqs = new Set(outcomes.slice(0, 10).map((o) => (o.ok ? o.seq : -1)));
    expect(seqs.size).toBe(1);
    const entries = await store.ledger.entries(accountId);
    expect(entries.filter((e) => e.value.type === 'debit' && e.value.taskId === reservation.taskId)).toHaveLength(1);
    expect(await store.ledger.balance(accountId)).toBe(1000 - 30);
    expect((await store.ledger.findDebit(accountId, reservation.taskId, reservation.ledgerSeq))?.seq).toBe(
      [...seqs][0],
    );
  });
});
