/**
 * The image upscale's price (spec 4.3): the tier of the output size, and the output limits it
 * refuses past. Pure: the quote and the gateway's re-check both call it.
 */
import { JobError } from '../../../errors.js';
import { IMAGE_MAX_OUTPUT_MEGAPIXELS, IMAGE_MAX_OUTPUT_SIDE_PX } from '../../../jobs/limits.js';
import { expectedText, expectedValue } from '../../../jobs/messages.js';
import type { UpscaleFactor } from '../../../jobs/types.js';
import type { OutputTier } from './types.js';

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

export interface ImageUpscalePrice {
  creditsUsed: number;
  outputWidth: number;
  outputHeight: number;
  /** Output pixels / 1,000,000, unrounded. */
  outputMegapixels: number;
  outputTier: OutputTier;
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
    throw new JobError(
      'OUTPUT_TOO_LARGE',
      expectedText('the output size', `at most ${IMAGE_MAX_OUTPUT_MEGAPIXELS} MP`, what),
    );
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

function checkDimension(subject: string, value: number): void {
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new JobError('PROBE_FAILED', expectedValue(subject, 'a positive whole number of pixels', value));
  }
}
