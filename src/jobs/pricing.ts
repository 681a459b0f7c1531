/**
 * Credits, computed here and nowhere else (spec 4.1 to 4.4). Pure functions of the probed numbers,
 * so the quote service, the worker's re-check and the tests all get the same answer.
 *
 * Durations: the measured duration is first rounded to whole milliseconds (ffprobe prints
 * microseconds, and a float like 15.000000001 must not bill a 16th second), then billed seconds
 * are the ceiling of that. The duration limits compare the same rounded value, so 60.0004 s passes
 * the 60 s limit and bills 60 s, while 60.001 s is rejected. See docs/contract.md, "Billing".
 */
import { JobError } from '../errors.js';
import { expectedText, expectedValue } from './messages.js';
import { LIPSYNC_MAX_VIDEO_SECONDS, type LipsyncModelId } from './kinds/lipsync/types.js';
import { MUSIC_VIDEO_MAX_AUDIO_SECONDS } from './kinds/music-video/types.js';
import type { UpscaleFactor } from './types.js';
import {
  IMAGE_MAX_OUTPUT_MEGAPIXELS,
  IMAGE_MAX_OUTPUT_SIDE_PX,
  VIDEO_UPSCALE_MAX_SECONDS,
} from './limits.js';

export * from './limits.js';

export const MUSIC_CREDITS = 15;

export interface LipsyncRate {
  creditsPerSecond: number;
  minimumCredits: number;
}

export const LIPSYNC_RATES: Readonly<Record<LipsyncModelId, LipsyncRate>> = {
  'vendor-lipsync-2': { creditsPerSecond: 10, minimumCredits: 50 },
  'vendor-lipsync-2-pro': { creditsPerSecond: 20, minimumCredits: 100 },
  'vendor-lipsync-3': { creditsPerSecond: 30, minimumCredits: 150 },
};

export const VIDEO_UPSCALE_CREDITS_PER_SECOND: Readonly<Record<UpscaleFactor, number>> = {
  '1': 16,
  '2': 16,
  '4': 28,
};

export type OutputTier = '24mp' | '48mp' | '96mp';

export interface ImageTier {
  /** Largest output in decimal megapixels (1 MP = 1,000,000 px) this tier covers, inclusive. */
  maxMegapixels: number;
  credits: number;
  tier: OutputTier;
}

/** Ascending; the first tier that covers the output applies. */
export const IMAGE_TIERS: readonly ImageTier[] = [
  { maxMegapixels: 24, credits: 20, tier: '24mp' },
  { maxMegapixels: 48, credits: 40, tier: '48mp' },
  { maxMegapixels: 96, credits: 80, tier: '96mp' },
];

const PIXELS_PER_MEGAPIXEL = 1_000_000;

export interface DurationPrice {
  creditsUsed: number;
  /** The measured duration rounded to milliseconds: what is billed, echoed and limit-checked. */
  durationSeconds: number;
  billedSeconds: number;
  creditsPerSecond: number;
}

export interface LipsyncPrice extends DurationPrice {
  minimumCredits: number;
}

export type VideoUpscalePrice = DurationPrice;

export interface ImageUpscalePrice {
  creditsUsed: number;
  outputWidth: number;
  outputHeight: number;
  /** Output pixels / 1,000,000, unrounded. */
  outputMegapixels: number;
  outputTier: OutputTier;
}

