/**
 * `Idempotency-Key` (IETF httpapi draft "The Idempotency-Key HTTP Header Field"; Stripe's practice):
 * a POST that charges or changes state, sent again with the same key and the same request, gets the
 * first answer again instead of being done twice.
 *
 * - The key is claimed in JetStream (store/idempotency-keys.ts) with a write that expects the
 *   subject's sequence it read, before anything is charged: of any number of requests on any number
 *   of gateways, one wins; the others see its claim.
 * - Same key, same request (route and canonical body: the fingerprint): the stored answer, replayed;
 *   while the first is still being handled, 409 IDEMPOTENCY_KEY_IN_USE (retry later).
 * - Same key, another request: 422 IDEMPOTENCY_KEY_REUSED; nothing is done.
 * - Only 2xx answers are stored. A request that fails changed nothing and gives its key back (the
 *   client may fix the request and send it again under the same key), except a submission whose
 *   debit NATS did not confirm: its key stays bound to its request and task id, so the retry finds
 *   the debit if it was stored, or makes it (ledger.ts `debit` with `onceAfter`). A claim taken over
 *   (below) stays bound too when its request fails: the holder it was taken from may have sent a
 *   debit that lands later, and a key given back then would charge a second task on the next retry.
 * - A claim whose gateway died is taken over when its lease (the request timeout) has run out; the
 *   submission's task id and ledger sequence are kept, so a takeover never charges twice.
 * - An outcome (answer, key given back or opened to a retry) that NATS did not take is written again
 *   in the background until the lease ends: the partition suite found retries told 409 for the rest
 *   of a 30 s lease after their first attempt failed in the elections that follow a heal. A claim
 *   NATS did not confirm is looked for likewise, and released if it was stored after all.
 */
import { createHash } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { sleep } from '../sleep.js';
import { ApiError } from './errors.js';
import { isNatsUnavailable } from './nats-unavailable.js';
import type { IdempotencyKeys, IdempotencyRecord, Reservation } from './store/idempotency-keys.js';
import { WriteConflict } from './store/subject-store.js';

/** The longest key (Stripe's 255). */
export const IDEMPOTENCY_KEY_MAX_LENGTH = 255;

/**
 * The header's value as the key: an sf-string (the draft's form, `"..."`) or the bare token most
 * clients send (Stripe's); 1-255 visible ASCII characters. `undefined` when there is no header.
 */
export function parseIdempotencyKey(header: string | string[] | undefined): string | undefined {
  if (header === undefined) return undefined;
  if (Array.isArray(header)) throw invalidKey('received the header more than once');
  const quoted = /^"(.*)"$/.exec(header.trim());
  const key = quoted === null ? header.trim() : quoted[1]!;
  if (key.length === 0) throw invalidKey('received an empty one');
  if (key.length > IDEMPOTENCY_KEY_MAX_LENGTH) throw invalidKey(`received ${key.length} characters`);
  if (!/^[\x21\x23-\x5b\x5d-\x7e]+$/.test(key))
    throw invalidKey('received a character outside that range (a space, a quote, a backslash or a non-ASCII one)');
  return key;
}

function invalidKey(why: string): ApiError {
  return ApiError.of(
    'INVALID_IDEMPOTENCY_KEY',
    `Expected an Idempotency-Key of 1 to ${IDEMPOTENCY_KEY_MAX_LENGTH} visible ASCII characters (a UUID v4 is best) without quotes or backslashes inside, but ${why}`,
  );
}

/** The request a key is bound to: method, path and the body with its object keys sorted (so field order does not matter). */
export function requestFingerprint(method: string, path: string, body: unknown): string {
  return createHash('sha256')
    .update(JSON.stringify([method.toUpperCase(), path, canonical(body ?? null)]), 'utf8')
    .digest('base64url');
}

function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((k) => [k, canonical((value as Record<string, unknown>)[k])]),
    );
  }
  return value;
}

export type Decision =
  | { action: 'claim'; reservation: Reservation | undefined }
  | { action: 'replay'; status: number; body: unknown }
  | { action: 'reused' }
  | { action: 'in use' };

