/**
 * When a webhook is tried again, and what an answer means. Pure.
 *
 * The default delays are those the Standard Webhooks specification suggests (after the first
 * attempt: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h; eight attempts over about 27.5 h), each
 * scaled by a jitter of ±10 % so that the retries of many tasks failed at once do not arrive
 * together. Even with every jitter at its lowest, the last attempt comes more than 24 h after the
 * first (MIN_RETRY_SPAN_MS; the settings refuse a schedule that would not).
 */
const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

export const DEFAULT_RETRY_DELAYS_MS: readonly number[] = [
  5 * SECOND,
  5 * MINUTE,
  30 * MINUTE,
  2 * HOUR,
  5 * HOUR,
  10 * HOUR,
  10 * HOUR,
];
export const MIN_RETRY_SPAN_MS = 24 * HOUR;
export const JITTER = 0.1;
/** A Retry-After is honoured within these bounds (a receiver cannot park a delivery for ever). */
export const RETRY_AFTER_BOUNDS_MS = { min: SECOND, max: 24 * HOUR } as const;

/** The least time from the first attempt to the last: every delay at its lowest jitter. */
export function shortestSpanMs(delays: readonly number[]): number {
  return delays.reduce((sum, d) => sum + d * (1 - JITTER), 0);
}

/** The delay after the `failed`-th failed attempt (1-based), or null when none is left. */
export function retryDelayMs(
  delays: readonly number[],
  failed: number,
  random: () => number = Math.random,
): number | null {
  const base = delays[failed - 1];
  if (base === undefined) return null;
  return Math.round(base * (1 - JITTER + 2 * JITTER * random()));
}

/** `Retry-After` as seconds or an HTTP date, in ms from `nowMs`, within RETRY_AFTER_BOUNDS_MS; undefined when absent or unreadable. */
export function retryAfterMs(value: string | undefined, nowMs: number): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  const ms = /^\d{1,10}$/.test(text)
    ? Number(text) * SECOND
    : /[A-Za-z]/.test(text) && !Number.isNaN(Date.parse(text))
      ? Date.parse(text) - nowMs
      : undefined;
  if (ms === undefined) return undefined;
  return Math.min(RETRY_AFTER_BOUNDS_MS.max, Math.max(RETRY_AFTER_BOUNDS_MS.min, ms));
}

/** What one attempt came to: an HTTP status, or no answer at all (refused address, timeout, reset). */
export interface AttemptResult {
  status?: number;
  retryAfter?: string;
}

export type NextStep =
  | { action: 'done'; status: 'delivered' }
  /** No attempt follows: the receiver said 410 Gone, or the schedule ran out. */
  | { action: 'done'; status: 'failed'; gone: boolean; reason: string }
  | { action: 'retry'; delayMs: number };

/**
 * After the `attempt`-th attempt (1-based): any 2xx is delivered; 410 stops (and turns an
 * account's default endpoint off, delivery.ts); 429 and 503 wait what their Retry-After says;
 * everything else, no answer included, waits the schedule's next delay.
 */
export function nextStep(
  result: AttemptResult,
  attempt: number,
  delays: readonly number[],
  nowMs: number,
  random: () => number = Math.random,
): NextStep {
  const { status } = result;
  if (status !== undefined && status >= 200 && status < 300) return { action: 'done', status: 'delivered' };
  if (status === 410) return { action: 'done', status: 'failed', gone: true, reason: 'the endpoint answered 410 Gone' };
  const scheduled = retryDelayMs(delays, attempt, random);
  if (scheduled === null)
    return { action: 'done', status: 'failed', gone: false, reason: `no 2xx answer in ${attempt} attempts` };
  const asked = status === 429 || status === 503 ? retryAfterMs(result.retryAfter, nowMs) : undefined;
  return { action: 'retry', delayMs: asked ?? scheduled };
}
