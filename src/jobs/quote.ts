/**
 * quote = fetch the inputs, probe them, check their formats, price. No processing. The quote
 * service answers the control plane with `quote`; the worker runs the same function before
 * processing and hands the fetched files and probe results on, so nothing is fetched twice. Each
 * kind quotes in its own order (its descriptor's `quote`, src/jobs/kinds/): first failure wins.
 *
 * I/O comes in through QuoteDeps (implemented in src/media/), so this module stays testable with
 * in-memory fakes. Files made local by `deps.localize` belong to the caller's job directory: the
 * caller removes them in its `finally`, whether quoting succeeded or not. The shapes are in
 * quote-types.ts, the content checks in input-checks.ts, what the kinds share in quote-parts.ts.
 */
import { isJobError } from '../errors.js';
import type { QuoteVerdict } from './kind-contract.js';
import { KINDS, type Job, type JobKind, type JobOf, type QuotePolicy, type QuotedJob } from './kinds.js';
import { kindedJob } from './models.js';
import { refuse } from './quote-recheck.js';
import type { QuoteDeps } from './quote-types.js';

export { errorBody, formatDuration, formatQuoteError, measuredStreams } from './quote-parts.js';

/**
 * Validates the inputs' content and prices a parsed job. Checks run in this order (first failure
 * wins): fetch, probe, format, streams, duration/size limits. With a `policy` (every caller but the
 * spec-only tests), the work limits and the cost estimate come last, in the order of
 * docs/contract.md "Work limits and the cost estimate", and the quote carries the estimate. Without
 * one, the quote is the spec's alone.
 */
export async function quoteJob(
  job: Job,
  deps: QuoteDeps,
  signal?: AbortSignal,
  policy?: QuotePolicy,
): Promise<QuotedJob> {
  signal?.throwIfAborted();
  return quoteOfKind(kindedJob(job), deps, signal, policy);
}

function quoteOfKind<K extends JobKind>(
  k: { kind: K; job: JobOf<K> },
  deps: QuoteDeps,
  signal?: AbortSignal,
  policy?: QuotePolicy,
): Promise<QuotedJob> {
  return KINDS[k.kind].quote(k.job, deps, signal, policy);
}

/**
 * The least any job like this one can cost, known before anything is fetched (the kind's
 * `minimumCredits`: the lowest image tier, one second of video at the factor's rate, a model's
 * minimum charge, a fixed price). A balance below it is refused before the quote spends a
 * download on it.
 */
export function minimumCredits(job: Job): number {
  return minimumOfKind(kindedJob(job));
}

function minimumOfKind<K extends JobKind>(k: { kind: K; job: JobOf<K> }): number {
  return KINDS[k.kind].minimumCredits(k.job);
}

/** Whether `quote` is the honest price of `job` for the figures the quote itself reports (the kind's `recheck`). */
export function checkQuote(job: Job, quote: unknown): QuoteVerdict {
  try {
    return recheckOfKind(kindedJob(job), quote);
  } catch (err) {
    // The pricing module refuses the figures (too long, too large): no worker should have priced them.
    if (isJobError(err)) return refuse(`its figures are refused by the price list (${err.code}: ${err.message})`);
    throw err;
  }
}

function recheckOfKind<K extends JobKind>(k: { kind: K; job: JobOf<K> }, quote: unknown): QuoteVerdict {
  return KINDS[k.kind].recheck(k.job, quote);
}
