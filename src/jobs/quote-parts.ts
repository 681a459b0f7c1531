/**
 * What the kinds' quotes share (src/jobs/kinds/): the estimate's fields after the time-limit check,
 * a video's displayed size, what a file was measured as, the frames a video upscale processes, and
 * the wording of durations and refusals. Pure.
 */
import type { JobError } from '../errors.js';
import { frameCount, type CostEstimate } from './cost-model.js';
import type { ErrorBody, MeasuredStreams, QuoteEstimate, QuotePolicyOf } from './quote-types.js';
import { checkEstimate } from './work-limits.js';
import type { MediaInfo, VideoStreamInfo } from '../media/index.js';

/** The estimate's quote fields, after refusing it when it would not finish within the kind's limit. */
export function checkedEstimate<K extends string>(
  kind: K,
  estimate: CostEstimate,
  policy: QuotePolicyOf<K>,
): Required<QuoteEstimate> {
  checkEstimate(estimate.seconds, policy.timeLimitSeconds[kind], policy.hardware.name, policy.limits);
  return {
    estimated_frames: estimate.frames,
    estimated_seconds: estimate.seconds,
    hardware_class: policy.hardware.name,
  };
}

/** Displayed size: quarter turns swap width and height (the decoder applies the rotation). */
export function displayed(video: VideoStreamInfo): { width: number; height: number } {
  const quarter = video.rotation === 90 || video.rotation === 270;
  return quarter ? { width: video.height, height: video.width } : { width: video.width, height: video.height };
}

const milliseconds = (seconds: number): number => Math.round(seconds * 1000) / 1000;

/** The quote's account of what it measured in one file (see MeasuredStreams). */
export function measuredStreams(info: MediaInfo): MeasuredStreams {
  const measured: MeasuredStreams = { from: 'streams' };
  const { video, audio } = info;
  if (video?.frameCount !== undefined && video.seconds !== undefined) {
    measured.video = {
      seconds: milliseconds(video.seconds),
      frames: video.frameCount,
      frame_rate: `${video.fps.num}/${video.fps.den}`,
    };
  }
  if (audio?.seconds !== undefined) measured.audio = { seconds: milliseconds(audio.seconds) };
  if (info.declaredDurationSeconds !== undefined)
    measured.declared_seconds = milliseconds(info.declaredDurationSeconds);
  return measured;
}

/**
 * Frames a video upscale processes: the packets measured (one frame each), unless a variable frame
 * rate is made constant at its highest rate (then the video stream's span x that rate:
 * video/video-geometry.ts). Sound running past the last frame lengthens the bill, not the frames.
 */
export function processedFrames(video: VideoStreamInfo, durationSeconds: number): number {
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
