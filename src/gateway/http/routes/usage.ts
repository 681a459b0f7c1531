/**
 * GET /api/v1/usage (docs/contract.md, "Usage"): the account's ledger movements, oldest first, in
 * pages. Every ledger entry is a movement (the opening credits, top-ups, debits, refunds), each
 * signed, so all of them from the first add up to the balance. A request reads a bounded number of
 * entries whatever the date range, so a narrow range over a long ledger costs a few short pages,
 * never one unbounded scan.
 */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { ApiError, successEnvelope } from '../../errors.js';
import type { LedgerEntry } from '../../store/records.js';
import type { Versioned } from '../../store/subject-store.js';
import type { RouteContext } from '../app-deps.js';
import { routeSchemas } from '../openapi-schemas.js';

/** Ledger entries one request reads at most (a page may be short, even empty, with a next cursor). */
export const USAGE_SCAN_LIMIT = 1000;

export interface Movement {
  type: LedgerEntry['type'];
  /** Signed: debits negative, the opening credits, top-ups and refunds positive. */
  credits: number;
  /** The balance after it. */
  balance: number;
  at: string;
  taskId?: string;
  model?: string;
  /** Refunds: the failure's code. */
  reason?: string;
  /** Top-ups: the operator's note. */
  note?: string;
}

const message = (field: string, expected: string) => (i: { input: unknown }) =>
  `Expected ${field} to be ${expected} but received ${JSON.stringify(i.input)}`;

export const usageQuerySchema = z.object({
  from: z.iso.datetime({ offset: true, error: message('from', 'an ISO 8601 date-time') }).optional(),
  to: z.iso.datetime({ offset: true, error: message('to', 'an ISO 8601 date-time') }).optional(),
  limit: z.coerce
    .number({ error: message('limit', 'an integer from 1 to 100') })
    .int({ error: message('limit', 'an integer from 1 to 100') })
    .min(1, { error: message('limit', 'an integer from 1 to 100') })
    .max(100, { error: message('limit', 'an integer from 1 to 100') })
    .default(50),
  cursor: z
    .string()
    .regex(/^u\d{1,15}$/, { error: message('cursor', 'a nextCursor of this endpoint') })
    .optional(),
});

export type UsageQuery = z.infer<typeof usageQuerySchema>;

/** The sequence the page starts after. */
export function cursorSeq(cursor: string | undefined): number {
  return cursor === undefined ? 0 : Number(cursor.slice(1));
}

/** Whether an entry's time is in [from, to). */
export function inRange(at: string, query: Pick<UsageQuery, 'from' | 'to'>): boolean {
  const t = Date.parse(at);
  return (
    (query.from === undefined || t >= Date.parse(query.from)) && (query.to === undefined || t < Date.parse(query.to))
  );
}

/** One ledger entry as a movement; a refund's model is its task's (`refundModel`). */
export function movement(entry: LedgerEntry, refundModel?: string): Movement {
  const base = { type: entry.type, balance: entry.balance, at: entry.at };
  switch (entry.type) {
    case 'debit':
      return { ...base, credits: -entry.amount, taskId: entry.taskId, model: entry.job.model };
    case 'refund':
      return {
        ...base,
        credits: entry.amount,
        taskId: entry.taskId,
        ...(refundModel === undefined ? {} : { model: refundModel }),
        reason: entry.reason,
      };
    case 'topup':
      return { ...base, credits: entry.amount, ...(entry.note === undefined ? {} : { note: entry.note }) };
    case 'open':
      return { ...base, credits: entry.amount };
  }
}

export interface UsageSources {
  entries(afterSeq: number, limit: number): Promise<Versioned<LedgerEntry>[]>;
  taskModel(taskId: string): Promise<string | undefined>;
}

/**
 * A page: up to `limit` movements in range after the cursor, reading at most USAGE_SCAN_LIMIT
 * entries. `nextCursor` is null once the ledger's end was reached.
 */
export async function usagePage(
  query: UsageQuery,
  sources: UsageSources,
): Promise<{ movements: Movement[]; nextCursor: string | null }> {
  const movements: Movement[] = [];
  let after = cursorSeq(query.cursor);
  let scanned = 0;
  while (movements.length < query.limit && scanned < USAGE_SCAN_LIMIT) {
    const batch = await sources.entries(after, Math.min(100, USAGE_SCAN_LIMIT - scanned));
    if (batch.length === 0) return { movements, nextCursor: null };
    for (const { seq, value } of batch) {
      scanned += 1;
      after = seq;
      if (!inRange(value.at, query)) continue;
      movements.push(movement(value, value.type === 'refund' ? await sources.taskModel(value.taskId) : undefined));
      if (movements.length === query.limit) break;
    }
  }
  // One more read says whether anything follows, so the last page says so (null) instead of an empty page after it.
  const more = (await sources.entries(after, 1)).length > 0;
  return { movements, nextCursor: more ? `u${after}` : null };
}

export function registerUsage(api: FastifyInstance, { deps }: RouteContext): void {
  api.get('/api/v1/usage', { schema: routeSchemas.usage }, async (req) => {
    const query = usageQuerySchema.safeParse(req.query);
    if (!query.success) throw ApiError.of('INVALID_QUERY', query.error.issues[0]?.message ?? 'Invalid query');
    const page = await usagePage(query.data, {
      entries: (after, limit) => deps.ledger.entries(req.accountId, after, limit),
      taskModel: async (taskId) => (await deps.tasks.get(req.accountId, taskId))?.value.model,
    });
    return successEnvelope({ accountId: req.accountId, ...page });
  });
}
