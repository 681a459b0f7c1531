/**
 * The image upscale's types: its quote's echo (spec 2.2), what processing receives, and the bundle
 * its descriptor is typed by (ImageUpscaleTypes), which the registry's type map (kinds/index.ts)
 * names. No runtime imports. Its job is in ../../types.ts beside the video upscale's (they share
 * the factor), its result in ../../results.ts.
 */
import type { ImageInfo, LocalInput } from '../../../media/index.js';
import type { QuoteEstimate } from '../../../jobs/quote-types.js';
import type { ImageResult } from '../../../jobs/results.js';
import type { ImageUpscaleJob, UpscaleFactor } from '../../../jobs/types.js';

/** The price tier of the output size (price.ts). */
export type OutputTier = '24mp' | '48mp' | '96mp';

/** The `input` echo of spec 2.2. */
export interface ImageQuoteInput {
  image_url: string;
  upscale_factor: UpscaleFactor;
  /** `<width>×<height>` with U+00D7, the displayed (EXIF-oriented) size. */
  detected_dimensions: string;
  output_tier: OutputTier;
}

export interface ImageQuote extends QuoteEstimate {
  model: ImageUpscaleJob['model'];
  creditsUsed: number;
  input: ImageQuoteInput;
}

/** Everything processing needs after a quote (the absent inputs are spelled `?: undefined`: see QuotedJob). */
export interface QuotedImageJob {
  kind: 'image';
  job: ImageUpscaleJob;
  quote: ImageQuote;
  inputs: { image: LocalInput; video?: undefined; audio?: undefined };
  probes: { image: ImageInfo; video?: undefined; audio?: undefined };
}

/** What the image upscale's descriptor is typed by (KindDescriptor). */
export interface ImageUpscaleTypes {
  kind: 'image';
  job: ImageUpscaleJob;
  quote: ImageQuote;
  quoted: QuotedImageJob;
  result: ImageResult;
}
