/**
 * The contract's edge for failures: anything a pipeline throws becomes a JobError with a spec code.
 * A JobError stays as it is; a ProcessingError from a lower layer (inference, ffmpeg) takes the job
 * kind's processing code and keeps whether a retry could help; anything else is a permanent failure
 * of that code. Nothing here looks at message text.
 */
import { JobError, ProcessingError, errorMessage, isJobError, type ErrorCode } from '../errors.js';
import { KINDS, byKind, type JobKind } from './kinds.js';

/** The spec's processing failure code for each kind (its descriptor's `failure.code`). */
export const KIND_FAILURE_CODE: Readonly<Record<JobKind, ErrorCode>> = byKind((kind) => kind.failure.code);

/** How a failure that says nothing of its own opens its message, for each kind's pipeline. */
const PIPELINE_FAILED = (kind: JobKind): string => KINDS[kind].failure.opening;

/** A pipeline's failure as the job's error: the one place where a pipeline's failures get the kind's code. */
export function pipelineFailure(err: unknown, kind: JobKind): JobError {
  return asJobError(err, kind, PIPELINE_FAILED(kind));
}

/**
 * The failure of a job that ran past its kind's time limit (WORKER_WATCHDOG_MS; the kind's failure
 * code). The daemon's job runner and the command line apply the same limit.
 */
export function deadlineError(kind: JobKind, limitMs: number): JobError {
  return new JobError(
    KIND_FAILURE_CODE[kind],
    `Processing took longer than ${formatLimit(limitMs)}, the limit for ${kind} jobs`,
  );
}

function formatLimit(ms: number): string {
  if (ms % 60_000 === 0) return `${ms / 60_000} minute${ms === 60_000 ? '' : 's'}`;
  if (ms % 1000 === 0) return `${ms / 1000} seconds`;
  return `${ms} ms`;
}

/**
 * Why a running job was stopped from outside, said once where the stop is decided rather than
 * guessed later from the signal's reason: its time limit or its owner's cancellation end the task
 * with a failure; a drain hands the job back to the queue.
 */
export type StopReason = { why: 'deadline'; error: JobError } | { why: 'cancel'; error: JobError } | { why: 'drain' };

/**
 * Any thrown value as a JobError of the job's kind. `failed` opens the message of a failure that
 * says nothing of its own kind (a pipeline names itself: "Video upscaling failed").
 */
export function asJobError(err: unknown, kind: JobKind, failed = 'Processing failed'): JobError {
  if (isJobError(err)) return err;
  if (err instanceof ProcessingError)
    return new JobError(KIND_FAILURE_CODE[kind], err.message, { retryable: err.retryable, cause: err });
  return new JobError(KIND_FAILURE_CODE[kind], `${failed}: ${errorMessage(err)}`, { cause: err });
}
