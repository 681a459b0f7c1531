/**
 * Terminal events: exactly one per task id, `completed` or `failed`. The body is the spec's task
 * object (section 2.3) plus what billing needs (`refund`, `error`) and timing. Builders here are
 * pure; publishing lives in event-publisher.ts.
 */
import { z } from 'zod';
import type { JobError } from '../errors.js';
import { KINDS, MEDIA_TYPES, isModelId, kindOfModel, reportedModel } from '../jobs/index.js';

/**
 * One file of a completed result, as stored and confirmed before the event was published: its key
 * under the results' root (`<kind>/<task id>/<name>.<ext>`; in a bucket under RESULTS_S3_PREFIX),
 * the URL the result names it by, and what the gateway checks the stored copy against.
 */
export const resultFileSchema = z.object({
  key: z.string().regex(/^[a-z-]{1,32}\/[A-Za-z0-9_-]{1,128}\/[A-Za-z0-9_-]{1,64}\.[a-z0-9]{1,8}$/),
  url: z.string().max(2048),
  size: z.number().int().nonnegative(),
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
});

export type ResultFile = z.infer<typeof resultFileSchema>;

export const terminalEventSchema = z.object({
  id: z.string(),
  /** As spec 2.3 reports it (the kind's `reportedModel`, where it has one); null when the job named no model. */
  model: z.string().nullable(),
  status: z.enum(['completed', 'failed']),
  /** The kind's `mediaType`, for the kinds that have one (spec 2.3); absent otherwise. */
  mediaType: z.literal(MEDIA_TYPES).optional(),
  result: z.unknown(),
  creditsUsed: z.number().int().nonnegative(),
  createdAt: z.string(),
  /** Failure only: the control plane returns what it deducted for this task. */
  refund: z.literal(true).optional(),
  /** Failure only: the job's `credits` when it carried them. */
  creditsRefunded: z.number().int().nonnegative().optional(),
  error: z.object({ code: z.string(), status: z.number().int(), message: z.string() }).optional(),
  /**
   * Failure only: true when the failure was transient (a later attempt could have succeeded: the
   * worker retried it until the delivery limit, or a lost worker's deliveries ran out); false when
   * submitting the same job again fails the same way.
   */
  retryable: z.boolean().optional(),
  /**
   * Completed only (protocol 2.1): every file the result names, stored and confirmed (size, sha256)
   * before the event was published. A gateway refuses a completed event without it.
   */
  files: z.array(resultFileSchema).max(16).optional(),
  /** Completed only: the result's files are kept at least until then (then the sweeper deletes them). */
  resultExpiresAt: z.string().optional(),
  /** When processing of the deciding attempt started; null when no attempt reached processing. */
  startedAt: z.string().nullable(),
  finishedAt: z.string(),
  durationMs: z.number().int().nonnegative().nullable(),
  /** Attempts: the delivery that decided the outcome (1 = first, so also how many deliveries the task had; 0 = never delivered, e.g. cancelled while queued). */
  attempt: z.number().int().nonnegative(),
  /** NATS connection name of the worker that published. */
  worker: z.string(),
});

export type TerminalEvent = z.infer<typeof terminalEventSchema>;

export interface EventTiming {
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date;
  attempt: number;
  worker: string;
}

export function completedEvent(
  taskId: string,
  model: string,
  output: { creditsUsed: number; result: unknown; files?: readonly ResultFile[] },
  timing: EventTiming,
  resultExpiresAt?: Date,
): TerminalEvent {
  return {
    id: taskId,
    ...modelFields(model),
    status: 'completed',
    result: output.result,
    creditsUsed: output.creditsUsed,
    ...(output.files === undefined ? {} : { files: [...output.files] }),
    ...(resultExpiresAt === undefined ? {} : { resultExpiresAt: resultExpiresAt.toISOString() }),
    ...timingFields(timing),
  };
}

/** `model` is whatever the job named (possibly not a known id, or absent in a malformed job). */
export function failedEvent(
  taskId: string,
  model: unknown,
  error: JobError,
  credits: number | undefined,
  timing: EventTiming,
): TerminalEvent {
  return {
    id: taskId,
    ...modelFields(model),
    status: 'failed',
    result: null,
    creditsUsed: 0,
    refund: true,
    ...(credits === undefined ? {} : { creditsRefunded: credits }),
    error: error.toJSON(),
    retryable: error.retryable,
    ...timingFields(timing),
  };
}

function modelFields(model: unknown): Pick<TerminalEvent, 'model' | 'mediaType'> {
  if (isModelId(model)) {
    const mediaType = KINDS[kindOfModel(model)].mediaType;
    return { model: reportedModel(model), ...(mediaType === undefined ? {} : { mediaType }) };
  }
  return { model: typeof model === 'string' ? model : null };
}

function timingFields(
  t: EventTiming,
): Pick<TerminalEvent, 'createdAt' | 'startedAt' | 'finishedAt' | 'durationMs' | 'attempt' | 'worker'> {
  return {
    createdAt: t.createdAt.toISOString(),
    startedAt: t.startedAt === null ? null : t.startedAt.toISOString(),
    finishedAt: t.finishedAt.toISOString(),
    durationMs: t.startedAt === null ? null : Math.max(0, t.finishedAt.getTime() - t.startedAt.getTime()),
    attempt: t.attempt,
    worker: t.worker,
  };
}

/**
 * The task's creation time: the body's `createdAt` when it is a valid timestamp (the control plane
 * knows when the task was submitted), else when the job message was stored in the stream.
 */
export function creationTime(bodyCreatedAt: unknown, storedAt: Date): Date {
  return timestamp(bodyCreatedAt) ?? storedAt;
}

/** `value` as a time when it is a string that names one (ISO 8601), else undefined. */
export function timestamp(value: unknown): Date | undefined {
  if (typeof value !== 'string') return undefined;
  const t = new Date(value);
  return Number.isNaN(t.getTime()) ? undefined : t;
}
