/**
 * The video upscale's types: its quote's echo (spec 2.2), what processing receives, and the bundle
 * its descriptor is typed by (VideoUpscaleTypes), which the registry's type map (kinds/index.ts)
 * names. No runtime imports. Its job is in ../../types.ts beside the image upscale's (they share
 * the factor), its result in ../../results.ts.
 */
import type { LocalInput, MediaInfo } from '../../../media/index.js';
import type { MeasuredStreams, QuoteEstimate } from '../../../jobs/quote-types.js';
import type { VideoResult } from '../../../jobs/results.js';
import type { UpscaleFactor, VideoUpscaleJob } from '../../../jobs/types.js';

/** The `input` echo of spec 2.2. */
export interface VideoQuoteInput {
  video_url: string;
  upscale_factor: UpscaleFactor;
  /** Seconds rounded to milliseconds, no trailing zeros, then `s`: `12.5s`, `15.04s`, `60s`. */
  detected_duration: string;
  billed_seconds: number;
  credits_per_second: number;
}

export interface VideoQuote extends QuoteEstimate {
  model: VideoUpscaleJob['model'];
  creditsUsed: number;
  input: VideoQuoteInput;
  /** What the video file was measured as. */
  measured: { video: MeasuredStreams };
}

/** Everything processing needs after a quote (the absent inputs are spelled `?: undefined`: see QuotedJob). */
export interface QuotedVideoJob {
  kind: 'video';
  job: VideoUpscaleJob;
  quote: VideoQuote;
  inputs: { image?: undefined; video: LocalInput; audio?: undefined };
  probes: { image?: undefined; video: MediaInfo; audio?: undefined };
}

/** What the video upscale's descriptor is typed by (KindDescriptor). */
export interface VideoUpscaleTypes {
  kind: 'video';
  job: VideoUpscaleJob;
  quote: VideoQuote;
  quoted: QuotedVideoJob;
  result: VideoResult;
}
