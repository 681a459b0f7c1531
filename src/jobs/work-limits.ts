/**
 * Limits on the work a job asks for, beyond the spec's duration and image-size limits: the credits
 * follow seconds of video (or an image's output tier), not frames, pixels or audio length, so
 * without these a short clip at 240 fps or a long audio in `loop` mode buys hours of a GPU host.
 * Pure checks: probed numbers in, a JobError naming the limit and the value out. The defaults are
 * in DEFAULT_WORK_LIMITS; settings change them (src/config.ts). See docs/contract.md, "Work limits".
 */
import { JobError } from '../errors.js';
import { expectedText } from './messages.js';

export interface WorkLimits {
  /** Longest side of a video input (after rotation), px. */
  videoMaxInputSide: number;
  /** Pixels of one video input frame. */
  videoMaxInputPixels: number;
  /** Longest side of a video output frame, px. */
  videoMaxOutputSide: number;
  /** Pixels of one video output frame. */
  videoMaxOutputPixels: number;
  /** Highest average frame rate accepted, frames per second. */
  videoMaxFps: number;
  /** Output pixels of a whole video job (frames x pixels per frame). */
  videoMaxJobOutputPixels: number;
  /** Largest share of its kind's processing time limit (watchdog) a job's estimate may use, per cent. */
  maxEstimatePercentOfLimit: number;
}

/**
 * H.264 level 6.2 (the highest; what libx264 writes for 8K): at most 139,264 macroblocks a frame,
 * 35,651,584 luma samples, so 7680x4320 and 8192x4320 fit. The side limit of 8192 px is what
 * decoders commonly accept (NVDEC, Chrome, Safari and ffmpeg's players play 8192x4320 H.264), the
 * level itself would allow sides up to 16,880 px on very thin frames that nothing plays.
 * 60 fps: the highest rate of common players and displays, and of level 6.2 at 8K is 128 fps.
 * 30 Gpx a job: 60 s of 3840x2160 at 60 fps (29.9 Gpx) passes; 60 s of 8K at 30 fps (59.7 Gpx)
 * does not. A kind's own limits are its own (QuotePolicy.kinds).
 */
export const H264_LEVEL_62_MAX_FRAME_PIXELS = 139_264 * 256;

export const DEFAULT_WORK_LIMITS: Readonly<WorkLimits> = {
  videoMaxInputSide: 8192,
  videoMaxInputPixels: H264_LEVEL_62_MAX_FRAME_PIXELS,
  videoMaxOutputSide: 8192,
  videoMaxOutputPixels: H264_LEVEL_62_MAX_FRAME_PIXELS,
  videoMaxFps: 60,
  videoMaxJobOutputPixels: 30_000_000_000,
  maxEstimatePercentOfLimit: 80,
};

interface Size {
  width: number;
  height: number;
}

function sizeText(s: Size): string {
  return `${s.width}×${s.height}`;
}

function groupDigits(n: number): string {
  return n.toLocaleString('en-US');
}

/** A video input frame over the size limits: VIDEO_TOO_LARGE. */
export function checkVideoInputSize(size: Size, limits: WorkLimits): void {
  const side = Math.max(size.width, size.height);
  if (side > limits.videoMaxInputSide) {
    throw new JobError(
      'VIDEO_TOO_LARGE',
      expectedText(
        'the longest side of the video',
        `at most ${limits.videoMaxInputSide} px`,
        `${side} px (${sizeText(size)})`,
      ),
    );
  }
  const pixels = size.width * size.height;
  if (pixels > limits.videoMaxInputPixels) {
    throw new JobError(
      'VIDEO_TOO_LARGE',
      expectedText(
        'the video frame',
        `at most ${groupDigits(limits.videoMaxInputPixels)} pixels`,
        `${groupDigits(pixels)} (${sizeText(size)})`,
      ),
    );
  }
}

/** A video output frame over the size limits (what the encoder could not write or players play): OUTPUT_TOO_LARGE. */
export function checkVideoOutputSize(output: Size, input: Size, factor: string, limits: WorkLimits): void {
  const how = `${sizeText(output)} from ${sizeText(input)} at factor "${factor}"`;
  const side = Math.max(output.width, output.height);
  if (side > limits.videoMaxOutputSide) {
    throw new JobError(
      'OUTPUT_TOO_LARGE',
      expectedText(
        'the longest side of the output video',
        `at most ${limits.videoMaxOutputSide} px`,
        `${side} px (${how})`,
      ),
    );
  }
  const pixels = output.width * output.height;
  if (pixels > limits.videoMaxOutputPixels) {
    throw new JobError(
      'OUTPUT_TOO_LARGE',
      expectedText(
        'the output video frame',
        `at most ${groupDigits(limits.videoMaxOutputPixels)} pixels`,
        `${groupDigits(pixels)} (${how})`,
      ),
    );
  }
}

/** Above the frame-rate limit: refused (FRAME_RATE_TOO_HIGH), never silently resampled. */
export function checkFrameRate(fps: { num: number; den: number }, limits: WorkLimits): void {
  // Compare num/den > max as integers-ish: num > max x den (den is an integer from ffprobe).
  if (fps.num > limits.videoMaxFps * fps.den) {
    const shown = Math.round((fps.num / fps.den) * 1000) / 1000;
    throw new JobError(
      'FRAME_RATE_TOO_HIGH',
      expectedText('the video frame rate', `at most ${limits.videoMaxFps} fps`, `${shown} fps (${fps.num}/${fps.den})`),
    );
  }
}

/** Output pixels of the whole job over the limit: OUTPUT_TOO_LARGE. */
export function checkJobOutputPixels(frames: number, pixelsPerFrame: number, limits: WorkLimits): void {
  const total = frames * pixelsPerFrame;
  if (total > limits.videoMaxJobOutputPixels) {
    throw new JobError(
      'OUTPUT_TOO_LARGE',
      expectedText(
        'the output of the job',
        `at most ${groupDigits(limits.videoMaxJobOutputPixels)} pixels in all`,
        `${groupDigits(total)} (${groupDigits(frames)} frames of ${groupDigits(pixelsPerFrame)} pixels)`,
      ),
    );
  }
}

/** An estimate over the allowed share of the kind's time limit: JOB_TOO_COSTLY (it could not finish). */
export function checkEstimate(
  estimatedSeconds: number,
  limitSeconds: number,
  hardwareClass: string,
  limits: WorkLimits,
): void {
  const allowed = Math.floor(limitSeconds * limits.maxEstimatePercentOfLimit) / 100;
  if (estimatedSeconds > allowed) {
    throw new JobError(
      'JOB_TOO_COSTLY',
      expectedText(
        `the estimated processing time on ${hardwareClass}`,
        `at most ${allowed} seconds (${limits.maxEstimatePercentOfLimit} % of the ${limitSeconds} s limit)`,
        `${estimatedSeconds} seconds`,
      ),
    );
  }
}
