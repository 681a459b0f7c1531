/**
 * quote = fetch the inputs, probe them, check their formats, price. No processing. The quote
 * service answers the control plane with `quote`; the worker runs the same function before
 * processing and hands the fetched files and probe results on, so nothing is fetched twice.
 *
 * I/O comes in through QuoteDeps (implemented in src/media/), so this module stays testable with
 * in-memory fakes. Files made local by `deps.localize` belong to the caller's job directory: the
 * caller removes them in its `finally`, whether quoting succeeded or not. The shapes are in
 * quote-types.ts, the content checks in input-checks.ts.
 */
import { JobError } from '../errors.js';
import { checkAudio, checkFormat, checkVideo } from './input-checks.js';
import {
  estimateImageUpscale,
  estimateLipsync,
  estimateVideoUpscale,
  frameCount,
  lipsyncOutputSeconds,
  type CostEstimate,
} from './cost-model.js';
import type { JobKind } from './models.js';
import type {
  ErrorBody,
  MeasuredStreams,
  MusicQuoteInput,
  QuoteDeps,
  QuoteEstimate,
  QuotePolicy,
  QuotedImageJob,
  QuotedJob,
  QuotedLipsyncJob,
  QuotedMusicJob,
  QuotedVideoJob,
} from './quote-types.js';
import {
  checkEstimate,
  checkFrameRate,
  checkJobOutputPixels,
  checkLipsyncOutput,
  checkVideoInputSize,
  checkVideoOutputSize,
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
} from './pricing.js';
import type { ImageUpscaleJob, Job, LipsyncJob, MusicJob, VideoUpscaleJob } from './types.js';
import type { MediaInfo, VideoStreamInfo } from '../media/index.js';

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

const milliseconds = (seconds: number): number => Math.round(seconds * 1000) / 1000;

/** The quote's account of what it measured in one file (see MeasuredStreams). */
export function measuredStreams(info: MediaInfo): MeasuredStreams {
  const measured: MeasuredStreams = { from: 'streams' };
  const { video, audio } = info;
  if (video?.frameCount !== undefined && video.seconds !== undefined) {
    measured.video = { seconds: milliseconds(video.seconds), frames: video.frameCount, frame_rate: `${video.fps.num}/${video.fps.den}` };
  }
  if (audio?.seconds !== undefined) measured.audio = { seconds: milliseconds(audio.seconds) };
  if (info.declaredDurationSeconds !== undefined) measured.declared_seconds = milliseconds(info.declaredDurationSeconds);
  return measured;
}

/**
 * What a lip-sync bills: the video stream's measured span. The file's own audio is replaced by the
 * job's, so audio running past the last frame does not lengthen the bill (docs/contract.md, "Billing").
 * A video stream without timed packets falls back to the file's measured span.
 */
export function lipsyncBilledSeconds(info: MediaInfo): number {
  return info.video?.seconds ?? info.durationSeconds;
}

/**
 * Frames a video upscale processes: the packets measured (one frame each), unless a variable frame
 * rate is made constant at its highest rate (then the video stream's span x that rate:
 * video/video-geometry.ts). Sound running past the last frame lengthens the bill, not the frames.
 */
function processedFrames(video: VideoStreamInfo, durationSeconds: number): number {
  if (video.variableFrameRate) return frameCount(video.seconds ?? durationSeconds, video.cfrRate ?? video.fps);
  return video.frameCount === undefined ? frameCount(durationSeconds, video.fps) : video.frameCount;
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
    // The rate it runs at: a variable frame rate is processed at its highest (video/video-geometry.ts).
    checkFrameRate(info.video.cfrRate ?? info.video.fps, limits);
    const f = Number(upscale_factor);
    checkVideoOutputSize({ width: size.width * f, height: size.height * f }, size, upscale_factor, limits);
    const frames = processedFrames(info.video, price.durationSeconds);
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
      measured: { video: measuredStreams(info) },
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
  // The 30 s limit reads the file's measured span, as the worker's own check does (lipsync/pipeline.ts).
  priceLipsync(job.model, videoInfo.durationSeconds);
  const price = priceLipsync(job.model, lipsyncBilledSeconds(videoInfo));
  if (policy !== undefined && videoInfo.video !== undefined) {
    // The output keeps the input's size and rate: the input's limits are the output's.
    checkVideoInputSize(displayed(videoInfo.video), policy.limits);
    checkFrameRate(videoInfo.video.cfrRate ?? videoInfo.video.fps, policy.limits);
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
      measured: { video: measuredStreams(videoInfo), audio: measuredStreams(audioInfo) },
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
