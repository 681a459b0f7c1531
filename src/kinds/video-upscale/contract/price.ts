/**
 * The video upscale's price (spec 4.2): the factor's rate per started second, and the 60-second
 * limit. Pure: the quote and the gateway's re-check both call it.
 */
import { VIDEO_UPSCALE_MAX_SECONDS } from '../../../jobs/limits.js';
import { checkVideoDuration, type DurationPrice } from '../../../jobs/pricing.js';
import type { UpscaleFactor } from '../../../jobs/types.js';

export const VIDEO_UPSCALE_CREDITS_PER_SECOND: Readonly<Record<UpscaleFactor, number>> = {
  '1': 16,
  '2': 16,
  '4': 28,
};

export type VideoUpscalePrice = DurationPrice;

/** Rate for the factor × ceil(seconds); a video over 60 s is VIDEO_TOO_LONG. */
export function priceVideoUpscale(durationSeconds: number, factor: UpscaleFactor): VideoUpscalePrice {
  const rate = VIDEO_UPSCALE_CREDITS_PER_SECOND[factor];
  const ms = checkVideoDuration(durationSeconds, VIDEO_UPSCALE_MAX_SECONDS);
  const billed = Math.ceil(ms / 1000);
  return { creditsUsed: billed * rate, durationSeconds: ms / 1000, billedSeconds: billed, creditsPerSecond: rate };
}
