/**
 * quote = fetch the inputs, probe them, check their formats, price. No processing. The quote
 * service answers the control plane with `quote`; the worker runs the same function before
 * processing and hands the fetched files and probe results on, so nothing is fetched twice.
 *
 * I/O comes in through QuoteDeps (implemented in src/media/), so this module stays testable with
 * in-memory fakes. Files made local by `deps.localize` belong to the caller's job directory: the
 * caller removes them in its `finally`, whether quoting succeeded or not.
 */
import { JobError } from '../errors.js';
import { expectedText } from './messages.js';
import {
  estimateImageUpscale,
  estimateLipsync,
  estimateVideoUpscale,
  frameCount,
  lipsyncOutputSeconds,
  type CostEstimate,
  type SrNetworkCost,
} from './cost-model.js';
import type { HardwareProfile } from './hardware-classes.js';
import { type JobKind, type LipsyncModelId } from './models.js';
import {
  checkEstimate,
  checkFrameRate,
  checkJobOutputPixels,
  checkLipsyncOutput,
  checkVideoInputSize,
  checkVideoOutputSize,
  type WorkLimits,
} from './work-limits.js';
import {
  IMAGE_UPSCALE_FORMATS,
  LIPSYNC_AUDIO_CONTAINERS,
  LIPSYNC_VIDEO_CONTAINERS,
  VIDEO_UPSCALE_CONTAINERS,
  durationMilliseconds,
  priceImageUpscale,
  priceLipsync,
  priceMusic,
  priceVideoUpscale,
  type OutputTier,
} from './pricing.js';
import type {
  ImageUpscaleJob,
  Job,
  LipsyncJob,
  MusicJob,
  SyncMode,
  UpscaleFactor,
  VideoUpscaleJob,
} from './types.js';
import type { ContainerKind, ImageFormat, ImageInfo, LocalInput, MediaInfo, VideoStreamInfo } from '../media/index.js';

export type InputKind = 'image' | 'video' | 'audio';

export interface QuoteDeps {
  /** Makes a job input local (safe download, or a CLI path); throws JobError (FETCH_FAILED, INPUT_TOO_LARGE, INVALID_URL). */
  localize(source: string, kind: InputKind, signal?: AbortSignal): Promise<LocalInput>;
  /** Throws JobError PROBE_FAILED on unreadable input. */
  probeImage(path: string): Promise<ImageInfo>;
  /** Throws JobError PROBE_FAILED on unreadable input. */
  probeMedia(path: string): Promise<MediaInfo>;
}

/**
 * The worker's own rules on top of the spec's: work limits and the cost estimate on this worker's
 * hardware class. Built once from the settings (src/app/quote-policy.ts) and shared by the quote service,
 * `run`, `quote` and `serve`, so they all refuse the same jobs.
 */
export interface QuotePolicy {
  limits: WorkLimits;
  hardware: HardwareProfile;
  /** Longest processing time per kind, in seconds: the daemon's watchdog (WORKER_WATCHDOG_MS). */
  timeLimitSeconds: Readonly<Record<JobKind, number>>;
  /** The super-resolution network that would serve a job, with its cost (reads its manifest). */
  srNetwork(kind: 'image' | 'video', factor: UpscaleFactor): Promise<SrNetworkCost>;
}

