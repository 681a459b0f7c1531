/**
 * The records the gateway stores, as zod schemas: what is read back from a stream is parsed, never
 * trusted.
 */
import { z } from 'zod';
import { JOB_KINDS, MEDIA_TYPES } from '../../jobs/index.js';
import { STORED_TRACE_LIMITS } from '../../telemetry/index.js';

export const accountRecordSchema = z.object({ id: z.string(), name: z.string(), createdAt: z.string() });
export type AccountRecord = z.infer<typeof accountRecordSchema>;

/** A revoked key keeps its record (with `revokedAt`) so that the listing shows it. */
export const keyRecordSchema = z.object({
  accountId: z.string(),
  createdAt: z.string(),
  revokedAt: z.string().optional(),
});
export type KeyRecord = z.infer<typeof keyRecordSchema>;

const credits = z.number().int().nonnegative();

/** What the API answered at submission beyond the short task object (a tool's echo: poll URL and duration, or `input`). */
export const submissionExtrasSchema = z.object({
  duration: z.number().optional(),
  input: z.record(z.string(), z.unknown()).optional(),
  pollUrl: z.string().optional(),
  /** The submission's `webhook_url` (webhooks/), checked when it was accepted. */
  webhookUrl: z.string().optional(),
  /** No `webhook_url`, but the account had a default endpoint at submission: the webhook goes there. */
  webhookDefault: z.boolean().optional(),
  /**
   * The submission's HTTP span (W3C Trace Context), kept while tracing is on: the job published
   * (by this request or by the outbox) and every webhook delivery descend from it (telemetry/).
   */
  // Never a reason to refuse a debit or a task when read back: a trace that does not parse is dropped.
  trace: z
    .object({
      traceparent: z.string().max(STORED_TRACE_LIMITS.traceparent),
      tracestate: z.string().max(STORED_TRACE_LIMITS.tracestate).optional(),
    })
    .optional()
    .catch(undefined),
});
export type SubmissionExtras = z.infer<typeof submissionExtrasSchema>;

/** The job message as it goes to `media.jobs.<kind>.<model>` (docs/protocol.md). */
export const jobMessageSchema = z.object({
  id: z.string(),
  model: z.string(),
  input: z.record(z.string(), z.unknown()),
  credits: credits,
  createdAt: z.string(),
});
export type JobMessage = z.infer<typeof jobMessageSchema>;

/**
 * One balance change. `balance` is the balance after it, so the last entry of an account is its
 * balance. A debit carries everything needed to create the task and publish its job: it is the
 * outbox from which a crashed submission is completed.
 */
/**
 * How many debits the account has had, this entry included: a debit's count is its task's place
 * in the account's history (the history index, tasks.ts). Absent on entries written before it was
 * kept; such an account's history is listed the old way.
 */
const debitCount = { debits: z.number().int().nonnegative().optional() };

export const ledgerEntrySchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('open'), amount: credits, balance: credits, at: z.string(), ...debitCount }),
  z.object({
    type: z.literal('topup'),
    amount: credits,
    balance: credits,
    at: z.string(),
    note: z.string().optional(),
    ...debitCount,
  }),
  z.object({
    type: z.literal('debit'),
    amount: credits,
    balance: credits,
    ...debitCount,
    at: z.string(),
    taskId: z.string(),
    kind: z.enum(JOB_KINDS),
    job: jobMessageSchema,
    extras: submissionExtrasSchema,
  }),
  z.object({
    type: z.literal('refund'),
    amount: credits,
    balance: credits,
    at: z.string(),
    taskId: z.string(),
    reason: z.string(),
    ...debitCount,
  }),
]);
export type LedgerEntry = z.infer<typeof ledgerEntrySchema>;
export type DebitEntry = Extract<LedgerEntry, { type: 'debit' }>;

export const taskRecordSchema = z.object({
  id: z.string(),
  accountId: z.string(),
  /** The model submitted; a completed task reports the event's model (its kind's reportedModel). */
  model: z.string(),
  kind: z.enum(JOB_KINDS),
  status: z.enum(['pending', 'completed', 'failed']),
  creditsUsed: credits,
  createdAt: z.string(),
  /** Ledger sequence of the debit: refunds are looked for after it. */
  debitSeq: z.number().int().positive(),
  extras: submissionExtrasSchema,
  reportedModel: z.string().optional(),
  mediaType: z.literal(MEDIA_TYPES).optional(),
  result: z.unknown().optional(),
  error: z.object({ code: z.string(), message: z.string() }).optional(),
  creditsRefunded: credits.optional(),
  finishedAt: z.string().optional(),
});
export type TaskRecord = z.infer<typeof taskRecordSchema>;
