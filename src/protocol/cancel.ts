/**
 * Cancellation on the wire (docs/protocol.md, "Cancellation"): the request a control plane sends on
 * `media.cancel`, the reply, the failure a cancelled task ends with, and the worker-to-worker
 * `media.abort.<task id>` that stops a running copy. The worker's side is worker/cancel.ts.
 */
import { z } from 'zod';
import { JobError } from '../errors.js';
import { TASK_ID_PATTERN } from './subjects.js';

export const ABORT_SUBJECT_PREFIX = 'media.abort';

/** Where the worker that cancelled a task tells every worker to stop running it. */
export function abortSubject(taskId: string): string {
  return `${ABORT_SUBJECT_PREFIX}.${taskId}`;
}

export const cancelRequestSchema = z
  .object({
    id: z.string().regex(TASK_ID_PATTERN),
    /** The event's model when the worker finds no job of the task (else the job's); narrows that search. */
    model: z.string().max(128).optional(),
    /** What the control plane deducted: echoed as `creditsRefunded` (else the job's `credits`). */
    credits: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER).optional(),
    /** When the task was submitted: the event's `createdAt` unless a run of the job says (docs/protocol.md, "Cancellation"). */
    createdAt: z.string().max(64).optional(),
    /** Why, for people: appended to the event's message. */
    reason: z.string().max(500).optional(),
  })
  .strict();

export type CancelRequest = z.infer<typeof cancelRequestSchema>;

export const cancelReplySchema = z.object({
  id: z.string(),
  /** True: this request's cancel event was stored. False: the task had already ended. */
  cancelled: z.boolean(),
  /** The task's terminal status now (`failed` with error CANCELLED when cancelled). */
  status: z.enum(['completed', 'failed']),
  /** Code of the event that ended the task, when it failed. */
  code: z.string().optional(),
});

export type CancelReply = z.infer<typeof cancelReplySchema>;

/** The failure of a cancelled task (code CANCELLED, refunded like every failure). */
export function cancelledError(reason: string | undefined): JobError {
  return new JobError(
    'CANCELLED',
    reason === undefined ? 'Cancelled by the control plane' : `Cancelled by the control plane: ${reason}`,
  );
}
