/**
 * JSON calls to a configured provider (a kind's provider backend; never to addresses taken from a job): one
 * attempt with a timeout, answers checked with zod, and a retry loop with exponential backoff (or
 * the provider's Retry-After, when longer) that stops at the task's deadline or when the job is
 * cancelled. Downloads of results do not come through here: they go through the safe fetcher
 * (fetch.ts).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { z } from 'zod';
import { abortReason } from '../errors.js';

/** A provider answer that a later attempt may fix (rate limit, maintenance, timeout, 5xx). */
export class TransientProviderError extends Error {
  /** The provider's Retry-After, in milliseconds, when it sent one. */
  readonly retryAfterMs: number | undefined;
  readonly status: number | undefined;
  constructor(
    message: string,
    options?: { cause?: unknown; retryAfterMs?: number | undefined; status?: number | undefined },
  ) {
    super(message, options);
    this.name = 'TransientProviderError';
    this.retryAfterMs = options?.retryAfterMs;
    this.status = options?.status;
  }
}

/** A provider answer no retry fixes (bad request, bad key, failed task, malformed answer). */
export class ProviderError extends Error {
  /** The HTTP status, when the provider refused the call. */
  readonly status: number | undefined;
  /** The provider's own error code from the body (`errorCode`, `error_code` or a string `code`). */
  readonly errorCode: string | undefined;
  constructor(
    message: string,
    options?: { cause?: unknown; status?: number | undefined; errorCode?: string | undefined },
  ) {
    super(message, options);
    this.name = 'ProviderError';
    this.status = options?.status;
    this.errorCode = options?.errorCode;
  }
}

export interface CallOptions {
  method: 'GET' | 'POST';
  headers?: Record<string, string>;
  /** JSON, or a FormData sent as multipart/form-data (uploads). */
  body?: unknown;
  /** One attempt's limit. */
  timeoutMs: number;
  signal: AbortSignal;
  /** HTTP statuses (and body codes, see `bodyCode`) that mean "try again later". */
  transientStatuses: readonly number[];
  /** Sees a successful answer's Retry-After (ms), where the provider paces its polling with one. */
  onRetryAfter?: (ms: number) => void;
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
  const form = opts.body instanceof FormData;
  try {
    response = await fetch(url, {
      method: opts.method,
      // A FormData body sets its own multipart content type (with the boundary).
      headers: {
        accept: 'application/json',
        ...(opts.body === undefined || form ? {} : { 'content-type': 'application/json' }),
        ...opts.headers,
      },
      ...(opts.body === undefined ? {} : { body: form ? (opts.body as FormData) : JSON.stringify(opts.body) }),
      signal: AbortSignal.any([opts.signal, timeout]),
      redirect: 'error',
    });
  } catch (err) {
    if (opts.signal.aborted) throw abortReason(opts.signal);
    const what = timeout.aborted ? `no answer within ${opts.timeoutMs} ms` : (err as Error).message;
    throw new TransientProviderError(`${opts.method} ${displayUrl(url)}: ${what}`, { cause: err });
  }
  let text: string | undefined;
  try {
    text = await cappedText(response, MAX_ANSWER_BYTES);
  } catch (err) {
    if (opts.signal.aborted) throw abortReason(opts.signal);
    throw new TransientProviderError(`${opts.method} ${displayUrl(url)}: the answer was cut off`, { cause: err });
  }
  if (text === undefined)
    throw new ProviderError(
      `${opts.method} ${displayUrl(url)} answered more than ${MAX_ANSWER_BYTES} bytes, not a status or an error`,
    );
  if (opts.transientStatuses.includes(response.status) || response.status >= 500) {
    const detail = errorDetail(text);
    throw new TransientProviderError(
      `${opts.method} ${displayUrl(url)} answered HTTP ${response.status}${detail.message === undefined ? '' : `: ${detail.message}`}`,
      {
        status: response.status,
        retryAfterMs: retryAfterMs(response.headers.get('retry-after')),
      },
    );
  }
  if (!response.ok) {
    const detail = errorDetail(text);
    const code = detail.errorCode === undefined ? '' : ` (${detail.errorCode})`;
    throw new ProviderError(
      `${opts.method} ${displayUrl(url)} answered HTTP ${response.status}${code}: ${detail.message ?? text.slice(0, 200)}`,
      {
        status: response.status,
        errorCode: detail.errorCode,
      },
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new ProviderError(
      `${opts.method} ${displayUrl(url)} answered something that is not JSON: ${JSON.stringify(text.slice(0, 80))}`,
    );
  }
  const pace = retryAfterMs(response.headers.get('retry-after'));
  if (pace !== undefined) opts.onRetryAfter?.(pace);
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ProviderError(
      `${opts.method} ${displayUrl(url)} answered an unexpected shape (${issue?.path.join('.') || 'body'}: ${issue?.message ?? 'invalid'})`,
    );
  }
  return parsed.data as z.output<S>;
}

