/**
 * Lip-sync's price (spec 4.1): each model's rate per started second with its minimum charge, and
 * the 30-second limit. Pure: the quote and the gateway's re-check both call it.
 */
import { checkVideoDuration, type DurationPrice } from '../../../jobs/pricing.js';
import { LIPSYNC_MAX_VIDEO_SECONDS, type LipsyncModelId } from './types.js';

export interface LipsyncRate {
  creditsPerSecond: number;
  minimumCredits: number;
}

export const LIPSYNC_RATES: Readonly<Record<LipsyncModelId, LipsyncRate>> = {
  'vendor-lipsync-2': { creditsPerSecond: 10, minimumCredits: 50 },
  'vendor-lipsync-2-pro': { creditsPerSecond: 20, minimumCredits: 100 },
  'vendor-lipsync-3': { creditsPerSecond: 30, minimumCredits: 150 },
};

export interface LipsyncPrice extends DurationPrice {
  minimumCredits: number;
}

/** max(minimum, ceil(seconds) × rate); a video over 30 s is VIDEO_TOO_LONG. */
export function priceLipsync(model: LipsyncModelId, durationSeconds: number): LipsyncPrice {
  const rate = LIPSYNC_RATES[model];
  const ms = checkVideoDuration(durationSeconds, LIPSYNC_MAX_VIDEO_SECONDS);
  const billed = Math.ceil(ms / 1000);
  return {
    creditsUsed: Math.max(rate.minimumCredits, billed * rate.creditsPerSecond),
    durationSeconds: ms / 1000,
    billedSeconds: billed,
    creditsPerSecond: rate.creditsPerSecond,
    minimumCredits: rate.minimumCredits,
  };
}
