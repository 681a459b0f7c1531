/**
 * The shapes of a quote: what `quoteJob` needs (its I/O and the worker's policy), what it answers
 * (the spec's echo, the estimate, what it measured) and what it hands processing (`QuotedJob`).
 */
import type { JobError } from '../errors.js';
import type { SrNetworkCost } from './cost-model.js';
import type { HardwareProfile } from './hardware-classes.js';
import type { JobKind, KindPolicies } from './kind-contract.js';
import type { WorkLimits } from './work-limits.js';
import type { OutputTier } from './pricing.js';
import type { ImageUpscaleJob, UpscaleFactor, VideoUpscaleJob } from './types.js';
import type { ImageInfo, LocalInput, MediaInfo } from '../media/index.js';

export type InputKind = 'image' | 'video' | 'audio';

export interface QuoteDeps {
  /** Makes a job input local (safe download, or a CLI path); throws JobError (FETCH_FAILED, INPUT_TOO_LARGE, INVALID_URL). */
  localize(source: string, kind: InputKind, signal?: AbortSignal): Promise<LocalInput>;
  /** Throws JobError PROBE_FAILED on unreadable input. */
  probeImage(path: string): Promise<ImageInfo>;
  /** Throws JobError PROBE_FAILED on unreadable input. */
  probeMedia(path: string): Promise<MediaInfo>;
  /** The FFMPEG_PATH setting, for a quote that decodes an input with ffmpeg to measure it; unset: ffmpeg on the PATH. */
  ffmpegPath?: string;
}

/**
 * The worker's own rules on top of the spec's: work limits and the cost estimate on this worker's
 * hardware class. Built once from the settings (src/app/quote-policy.ts) and shared by the quote service,
 * `run`, `quote` and `serve`, so they all refuse the same jobs.
 */
export interface QuotePolicy {
  limits: WorkLimits;
  hardware: HardwareProfile;
  /** Each kind's own limits and cost figures, where it has any. */
  kinds: KindPolicies;
  /** Longest processing time per kind, in seconds: the daemon's watchdog (WORKER_WATCHDOG_MS). */
  timeLimitSeconds: Readonly<Record<JobKind, number>>;
  /** The super-resolution network that would serve a job, with its cost (reads its manifest). */
  srNetwork(kind: 'image' | 'video', factor: UpscaleFactor): Promise<SrNetworkCost>;
}

/** What the quote shows of the cost estimate (top level, beside `creditsUsed`), with a policy. */
export interface QuoteEstimate {
  /** Frames processed (1 for an image; the output's frames where they differ from the input's). */
  estimated_frames?: number;
  /** Estimated processing seconds on `hardware_class`. */
  estimated_seconds?: number;
  hardware_class?: string;
}

/**
 * What the quote measured, beside the spec's echo: the figures that price and bound the job, read
 * from the streams' packets (never from headers), so anyone can see what was billed and why. A
 * header that claims another duration is shown as `declared_seconds`: the streams won.
 */
export interface MeasuredStreams {
  from: 'streams';
  video?: { seconds: number; frames: number; frame_rate: string };
  audio?: { seconds: number };
  declared_seconds?: number;
}

// The `input` echo objects of spec 2.2 (image and video), and this worker's equivalents for the rest.

export interface ImageQuoteInput {
  image_url: string;
  upscale_factor: UpscaleFactor;
  /** `<width>×<height>` with U+00D7, the displayed (EXIF-oriented) size. */
  detected_dimensions: string;
  output_tier: OutputTier;
}

export interface VideoQuoteInput {
  video_url: string;
  upscale_factor: UpscaleFactor;
  /** Seconds rounded to milliseconds, no trailing zeros, then `s`: `12.5s`, `15.04s`, `60s`. */
  detected_duration: string;
  billed_seconds: number;
  credits_per_second: number;
}

export interface ImageQuote extends QuoteEstimate {
  model: ImageUpscaleJob['model'];
  creditsUsed: number;
  input: ImageQuoteInput;
}

export interface VideoQuote extends QuoteEstimate {
  model: VideoUpscaleJob['model'];
  creditsUsed: number;
  input: VideoQuoteInput;
  /** What the video file was measured as. */
  measured: { video: MeasuredStreams };
}

// Everything processing needs after a quote, narrowed by `kind`. The absent inputs are spelled
// `?: undefined` so that `quoted.inputs.video` can be read on the union without narrowing first.

export interface QuotedImageJob {
  kind: 'image';
  job: ImageUpscaleJob;
  quote: ImageQuote;
  inputs: { image: LocalInput; video?: undefined; audio?: undefined };
  probes: { image: ImageInfo; video?: undefined; audio?: undefined };
}

export interface QuotedVideoJob {
  kind: 'video';
  job: VideoUpscaleJob;
  quote: VideoQuote;
  inputs: { image?: undefined; video: LocalInput; audio?: undefined };
  probes: { image?: undefined; video: MediaInfo; audio?: undefined };
}

export interface ErrorBody {
  error: { code: JobError['code']; status: number; message: string };
}
