/**
 * The credit ledger: one subject per account, each entry the balance after it. Invariants (proved
 * by test/gateway/store/ledger.test.ts):
 *
 * 1. The balance never goes below zero: a debit is written only if the balance it read covers it,
 *    and only if no entry was added since it read (expected last subject sequence). Concurrent
 *    debits serialise on the subject: of 100 debits against a balance for 10, exactly 10 succeed.
 * 2. A task is refunded at most once: a refund is written only if no refund of the task exists
 *    after its debit, with the same optimistic check, so two gateways handling the same failure
 *    event cannot both write one; its message id (`refund:<task>:<expected sequence>`) makes a
 *    publish sent again after a lost answer a no-op.
 * 3. Every debit names its task and carries its job (the outbox, see ../service.ts), and is
 *    stored once: sent again after a lost answer, its message id makes it a duplicate.
 */
import type { JetStreamClient, JetStreamManager, PubAck } from '@nats-io/jetstream';
import { ledgerEntrySchema, type DebitEntry, type LedgerEntry } from './records.js';
import type { StoreNames } from './streams.js';
import { sleep } from '../../sleep.js';
import { KeyedQueue } from './keyed-queue.js';
import { WriteConflict, readLast, writeIf, type Versioned } from './subject-store.js';

const MAX_CONFLICT_RETRIES = 1000;
/** Waits for a replica behind the stream's leader to catch up (about a leader's election in all). */
const REPLICA_CATCH_UP_WAITS_MS = [20, 50, 100, 250, 500, 1000, 2000];

/** Read replicas stayed behind the leader: NATS is not answering consistently yet (a 503, not a 500). */
export class LedgerReplicaBehind extends Error {
  override readonly name = 'LedgerReplicaBehind';
}

export type DebitOutcome = { ok: true; seq: number; entry: DebitEntry } | { ok: false; balance: number };

export class Ledger {
  /** This process's writes to one account, one at a time (keyed-queue.ts says why). */
  private readonly writes = new KeyedQueue();
  private readonly listeners: ((accountId: string, seq: number, entry: LedgerEntry) => void)[] = [];

  constructor(
    private readonly jsm: JetStreamManager,
    private readonly js: JetStreamClient,
    private readonly names: StoreNames,
  ) {}

  /** Called with every entry this process writes, once stored (the poll view's read-your-writes). */
  onWrite(listener: (accountId: string, seq: number, entry: LedgerEntry) => void): void {
    this.listeners.push(listener);
  }

  async last(accountId: string): Promise<Versioned<LedgerEntry> | null> {
    return readLast(this.jsm, this.names.ledgerStream, this.names.ledgerSubject(accountId), ledgerEntrySchema);
  }

  async balance(accountId: string): Promise<number | null> {
    return (await this.last(accountId))?.value.balance ?? null;
  }

  /** The first entry of an account: its balance starts at `amount`. Fails if the account has entries. */
  async open(accountId: string, amount: number): Promise<void> {
    const entry: LedgerEntry = { type: 'open', amount, balance: amount, at: now(), debits: 0 };
    this.written(accountId, await writeIf(this.js, this.names.ledgerSubject(accountId), entry, 0), entry);
  }

  async topup(accountId: string, amount: number, note?: string): Promise<number> {
    return this.retry(accountId, async () => {
      const last = await this.mustLast(accountId);
      const entry: LedgerEntry = {
        type: 'topup',
        amount,
        balance: last.value.balance + amount,
        at: now(),
        ...(note === undefined ? {} : { note }),
        ...carried(last.value),
      };
      this.written(accountId, await writeIf(this.js, this.names.ledgerSubject(accountId), entry, last.seq), entry);
      return entry.balance;
    });
  }

  /**
   * Deducts `debit.amount` if the balance covers it; the entry's `balance` is filled in here. With
   * `onceAfter` (a sequence of the account's ledger), a debit of the same task after it is the
   * outcome instead of a second one: it is looked for between the read and the write that expects
   * the read's sequence, so two writers of one task cannot both debit (an Idempotency-Key's retries).
   */
  async debit(
    accountId: string,
    debit: Omit<DebitEntry, 'balance' | 'at' | 'type' | 'debits'>,
    onceAfter?: number,
  ): Promise<DebitOutcome> {
    return this.retry(accountId, async () => {
      const last = await this.mustLast(accountId);
      if (onceAfter !== undefined) {
        const earlier = await this.findDebit(accountId, debit.taskId, onceAfter, last.seq);
        if (earlier !== null) return { ok: true, seq: earlier.seq, entry: earlier.value };
      }
      if (last.value.balance < debit.amount) return { ok: false, balance: last.value.balance };
      const counted = last.value.debits === undefined ? {} : { debits: last.value.debits + 1 };
      const entry: DebitEntry = {
        type: 'debit',
        ...debit,
        balance: last.value.balance - debit.amount,
        at: debit.job.createdAt,
        ...counted,
      };
      const ack = this.written(
        accountId,
        await writeIf(this.js, this.names.ledgerSubject(accountId), entry, last.seq, `debit:${debit.taskId}`),
        entry,
      );
      return { ok: true, seq: ack.seq, entry };
    });
  }

