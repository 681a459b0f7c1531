/**
 * JSON calls to a configured music provider (never to addresses taken from a job): one attempt
 * with a timeout, answers checked with zod, and a retry loop with exponential backoff that stops
 * at the task's deadline or when the job is cancelled. Downloads of audio and images do not come
 * through here: they go through the safe fetcher (media/fetch.ts).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { z } from 'zod';
import { abortReason } from '../../errors.js';

/** A provider answer that a later attempt may fix (rate limit, maintenance, timeout, 5xx). */
export class TransientProviderError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'TransientProviderError';
  }
}

/** A provider answer no retry fixes (bad request, bad key, failed task, malformed answer). */
export class ProviderError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ProviderError';
  }
}

export interface CallOptions {
  method: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: unknown;
  /** One attempt's limit. */
  timeoutMs: number;
  signal: AbortSignal;
  /** HTTP statuses (and body codes, see `bodyCode`) that mean "try again later". */
  transientStatuses: readonly number[];
}

/** Provider URLs may carry keys in the query: logs and messages get origin and path only. */
export function displayUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.origin}${u.pathname}`;
  } catch {
    return '(invalid URL)';
  }
}

/** One HTTP call; the answer parsed with `schema`. */
export async function callJson<S extends z.ZodType>(url: string, schema: S, opts: CallOptions): Promise<z.output<S>> {
  if (opts.signal.aborted) throw abortReason(opts.signal);
  const timeout = AbortSignal.timeout(opts.timeoutMs);
  let response: Response;
  try {
    response = await fetch(url, {
      method: opts.method,
      headers: { accept: 'application/json', ...(opts.body === undefined ? {} : { 'content-type': 'application/json' }), ...opts.headers },
      ...(opts.body === undefined ? {} : { body: JSON.stringify(opts.body) }),
      signal: AbortSignal.any([opts.signal, timeout]),
      redirect: 'error',
    });
  } catch (err) {
    if (opts.signal.aborted) throw abortReason(opts.signal);
    const what = timeout.aborted ? `no answer within ${opts.timeoutMs} ms` : (err as Error).message;
    throw new TransientProviderError(`${opts.method} ${displayUrl(url)}: ${what}`, { cause: err });
  }
  let text: string;
  try {
    text = await response.text();
  } catch (err) {
    if (opts.signal.aborted) throw abortReason(opts.signal);
    throw new TransientProviderError(`${opts.method} ${displayUrl(url)}: the answer was cut off`, { cause: err });
  }
  if (opts.transientStatuses.includes(response.status) || response.status >= 500) {
    throw new TransientProviderError(`${opts.method} ${displayUrl(url)} answered HTTP ${response.status}`);
  }
  if (!response.ok) throw new ProviderError(`${opts.method} ${displayUrl(url)} answered HTTP ${response.status}: ${text.slice(0, 200)}`);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new ProviderError(`${opts.method} ${displayUrl(url)} answered something that is not JSON: ${JSON.stringify(text.slice(0, 80))}`);
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ProviderError(`${opts.method} ${displayUrl(url)} answered an unexpected shape (${issue?.path.join('.') || 'body'}: ${issue?.message ?? 'invalid'})`);
  }
  return parsed.data as z.output<S>;
}

export interface RetryOptions {
  /** Absolute time (ms since epoch) after which no new attempt starts. */
  deadline: number;
  signal: AbortSignal;
  /** First wait; doubles up to `maxDelayMs`. */
  initialDelayMs: number;
  maxDelayMs: number;
  onRetry?: (error: TransientProviderError, attempt: number, delayMs: number) => void;
  now?: () => number;
}

/** The wait before retry `attempt` (1-based): doubling from the initial delay, capped. */
export function backoffDelay(attempt: number, initialDelayMs: number, maxDelayMs: number): number {
  return Math.min(maxDelayMs, initialDelayMs * 2 ** Math.max(0, attempt - 1));
}

/** Runs `attempt` until it succeeds, fails for good, or the deadline leaves no room for another wait. */
export async function withRetry<T>(attempt: () => Promise<T>, opts: RetryOptions): Promise<T> {
  const now = opts.now ?? Date.now;
  for (let n = 1; ; n += 1) {
    try {
      return await attempt();
    } catch (err) {
      if (!(err instanceof TransientProviderError)) throw err;
      const delay = backoffDelay(n, opts.initialDelayMs, opts.maxDelayMs);
      if (now() + delay >= opts.deadline) throw new ProviderError(`gave up after ${n} attempts within the deadline: ${err.message}`, { cause: err });
      opts.onRetry?.(err, n, delay);
      try {
        await sleep(delay, undefined, { signal: opts.signal });
      } catch {
        throw abortReason(opts.signal);
      }
    }
  }
}

/** Waits `ms`, or less when the deadline is nearer; false when the deadline has passed. */
export async function waitUntil(ms: number, deadline: number, signal: AbortSignal, now: () => number = Date.now): Promise<boolean> {
  const left = deadline - now();
  if (left <= 0) return false;
  try {
    await sleep(Math.min(ms, left), undefined, { signal });
  } catch {
    throw abortReason(signal);
  }
  return now() < deadline;
}