/** What a request with `fingerprint` does given the key's record (pure). A claim whose lease ran out is taken over with its reservation. */
export function decide(record: IdempotencyRecord | undefined, fingerprint: string, nowMs: number): Decision {
  if (record === undefined || record.state === 'free') return { action: 'claim', reservation: undefined };
  if (record.fingerprint !== fingerprint) return { action: 'reused' };
  if (record.state === 'answered') return { action: 'replay', status: record.status, body: record.body };
  return record.leaseUntil > nowMs ? { action: 'in use' } : { action: 'claim', reservation: record.reservation };
}

/** A key held by this request: `reservation` for a submission; `finish` stores the answer, or gives the key back. */
export interface HeldKey {
  reservation: Reservation | undefined;
  answered(status: number, body: unknown): Promise<void>;
  /**
   * `keepBound`: the request may have charged (an unconfirmed debit); the key stays bound to it, and
   * a retry takes over at once. A key this request took over stays bound whatever it says.
   */
  failed(keepBound: boolean): Promise<void>;
}

export type Acquired = { replay: { status: number; body: unknown } } | { held: HeldKey };

export interface AcquireOptions {
  accountId: string;
  key: string;
  fingerprint: string;
  leaseMs: number;
  /** For a submission: a new task id and the account's last ledger sequence, made once per key. */
  reserve?: () => Promise<Reservation>;
  /** Where a failure to store the answer or give the key back is told (the answer still goes out). */
  warn(message: string, err: unknown): void;
}

/** Rounds of read-then-claim before the key is called in use (each lost round means another request changed it). */
const CLAIM_ROUNDS = 5;

export async function acquireKey(keys: IdempotencyKeys, o: AcquireOptions): Promise<Acquired> {
  for (let round = 0; round < CLAIM_ROUNDS; round++) {
    const current = await keys.get(o.accountId, o.key);
    const decision = decide(current?.value, o.fingerprint, Date.now());
    if (decision.action === 'replay') return { replay: { status: decision.status, body: decision.body } };
    if (decision.action === 'reused') throw reused();
    if (decision.action === 'in use') throw inUse();
    // A reservation taken over may already be charged, or be about to be (its first holder's debit in flight).
    const inherited = decision.reservation !== undefined;
    const reservation = decision.reservation ?? (await o.reserve?.());
    const claim: IdempotencyRecord = {
      state: 'claimed',
      fingerprint: o.fingerprint,
      leaseUntil: Date.now() + o.leaseMs,
      ...(reservation === undefined ? {} : { reservation }),
    };
    let seq: number;
    try {
      seq = await keys.write(o.accountId, o.key, claim, current?.seq ?? 0);
    } catch (err) {
      if (err instanceof WriteConflict) continue;
      // Nothing was charged yet: released as `failed(false)` would.
      if (retryable(err)) releaseIfStored(keys, o, claim, current?.seq ?? 0, failedOutcome(claim, inherited));
      throw err;
    }
    const settle = (record: IdempotencyRecord, what: string) =>
      settleKey(keys, o, { record, seq, what, until: claim.leaseUntil });
    return {
      held: {
        reservation,
        answered: (status, body) =>
          settle(
            { state: 'answered', fingerprint: o.fingerprint, status, body, at: new Date().toISOString() },
            'stored with its answer',
          ),
        failed: (keepBound) => {
          const outcome = failedOutcome(claim, keepBound || inherited);
          return settle(outcome.record, outcome.what);
        },
      },
    };
  }
  throw inUse();
}

/** What a failed request leaves: a key that stays bound (or was taken over) opened to a retry, any other given back. */
function failedOutcome(
  claim: IdempotencyRecord & { state: 'claimed' },
  bound: boolean,
): { record: IdempotencyRecord; what: string } {
  return bound
    ? { record: { ...claim, leaseUntil: 0 }, what: 'opened to a retry' }
    : { record: { state: 'free' }, what: 'given back' };
}

