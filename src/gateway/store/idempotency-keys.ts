/**
 * Each `Idempotency-Key` of an account, one subject each in `<P>_IDEMPOTENCY` (streams.ts): the
 * latest of its states, every change a publish that expects the sequence it read, so two gateways
 * claiming one key at once cannot both win (the first write to an empty subject is the claim).
 */
import { createHash } from 'node:crypto';
import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import { z } from 'zod';
import type { StoreNames } from './streams.js';
import { readLast, writeIf, type Versioned } from './subject-store.js';

/**
 * What a claim reserves before anything is charged: the task id the submission will have and the
 * account's last ledger sequence, after which its one debit is looked for. Kept for the key's whole
 * life, so any retry, on any gateway, charges that same task at most once (ledger.ts `debitOnce`).
 */
export const reservationSchema = z.object({ taskId: z.string(), ledgerSeq: z.number().int().nonnegative() });
export type Reservation = z.infer<typeof reservationSchema>;

export const idempotencyRecordSchema = z.discriminatedUnion('state', [
  /** Being handled until `leaseUntil` (ms since epoch); after it another request may take it over. */
  z.object({
    state: z.literal('claimed'),
    fingerprint: z.string(),
    leaseUntil: z.number(),
    reservation: reservationSchema.optional(),
  }),
  /** Answered: the answer replayed to the same request. */
  z.object({
    state: z.literal('answered'),
    fingerprint: z.string(),
    status: z.number().int(),
    body: z.unknown(),
    at: z.string(),
  }),
  /** Given back by a request that changed nothing: the key is as new. */
  z.object({ state: z.literal('free') }),
]);
export type IdempotencyRecord = z.infer<typeof idempotencyRecordSchema>;

export class IdempotencyKeys {
  constructor(
    private readonly jsm: JetStreamManager,
    private readonly js: JetStreamClient,
    private readonly names: StoreNames,
  ) {}

  get(accountId: string, key: string): Promise<Versioned<IdempotencyRecord> | null> {
    return readLast(this.jsm, this.names.idempotencyStream, this.subject(accountId, key), idempotencyRecordSchema);
  }

  /** Writes `record` if the key's last sequence is still `expectSeq` (0: never used); a WriteConflict otherwise. Returns the new sequence. */
  async write(accountId: string, key: string, record: IdempotencyRecord, expectSeq: number): Promise<number> {
    return (await writeIf(this.js, this.subject(accountId, key), record, expectSeq)).seq;
  }

  /** The key is hashed: any characters the header allows make a subject token, and keys are not stored in clear. */
  private subject(accountId: string, key: string): string {
    return this.names.idempotencySubject(accountId, createHash('sha256').update(key, 'utf8').digest('base64url'));
  }
}
