/**
 * Storing one result file, tried again until a deadline (RESULTS_STORE_DEADLINE_MS, at most 2
 * minutes): a 503, a reset connection or a stalled server pass; a store that refuses for good
 * (no such bucket, credentials refused) ends it at once. What is still not stored then fails the
 * job with its refund (a ProcessingError, which takes the kind's code): a job is never reported
 * completed with a file missing, and a GPU host does not sit on a paid result for long.
 */
import { ProcessingError, errorMessage } from '../errors.js';
import { sleep } from '../sleep.js';

export interface StoreRetries {
  deadlineMs: number;
  /** Whether a failure will fail the same way however often it is tried. */
  permanent(err: unknown): boolean;
  onRetry?(err: unknown, attempt: number, waitMs: number): void;
  /** The job's stop: ends the tries at once (the run is failing or handed back anyway). */
  signal?: AbortSignal;
}

const FIRST_WAIT_MS = 500;
const LONGEST_WAIT_MS = 10_000;

/** The wait before try `attempt + 1`: doubling from half a second, at most ten. */
export function storeRetryWaitMs(attempt: number): number {
  return Math.min(FIRST_WAIT_MS * 2 ** (attempt - 1), LONGEST_WAIT_MS);
}

export async function withStoreRetries<T>(what: string, o: StoreRetries, operation: () => Promise<T>): Promise<T> {
  const started = Date.now();
  for (let attempt = 1; ; attempt++) {
    try {
      return await operation();
    } catch (err) {
      if (o.signal?.aborted === true) throw err;
      const elapsed = Date.now() - started;
      const waitMs = storeRetryWaitMs(attempt);
      if (o.permanent(err) || elapsed + waitMs >= o.deadlineMs) {
        const why = o.permanent(err)
          ? 'the store refused it'
          : `still failing after ${attempt} tries in ${Math.round(elapsed / 1000)} s`;
        throw new ProcessingError(`Could not store ${what} (${why}): ${errorMessage(err)}`, { cause: err });
      }
      o.onRetry?.(err, attempt, waitMs);
      await sleep(waitMs, o.signal);
      // The stop came while waiting (the check above ran before the wait).
      if (isAborted(o.signal)) throw err;
    }
  }
}

function isAborted(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true;
}