  /**
   * Gives back `amount` for `taskId` unless a refund of that task already follows its debit
   * (`debitSeq`). Returns whether this call wrote it.
   */
  async refundOnce(
    accountId: string,
    taskId: string,
    amount: number,
    debitSeq: number,
    reason: string,
  ): Promise<boolean> {
    return this.retry(accountId, async () => {
      const last = await this.mustLast(accountId);
      if (await this.findRefund(accountId, taskId, debitSeq, last.seq)) return false;
      const entry: LedgerEntry = {
        type: 'refund',
        taskId,
        amount,
        balance: last.value.balance + amount,
        at: now(),
        reason,
        ...carried(last.value),
      };
      const ack = this.written(
        accountId,
        await writeIf(this.js, this.names.ledgerSubject(accountId), entry, last.seq, `refund:${taskId}`),
        entry,
      );
      return !ack.duplicate;
    });
  }

  /** Entries of an account from oldest to newest, after sequence `afterSeq`, at most `limit`. */
  async entries(accountId: string, afterSeq = 0, limit = 1000): Promise<Versioned<LedgerEntry>[]> {
    const out: Versioned<LedgerEntry>[] = [];
    let seq = afterSeq + 1;
    const subject = this.names.ledgerSubject(accountId);
    while (out.length < limit) {
      // null only for "no such message"; any other failure rejects, so a scan never mistakes an
      // unreachable server for "no refund yet".
      const msg = await this.jsm.direct.getMessage(this.names.ledgerStream, { seq, next_by_subj: subject });
      if (msg === null) break;
      out.push({ seq: msg.seq, value: ledgerEntrySchema.parse(msg.json()) });
      seq = msg.seq + 1;
    }
    return out;
  }

  /** The debit of `taskId` after sequence `afterSeq`, if any (an Idempotency-Key's task, charged by an earlier attempt). */
  async findDebit(
    accountId: string,
    taskId: string,
    afterSeq: number,
    lastSeq?: number,
  ): Promise<{ seq: number; value: DebitEntry } | null> {
    const until = lastSeq ?? (await this.last(accountId))?.seq ?? 0;
    let found: { seq: number; value: DebitEntry } | null = null;
    await this.scan(accountId, afterSeq, until, (e) => {
      if (e.value.type === 'debit' && e.value.taskId === taskId) found = { seq: e.seq, value: e.value };
      return found !== null;
    });
    return found;
  }

  /**
   * Calls `hit` on the entries after `afterSeq` up to `lastSeq`, a page at a time, until it says
   * true; whether it did. `lastSeq` is an entry of the account that the stream's leader answered,
   * while the pages come from any replica (direct get), which may be behind the leader (after a
   * partition, say): answers that end before `lastSeq` are asked again, and never taken for "not
   * there", or a debit or refund that exists would be written a second time.
   */
  private async scan(
    accountId: string,
    afterSeq: number,
    lastSeq: number,
    hit: (e: Versioned<LedgerEntry>) => boolean,
  ): Promise<boolean> {
    let after = afterSeq;
    while (after < lastSeq) {
      const page = await this.pageUpTo(accountId, after, lastSeq);
      if (page.some(hit)) return true;
      after = page[page.length - 1]!.seq;
    }
    return false;
  }

  /** A non-empty page after `after`, which a replica behind the leader may take a moment to have. */
  private async pageUpTo(accountId: string, after: number, lastSeq: number): Promise<Versioned<LedgerEntry>[]> {
    for (const wait of [...REPLICA_CATCH_UP_WAITS_MS, null]) {
      const page = await this.entries(accountId, after, 256);
      if (page.length > 0) return page;
      if (wait !== null) await sleep(wait);
    }
    throw new LedgerReplicaBehind(
      `The ledger's replicas answer account ${accountId} up to sequence ${after}, its leader up to ${lastSeq}`,
    );
  }

  private findRefund(accountId: string, taskId: string, debitSeq: number, lastSeq: number): Promise<boolean> {
    return this.scan(accountId, debitSeq, lastSeq, (e) => e.value.type === 'refund' && e.value.taskId === taskId);
  }

  private written(accountId: string, ack: PubAck, entry: LedgerEntry): PubAck {
    for (const listener of this.listeners) listener(accountId, ack.seq, entry);
    return ack;
  }

  private async mustLast(accountId: string): Promise<Versioned<LedgerEntry>> {
    const last = await this.last(accountId);
    if (last === null) throw new Error(`Account ${accountId} has no ledger`);
    return last;
  }

  /** Runs `attempt` (after this process's earlier writes to the account) again while another writer got in between its read and its write. */
  private retry<T>(accountId: string, attempt: () => Promise<T>): Promise<T> {
    return this.writes.run(accountId, () => this.retryConflicts(attempt));
  }

  private async retryConflicts<T>(attempt: () => Promise<T>): Promise<T> {
    for (let i = 0; ; i++) {
      try {
        return await attempt();
      } catch (err) {
        if (!(err instanceof WriteConflict) || i >= MAX_CONFLICT_RETRIES) throw err;
        // A little jitter spreads writers that keep colliding.
        await sleep(Math.random() * Math.min(50, 2 * (i + 1)));
      }
    }
  }
}

/** The debit count passes unchanged through entries that are not debits. */
function carried(last: LedgerEntry): { debits?: number } {
  return last.debits === undefined ? {} : { debits: last.debits };
}

function now(): string {
  return new Date().toISOString();
}