/** What the quote shows of the cost estimate (top level, beside `creditsUsed`), with a policy. */
export interface QuoteEstimate {
  /** Frames processed (1 for an image; lip-sync: output frames). */
  estimated_frames?: number;
  /** Estimated processing seconds on `hardware_class`. */
  estimated_seconds?: number;
  hardware_class?: string;
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

export interface LipsyncQuoteInput {
  video_url: string;
  audio_url: string;
  sync_mode: SyncMode;
  active_speaker: boolean;
  model: LipsyncModelId;
  billed_seconds: number;
  credits_per_second: number;
}

export type MusicQuoteInput =
  | { custom_mode: false; prompt: string; instrumental: boolean }
  | { custom_mode: true; title: string; style: string; instrumental: boolean };

export interface ImageQuote extends QuoteEstimate {
  model: ImageUpscaleJob['model'];
  creditsUsed: number;
  input: ImageQuoteInput;
}

export interface VideoQuote extends QuoteEstimate {
  model: VideoUpscaleJob['model'];
  creditsUsed: number;
  input: VideoQuoteInput;
}

export interface LipsyncQuote extends QuoteEstimate {
  model: LipsyncModelId;
  creditsUsed: number;
  /** Measured video duration in seconds, rounded to milliseconds (spec 2.2 `duration`). */
  duration: number;
  input: LipsyncQuoteInput;
}

export interface MusicQuote {
  model: MusicJob['model'];
  creditsUsed: number;
  input: MusicQuoteInput;
}

/** What the CLI prints and the quote service answers: plain JSON. */
export type Quote = ImageQuote | VideoQuote | LipsyncQuote | MusicQuote;

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

export interface QuotedLipsyncJob {
  kind: 'lipsync';
  job: LipsyncJob;
  quote: LipsyncQuote;
  inputs: { image?: undefined; video: LocalInput; audio: LocalInput };
  probes: { image?: undefined; video: MediaInfo; audio: MediaInfo };
}

export interface QuotedMusicJob {
  kind: 'music';
  job: MusicJob;
  quote: MusicQuote;
  inputs: { image?: undefined; video?: undefined; audio?: undefined };
  probes: { image?: undefined; video?: undefined; audio?: undefined };
}

export type QuotedJob = QuotedImageJob | QuotedVideoJob | QuotedLipsyncJob | QuotedMusicJob;

export interface ErrorBody {
  error: { code: JobError['code']; status: number; message: string };
}

/**
 * Validates the inputs' content and prices a parsed job. Checks run in this order (first failure
 * wins): fetch, probe, format, streams, duration/size limits; for lip-sync the whole video chain
 * runs before the audio is fetched, so a video over 30 s is refused without downloading the audio.
 * With a `policy` (every caller but the spec-only tests), the work limits and the cost estimate come
 * last, in the order of docs/contract.md "Work limits and the cost estimate", and the quote carries
 * the estimate. Without one, the quote is the spec's alone.
 */
export async function quoteJob(job: Job, deps: QuoteDeps, signal?: AbortSignal, policy?: QuotePolicy): Promise<QuotedJob> {
  signal?.throwIfAborted();
  switch (job.model) {
    case 'vendor-image-upscale':
      return quoteImage(job, deps, signal, policy);
    case 'vendor-video-upscale':
      return quoteVideo(job, deps, signal, policy);
    case 'vendor-v5-generate-music':
      return quoteMusic(job);
    default:
      return quoteLipsync(job, deps, signal, policy);
  }
}

/** The estimate's quote fields, after refusing it when it would not finish within the kind's limit. */
function checkedEstimate(kind: JobKind, estimate: CostEstimate, policy: QuotePolicy): Required<QuoteEstimate> {
  checkEstimate(estimate.seconds, policy.timeLimitSeconds[kind], policy.hardware.name, policy.limits);
  return { estimated_frames: estimate.frames, estimated_seconds: estimate.seconds, hardware_class: policy.hardware.name };
}

/** Displayed size: quarter turns swap width and height (the decoder applies the rotation). */
function displayed(video: VideoStreamInfo): { width: number; height: number } {
  const quarter = video.rotation === 90 || video.rotation === 270;
  return quarter ? { width: video.height, height: video.width } : { width: video.width, height: video.height };
}

/** The error body the quote service and `media-worker quote` print for a rejected job. */
export function errorBody(err: JobError): ErrorBody {
  return { error: { code: err.code, status: err.status, message: err.message } };
}

/** `errorBody` as one line of JSON. */
export function formatQuoteError(err: JobError): string {
  return JSON.stringify(errorBody(err));
}

/** `15.04s`: seconds as rounded for billing, shortest decimal form, no trailing zeros. */
export function formatDuration(seconds: number): string {
  return `${seconds}s`;
}

async function quoteImage(job: ImageUpscaleJob, deps: QuoteDeps, signal?: AbortSignal, policy?: QuotePolicy): Promise<QuotedImageJob> {
  const { image_url, upscale_factor } = job.input;
  const image = await deps.localize(image_url, 'image', signal);
  signal?.throwIfAborted();
  const info = await deps.probeImage(image.path);
  checkFormat('image_url', info.format, IMAGE_UPSCALE_FORMATS);
  const price = priceImageUpscale(info.width, info.height, upscale_factor);
  let estimate: QuoteEstimate = {};
  if (policy !== undefined) {
    const network = await policy.srNetwork('image', upscale_factor);
    const cost = estimateImageUpscale({ width: info.width, height: info.height, factor: upscale_factor }, network, policy.hardware);
    estimate = checkedEstimate('image', cost, policy);
  }
  return {
    kind: 'image',
    job,
    quote: {
      model: job.model,
      creditsUsed: price.creditsUsed,
      ...estimate,
      input: {
        image_url,
        upscale_factor,
        detected_dimensions: `${info.width}×${info.height}`,
        output_tier: price.outputTier,
      },
    },
    inputs: { image },
    probes: { image: info },
  };
}

async function quoteVideo(job: VideoUpscaleJob, deps: QuoteDeps, signal?: AbortSignal, policy?: QuotePolicy): Promise<QuotedVideoJob> {
  const { video_url, upscale_factor } = job.input;
  const video = await deps.localize(video_url, 'video', signal);
  signal?.throwIfAborted();
  const info = await deps.probeMedia(video.path);
  checkVideo('video_url', info, VIDEO_UPSCALE_CONTAINERS);
  const price = priceVideoUpscale(info.durationSeconds, upscale_factor);
  let estimate: QuoteEstimate = {};
  if (policy !== undefined && info.video !== undefined) {
    const { limits } = policy;
    const size = displayed(info.video);
    checkVideoInputSize(size, limits);
    checkFrameRate(info.video.fps, limits);
    const f = Number(upscale_factor);
    checkVideoOutputSize({ width: size.width * f, height: size.height * f }, size, upscale_factor, limits);
    const frames = frameCount(price.durationSeconds, info.video.fps);
    const network = await policy.srNetwork('video', upscale_factor);
    const cost = estimateVideoUpscale({ ...size, frames, factor: upscale_factor }, network, policy.hardware);
    checkJobOutputPixels(frames, cost.outputPixelsPerFrame, limits);
    estimate = checkedEstimate('video', cost, policy);
  }
  return {
    kind: 'video',
    job,
    quote: {
      model: job.model,
      creditsUsed: price.creditsUsed,
      ...estimate,
      input: {
        video_url,
        upscale_factor,
        detected_duration: formatDuration(price.durationSeconds),
        billed_seconds: price.billedSeconds,
        credits_per_second: price.creditsPerSecond,
      },
    },
    inputs: { video },
    probes: { video: info },
  };
}

async function quoteLipsync(job: LipsyncJob, deps: QuoteDeps, signal?: AbortSignal, policy?: QuotePolicy): Promise<QuotedLipsyncJob> {
  const { video_url, audio_url, sync_mode, active_speaker } = job.input;

  const video = await deps.localize(video_url, 'video', signal);
  signal?.throwIfAborted();
  const videoInfo = await deps.probeMedia(video.path);
  checkVideo('video_url', videoInfo, LIPSYNC_VIDEO_CONTAINERS);
  const price = priceLipsync(job.model, videoInfo.durationSeconds);
  if (policy !== undefined && videoInfo.video !== undefined) {
    // The output keeps the input's size and rate: the input's limits are the output's.
    checkVideoInputSize(displayed(videoInfo.video), policy.limits);
    checkFrameRate(videoInfo.video.fps, policy.limits);
  }
  signal?.throwIfAborted();

  const audio = await deps.localize(audio_url, 'audio', signal);
  signal?.throwIfAborted();
  const audioInfo = await deps.probeMedia(audio.path);
  checkAudio('audio_url', audioInfo, LIPSYNC_AUDIO_CONTAINERS);

  let estimate: QuoteEstimate = {};
  if (policy !== undefined && videoInfo.video !== undefined) {
    const audioSeconds = durationMilliseconds(audioInfo.durationSeconds, 'the audio duration') / 1000;
    const outputSeconds = lipsyncOutputSeconds(sync_mode, price.durationSeconds, audioSeconds);
    checkLipsyncOutput(sync_mode, outputSeconds, price.creditsUsed / price.creditsPerSecond, policy.limits);
    const frames = frameCount(outputSeconds, videoInfo.video.fps);
    estimate = checkedEstimate('lipsync', estimateLipsync({ ...displayed(videoInfo.video), frames }, policy.hardware), policy);
  }

  return {
    kind: 'lipsync',
    job,
    quote: {
      model: job.model,
      creditsUsed: price.creditsUsed,
      duration: price.durationSeconds,
      ...estimate,
      input: {
        video_url,
        audio_url,
        sync_mode,
        active_speaker,
        model: job.model,
        billed_seconds: price.billedSeconds,
        credits_per_second: price.creditsPerSecond,
      },
    },
    inputs: { video, audio },
    probes: { video: videoInfo, audio: audioInfo },
  };
}

function quoteMusic(job: MusicJob): QuotedMusicJob {
  const { input } = job;
  const echo: MusicQuoteInput = input.custom_mode
    ? { custom_mode: true, title: input.title, style: input.style, instrumental: input.instrumental }
    : { custom_mode: false, prompt: input.prompt, instrumental: input.instrumental };
  return {
    kind: 'music',
    job,
    quote: { model: job.model, creditsUsed: priceMusic().creditsUsed, input: echo },
    inputs: {},
    probes: {},
  };
}

// ---------------------------------------------------------------------------------------------
// Content checks. Formats come from the probe (file content), never from the URL or file name.

const FORMAT_NAMES: Readonly<Record<ContainerKind | ImageFormat, string>> = {
  jpeg: 'JPEG',
  png: 'PNG',
  webp: 'WebP',
  mp4: 'MP4',
  mov: 'MOV',
  m4v: 'M4V',
  mkv: 'MKV',
  webm: 'WebM',
  gif: 'GIF',
  mp3: 'MP3',
  wav: 'WAV',
  aac: 'AAC',
  ogg: 'OGG',
  m4a: 'M4A',
};

/** `MP4, MOV or MKV` */
function formatList(formats: readonly (ContainerKind | ImageFormat)[]): string {
  const names = formats.map(formatName);
  return names.length <= 1 ? names.join('') : `${names.slice(0, -1).join(', ')} or ${names.at(-1)}`;
}

function formatName(format: string): string {
  return FORMAT_NAMES[format as ContainerKind | ImageFormat] ?? JSON.stringify(format);
}

function checkFormat<F extends ContainerKind | ImageFormat>(field: string, detected: F, allowed: readonly F[]): void {
  if (!allowed.includes(detected)) {
    throw new JobError('PROBE_FAILED', expectedText(field, formatList(allowed), `${formatName(detected)} content`));
  }
}

function checkVideo(field: string, info: MediaInfo, allowed: readonly ContainerKind[]): void {
  checkFormat(field, info.container, allowed);
  if (info.video === undefined) {
    throw new JobError(
      'PROBE_FAILED',
      expectedText(field, 'a video with a video stream', `${formatName(info.container)} content without one`),
    );
  }
}

function checkAudio(field: string, info: MediaInfo, allowed: readonly ContainerKind[]): void {
  checkFormat(field, info.container, allowed);
  if (info.audio === undefined) {
    throw new JobError(
      'PROBE_FAILED',
      expectedText(field, 'audio with an audio stream', `${formatName(info.container)} content without one`),
    );
  }
  durationMilliseconds(info.durationSeconds, 'the audio duration');
}
