/**
 * The arithmetic every price shares (spec 4.1 to 4.4): durations as billed, and the duration limit
 * a price refuses past. Pure functions of the probed numbers, so the quote service, the worker's
 * re-check and the tests all get the same answer. Each kind's own price (its rates, tiers and
 * limits) is in its room, `kinds/<kind>/price.ts`, built on these; the registry (kinds/index.ts)
 * passes them all on, and this module names no kind.
 *
 * Durations: the measured duration is first rounded to whole milliseconds (ffprobe prints
 * microseconds, and a float like 15.000000001 must not bill a 16th second), then billed seconds
 * are the ceiling of that. The duration limits compare the same rounded value, so 60.0004 s passes
 * the 60 s limit and bills 60 s, while 60.001 s is rejected. See docs/contract.md, "Billing".
 */
import { JobError } from '../errors.js';
import { expectedText, expectedValue } from './messages.js';

export interface DurationPrice {
  creditsUsed: number;
  /** The measured duration rounded to milliseconds: what is billed, echoed and limit-checked. */
  durationSeconds: number;
  billedSeconds: number;
  creditsPerSecond: number;
}

/**
 * The measured duration as whole milliseconds. Not finite, negative, or under half a millisecond
 * means the probe did not really read a duration: PROBE_FAILED.
 */
export function durationMilliseconds(durationSeconds: number, subject = 'the video duration'): number {
  const ms = Number.isFinite(durationSeconds) ? Math.round(durationSeconds * 1000) : Number.NaN;
  if (!(ms >= 1)) {
    throw new JobError('PROBE_FAILED', expectedValue(subject, 'a positive number of seconds', durationSeconds));
  }
  return ms;
}

/** The duration as billed and echoed: rounded to milliseconds (15.04 stays 15.04, 15.0000001 becomes 15). */
export function roundedSeconds(durationSeconds: number): number {
  return durationMilliseconds(durationSeconds) / 1000;
}

/** ceil of the millisecond-rounded duration, in integer arithmetic so that no float can tip it. */
export function billedSeconds(durationSeconds: number): number {
  return Math.ceil(durationMilliseconds(durationSeconds) / 1000);
}

/** The video's duration in whole milliseconds (durationMilliseconds); VIDEO_TOO_LONG past `maxSeconds`. */
export function checkVideoDuration(durationSeconds: number, maxSeconds: number): number {
  const ms = durationMilliseconds(durationSeconds);
  if (ms > maxSeconds * 1000) {
    throw new JobError(
      'VIDEO_TOO_LONG',
      expectedText('the video duration', `at most ${maxSeconds} seconds`, `${ms / 1000} seconds`),
    );
  }
  return ms;
}