/** A provider's JSON answer (a task, a status, an error) is a few kilobytes: a larger one is not read into memory. */
export const MAX_ANSWER_BYTES = 1024 * 1024;

/** The body as text, or undefined (the rest cancelled) once it passes `limit` bytes. */
async function cappedText(response: Response, limit: number): Promise<string | undefined> {
  if (response.body === null) return '';
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  for await (const chunk of response.body) {
    bytes += chunk.byteLength;
    // Leaving the loop cancels the stream: the rest is not downloaded.
    if (bytes > limit) return undefined;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** Retry-After as milliseconds: delta-seconds or an HTTP date; undefined when absent or unreadable. */
export function retryAfterMs(header: string | null, now: number = Date.now()): number | undefined {
  if (header === null || header.trim() === '') return undefined;
  const trimmed = header.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.round(Number(trimmed) * 1000);
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/**
 * A provider's error body, `{statusCode, message, errorCode}` (sync.so's; `error_code` and a string
 * `code` are read too): its message (a string or a list) and its code, each when present.
 */
export function errorDetail(text: string): { message?: string; errorCode?: string } {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return {};
  }
  if (typeof body !== 'object' || body === null) return {};
  const b = body as Record<string, unknown>;
  const raw = b.message ?? b.error ?? b.msg;
  const message =
    typeof raw === 'string'
      ? raw
      : Array.isArray(raw)
        ? raw.filter((m) => typeof m === 'string').join('; ')
        : undefined;
  const codeRaw = b.errorCode ?? b.error_code ?? (typeof b.code === 'string' ? b.code : undefined);
  const errorCode = typeof codeRaw === 'string' && codeRaw !== '' ? codeRaw : undefined;
  return {
    ...(message === undefined || message === '' ? {} : { message: message.slice(0, 300) }),
    ...(errorCode === undefined ? {} : { errorCode }),
  };
}

export interface RetryOptions {
  /** Absolute time (ms since epoch) after which no new attempt starts. */
  deadline: number;
  signal: AbortSignal;
  /** First wait; doubles up to `maxDelayMs`. */
  initialDelayMs: number;
  /** The longest wait between two attempts, a provider's Retry-After included. */
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
      // A provider's Retry-After wins over a shorter backoff (a rate or concurrency limit says when),
      // up to maxDelayMs: a broken or hostile one (Retry-After: 999999) does not park the task.
      const delay = Math.min(
        opts.maxDelayMs,
        Math.max(backoffDelay(n, opts.initialDelayMs, opts.maxDelayMs), err.retryAfterMs ?? 0),
      );
      if (now() + delay >= opts.deadline)
        throw new ProviderError(`gave up after ${n} attempts within the deadline: ${err.message}`, { cause: err });
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
export async function waitUntil(
  ms: number,
  deadline: number,
  signal: AbortSignal,
  now: () => number = Date.now,
): Promise<boolean> {
  const left = deadline - now();
  if (left <= 0) return false;
  try {
    await sleep(Math.min(ms, left), undefined, { signal });
  } catch {
    throw abortReason(signal);
  }
  return now() < deadline;
}