export interface MusicPrice {
  creditsUsed: number;
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

/** max(minimum, ceil(seconds) × rate); a video over 30 s is VIDEO_TOO_LONG. */
export function priceLipsync(model: LipsyncModelId, durationSeconds: number): LipsyncPrice {
  const rate = LIPSYNC_RATES[model];
  const ms = checkDuration(durationSeconds, LIPSYNC_MAX_VIDEO_SECONDS);
  const billed = Math.ceil(ms / 1000);
  return {
    creditsUsed: Math.max(rate.minimumCredits, billed * rate.creditsPerSecond),
    durationSeconds: ms / 1000,
    billedSeconds: billed,
    creditsPerSecond: rate.creditsPerSecond,
    minimumCredits: rate.minimumCredits,
  };
}

/** Rate for the factor × ceil(seconds); a video over 60 s is VIDEO_TOO_LONG. */
export function priceVideoUpscale(durationSeconds: number, factor: UpscaleFactor): VideoUpscalePrice {
  const rate = VIDEO_UPSCALE_CREDITS_PER_SECOND[factor];
  const ms = checkDuration(durationSeconds, VIDEO_UPSCALE_MAX_SECONDS);
  const billed = Math.ceil(ms / 1000);
  return { creditsUsed: billed * rate, durationSeconds: ms / 1000, billedSeconds: billed, creditsPerSecond: rate };
}

/**
 * Tier of the output size (input pixels × factor²) in decimal megapixels. Over 96 MP, or a longest
 * output side over 20,000 px, is OUTPUT_TOO_LARGE. Compared in whole pixels: no float rounding.
 */
export function priceImageUpscale(width: number, height: number, factor: UpscaleFactor): ImageUpscalePrice {
  checkDimension('the image width', width);
  checkDimension('the image height', height);
  const scale = Number(factor);
  const outputWidth = width * scale;
  const outputHeight = height * scale;
  const outputPixels = outputWidth * outputHeight;
  const outputMegapixels = outputPixels / PIXELS_PER_MEGAPIXEL;
  const what = `${outputMegapixels} MP (${width}×${height} at factor "${factor}")`;

  const tier = IMAGE_TIERS.find((t) => outputPixels <= t.maxMegapixels * PIXELS_PER_MEGAPIXEL);
  if (tier === undefined) {
    throw new JobError('OUTPUT_TOO_LARGE', expectedText('the output size', `at most ${IMAGE_MAX_OUTPUT_MEGAPIXELS} MP`, what));
  }
  const longestSide = Math.max(outputWidth, outputHeight);
  if (longestSide > IMAGE_MAX_OUTPUT_SIDE_PX) {
    throw new JobError(
      'OUTPUT_TOO_LARGE',
      expectedText(
        'the longest output side',
        `at most ${IMAGE_MAX_OUTPUT_SIDE_PX} px`,
        `${longestSide} px (${width}×${height} at factor "${factor}")`,
      ),
    );
  }
  return { creditsUsed: tier.credits, outputWidth, outputHeight, outputMegapixels, outputTier: tier.tier };
}

export function priceMusic(): MusicPrice {
  return { creditsUsed: MUSIC_CREDITS };
}

function checkDuration(durationSeconds: number, maxSeconds: number): number {
  const ms = durationMilliseconds(durationSeconds);
  if (ms > maxSeconds * 1000) {
    throw new JobError(
      'VIDEO_TOO_LONG',
      expectedText('the video duration', `at most ${maxSeconds} seconds`, `${ms / 1000} seconds`),
    );
  }
  return ms;
}

function checkDimension(subject: string, value: number): void {
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new JobError('PROBE_FAILED', expectedValue(subject, 'a positive whole number of pixels', value));
  }
}

// Music video (docs/music-video.md): 2 credits per started second of the decoded audio, at least 20.

export const MUSIC_VIDEO_CREDITS_PER_SECOND = 2;
export const MUSIC_VIDEO_MINIMUM_CREDITS = 20;

export interface MusicVideoPrice extends DurationPrice {
  minimumCredits: number;
}

/** max(20, ceil(seconds) x 2); PROBE_FAILED for no real duration, AUDIO_TOO_LONG over 8 minutes. */
export function priceMusicVideo(audioSeconds: number): MusicVideoPrice {
  const ms = durationMilliseconds(audioSeconds, 'the audio duration');
  checkMusicVideoAudioLength(ms / 1000);
  const billed = Math.ceil(ms / 1000);
  return {
    creditsUsed: Math.max(MUSIC_VIDEO_MINIMUM_CREDITS, billed * MUSIC_VIDEO_CREDITS_PER_SECOND),
    durationSeconds: ms / 1000,
    billedSeconds: billed,
    creditsPerSecond: MUSIC_VIDEO_CREDITS_PER_SECOND,
    minimumCredits: MUSIC_VIDEO_MINIMUM_CREDITS,
  };
}

/** AUDIO_TOO_LONG past 8 minutes (seconds already rounded to milliseconds, or a decoder's count). */
export function checkMusicVideoAudioLength(seconds: number): void {
  if (seconds > MUSIC_VIDEO_MAX_AUDIO_SECONDS) {
    throw new JobError(
      'AUDIO_TOO_LONG',
      expectedText('the audio duration', `at most ${MUSIC_VIDEO_MAX_AUDIO_SECONDS} seconds (8 minutes)`, `${Math.round(seconds * 1000) / 1000} seconds`),
    );
  }
}
