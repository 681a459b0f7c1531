/**
 * What happens to a job that did not complete: the one place that turns an error into an outcome
 * for the queue (retry later with a delay, or fail for good with a refund). Nothing here looks at
 * message text.
 */
import { JobError } from '../errors.js';

export type Disposition = { action: 'retry'; delayMs: number; error: JobError } | { action: 'fail'; error: JobError };

/**
 * Retry while the error says a retry can help and deliveries are left; the delay grows with the
 * attempt (the last configured delay repeats). The last delivery never retries: its failure event
 * is published by this worker rather than left to the max-deliveries advisory.
 */
export function decideFailure(
  given: JobError,
  attempt: number,
  maxDeliver: number,
  nakDelaysMs: readonly number[],
): Disposition {
  const error = outOfSpace(given) ? outOfSpaceError(given) : given;
  if (!error.retryable) return { action: 'fail', error };
  if (attempt < maxDeliver) {
    const delayMs = nakDelaysMs[Math.min(attempt, nakDelaysMs.length) - 1] ?? 0;
    return { action: 'retry', delayMs, error };
  }
  // Still retryable: the event tells billing and clients it was transient, retried until the limit.
  const exhausted = new JobError(error.code, `${error.message} (gave up after ${attempt} attempts)`, {
    retryable: true,
    cause: error,
  });
  return { action: 'fail', error: exhausted };
}

/**
 * A full disk is this host's state, not the job's fault: another host (or this one, once space
 * returns) can run it. Recognised from the errno anywhere in the cause chain (ENOSPC, EDQUOT), or
 * from ffmpeg's report of it (the C library's fixed wording, the only place a child process says so).
 */
export function outOfSpace(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e !== undefined && e !== null && depth < 8; depth += 1) {
    const code = (e as { code?: unknown }).code;
    if (code === 'ENOSPC' || code === 'EDQUOT') return true;
    const stderrTail = (e as { stderrTail?: unknown }).stderrTail;
    if (typeof stderrTail === 'string' && /No space left on device|Disk quota exceeded/.test(stderrTail)) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

function outOfSpaceError(error: JobError): JobError {
  return new JobError(error.code, `No space left on this worker's disk: ${error.message}`, {
    retryable: true,
    cause: error,
  });
}