/** First and longest waits between writes of a key's outcome that NATS did not take. */
const SETTLE_RETRY_MS = { first: 250, most: 2000 } as const;

/** Sleeps through each wait between background tries (doubling, from SETTLE_RETRY_MS) that ends before `until`. */
async function* pausesUntil(until: number): AsyncGenerator<void> {
  for (
    let wait: number = SETTLE_RETRY_MS.first;
    Date.now() + wait < until;
    wait = Math.min(wait * 2, SETTLE_RETRY_MS.most)
  ) {
    await sleep(wait);
    yield;
  }
}

/**
 * Writes a key's outcome (its answer, or the key given back or opened to a retry), expecting the
 * claim's sequence: a request that took the key over meanwhile wins, and this write is refused.
 * While NATS does not answer (a partition, the elections after one) the write is tried again in
 * the background until the claim's lease ends, so a retry finds the key open within a second of
 * NATS answering again instead of 409 for the rest of the lease; the answer does not wait for it.
 */
async function settleKey(
  keys: IdempotencyKeys,
  o: AcquireOptions,
  w: { record: IdempotencyRecord; seq: number; what: string; until: number },
): Promise<void> {
  try {
    await keys.write(o.accountId, o.key, w.record, w.seq);
    return;
  } catch (err) {
    if (!retryable(err) || Date.now() >= w.until) return o.warn(`The Idempotency-Key could not be ${w.what}`, err);
    o.warn(
      `The Idempotency-Key could not be ${w.what} yet (NATS did not answer); trying again until its claim's lease ends`,
      err,
    );
  }
  void (async () => {
    for await (const _ of pausesUntil(w.until)) {
      try {
        await keys.write(o.accountId, o.key, w.record, w.seq);
        return;
      } catch (err) {
        // Refused (taken over, or this write landed unconfirmed before): nothing left to do.
        if (!retryable(err)) return;
      }
    }
    o.warn(
      `The Idempotency-Key could not be ${w.what} before its claim's lease ended; a retry takes it over then`,
      undefined,
    );
  })().catch(() => undefined);
}

/**
 * A claim NATS did not confirm may be stored all the same, and would hold the key for its whole
 * lease while the request has already answered 503: every retry told 409 for up to 30 s after the
 * heal (chaos:partitions). So the key is read in the background until the lease ends: once it shows
 * this very claim (its lease to the millisecond and its reservation), it is released as the failed
 * request would have; once it shows anything else at a later sequence, nothing is left to do.
 */
function releaseIfStored(
  keys: IdempotencyKeys,
  o: AcquireOptions,
  claim: IdempotencyRecord & { state: 'claimed' },
  expectSeq: number,
  release: { record: IdempotencyRecord; what: string },
): void {
  void (async () => {
    for await (const _ of pausesUntil(claim.leaseUntil)) {
      const current = await keys.get(o.accountId, o.key).catch(() => undefined);
      if (current === undefined || (current?.seq ?? 0) === expectSeq) continue;
      if (current !== null && isDeepStrictEqual(current.value, claim))
        await settleKey(keys, o, { ...release, seq: current.seq, until: claim.leaseUntil });
      return;
    }
  })().catch(() => undefined);
}

/** NATS did not answer (a refusal, such as a WriteConflict, is not that), and the connection is not closing (a stopping gateway leaves the key to its lease). */
function retryable(err: unknown): boolean {
  return (
    isNatsUnavailable(err) && !(err instanceof Error && /^(ClosedConnection|DrainingConnection)Error$/.test(err.name))
  );
}

function reused(): ApiError {
  return ApiError.of(
    'IDEMPOTENCY_KEY_REUSED',
    'Expected this Idempotency-Key with the request it was first sent with (same path and body) but received another one; nothing was done. Use a new key for a new request.',
  );
}

function inUse(): ApiError {
  return ApiError.of(
    'IDEMPOTENCY_KEY_IN_USE',
    'Expected one request at a time per Idempotency-Key but the first one with this key is still being handled; retry it shortly',
    { 'retry-after': '1' },
  );
}
