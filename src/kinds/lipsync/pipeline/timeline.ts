/**
 * The five `sync_mode` strategies: how long the output runs, which source frame each output frame
 * shows, and what happens to the audio. Pure: counts and seconds in, a plan out.
 *
 * Semantics (spec 4.2, as sync.so documents them):
 *   cut_off  the shorter input decides; the longer one is cut.
 *   loop     the audio decides; the video restarts from frame 0 as often as needed.
 *   bounce   the audio decides; the video plays forward then backward, the turning frames shown
 *            once: 0, 1, ..., n-1, n-2, ..., 1, 0, 1, ...
 *   silence  the longer input decides; past the video's end its last frame stays on screen (frozen),
 *            past the audio's end the audio is padded with silence.
 *   remap    the audio decides; the video is time-stretched (or squeezed) to fit: output frame i
 *            shows source frame floor(i * n / outputFrames). Floor, not round: a video frame is on
 *            screen from its timestamp until the next one, so the frame visible at stretched time
 *            t is the last one that started at or before it. This also keeps the first output frame
 *            on frame 0 and never runs past frame n-1.
 * "The audio decides" holds whether the audio is longer or shorter than the video (a shorter audio
 * in loop, bounce or remap gives a shorter output, as in sync.so).
 *
 * The output runs at the source frame rate. Its frame count from an audio duration is the nearest
 * whole frame (at least one), so the output's duration is within half a frame of the audio's; the
 * audio plan then trims or pads the audio to exactly `durationSeconds`, which keeps both streams of
 * the result the same length.
 *
 * Frames are mapped by a function rather than a table: a long audio in loop mode must not allocate.
 * The output length is capped (`maxOutputSeconds`, default 240 s): a lip-sync job is billed on the
 * video's duration (at most 30 s) and must finish within the spec's 4-minute processing limit, so an
 * audio that would make the output longer is refused up front (INPUT_TOO_LARGE, before any charge)
 * instead of failing after minutes of work.
 */
import { JobError } from '../../../errors.js';
import type { SyncMode } from '../../../jobs/index.js';
import type { Rational } from '../../../media/index.js';

export type { Rational };

export const DEFAULT_MAX_OUTPUT_SECONDS = 240;

/** Differences below this are float noise, not audio to trim or pad (well under one 48 kHz sample). */
const SECONDS_EPSILON = 1e-6;

export interface TimelineRequest {
  mode: SyncMode;
  /** Decoded frame count of the video, at least 1. */
  videoFrames: number;
  fps: Rational;
  /** Duration of the audio input in seconds. */
  audioSeconds: number;
  maxOutputSeconds?: number;
}

export interface AudioPlan {
  /** Keep only the first `trimTo` seconds of the audio (it is longer than the output). */
  trimTo?: number;
  /** Append silence until the audio lasts `padTo` seconds (it is shorter than the output). */
  padTo?: number;
}

export interface TimelinePlan {
  mode: SyncMode;
  fps: Rational;
  outputFrames: number;
  /** outputFrames / fps: the result's duration, video and audio alike. */
  durationSeconds: number;
  /** The source frame shown at output frame i, for 0 <= i < outputFrames. */
  sourceFrame(i: number): number;
  /**
   * How many leading source frames the output uses: frames at or past this index are never shown
   * (decoding may stop there).
   */
  sourceFramesUsed: number;
  /** First output frame that repeats the last source frame because the video ran out (silence mode). */
  frozenFrom?: number;
  audio: AudioPlan;
}

function checkRequest(req: TimelineRequest): void {
  const { videoFrames, fps, audioSeconds } = req;
  if (!Number.isInteger(videoFrames) || videoFrames < 1) {
    throw new RangeError(`Expected videoFrames to be a positive integer but received ${String(videoFrames)}`);
  }
  if (!(Number.isInteger(fps.num) && Number.isInteger(fps.den) && fps.num > 0 && fps.den > 0)) {
    throw new RangeError(`Expected fps to be a positive fraction of integers but received ${fps.num}/${fps.den}`);
  }
  if (!(Number.isFinite(audioSeconds) && audioSeconds > 0)) {
    throw new RangeError(`Expected audioSeconds to be a positive number but received ${String(audioSeconds)}`);
  }
  const cap = req.maxOutputSeconds;
  if (cap !== undefined && !(Number.isFinite(cap) && cap > 0)) {
    throw new RangeError(`Expected maxOutputSeconds to be a positive number but received ${String(cap)}`);
  }
}

/** Whole frames nearest to `seconds` at `fps`, at least one. */
export function framesForSeconds(seconds: number, fps: Rational): number {
  return Math.max(1, Math.round((seconds * fps.num) / fps.den));
}

export function secondsForFrames(frames: number, fps: Rational): number {
  return (frames * fps.den) / fps.num;
}

function checkIndex(i: number, outputFrames: number): void {
  if (!Number.isInteger(i) || i < 0 || i >= outputFrames) {
    throw new RangeError(`Expected an output frame index from 0 to ${outputFrames - 1} but received ${String(i)}`);
  }
}

/** 0, 1, ..., n-1, n-2, ..., 1, then again from 0. */
export function bounceIndex(i: number, n: number): number {
  if (n === 1) return 0;
  const period = 2 * (n - 1);
  const k = i % period;
  return k < n ? k : period - k;
}

export function planTimeline(req: TimelineRequest): TimelinePlan {
  checkRequest(req);
  const { mode, videoFrames: n, fps, audioSeconds } = req;
  const audioFrames = framesForSeconds(audioSeconds, fps);

  let outputFrames: number;
  let map: (i: number) => number;
  let frozenFrom: number | undefined;
  switch (mode) {
    case 'cut_off':
      outputFrames = Math.min(n, audioFrames);
      map = (i) => i;
      break;
    case 'loop':
      outputFrames = audioFrames;
      map = (i) => i % n;
      break;
    case 'bounce':
      outputFrames = audioFrames;
      map = (i) => bounceIndex(i, n);
      break;
    case 'silence':
      outputFrames = Math.max(n, audioFrames);
      map = (i) => Math.min(i, n - 1);
      if (outputFrames > n) frozenFrom = n;
      break;
    case 'remap': {
      outputFrames = audioFrames;
      const out = outputFrames;
      // Integer arithmetic: i * n stays far below 2^53 for any output under the cap.
      map = (i) => Math.floor((i * n) / out);
      break;
    }
    default: {
      const never: never = mode;
      throw new RangeError(`Expected a sync mode but received ${String(never)}`);
    }
  }

  const durationSeconds = secondsForFrames(outputFrames, fps);
  const cap = req.maxOutputSeconds ?? DEFAULT_MAX_OUTPUT_SECONDS;
  if (durationSeconds > cap + SECONDS_EPSILON) {
    throw new JobError(
      'INPUT_TOO_LARGE',
      `Expected the audio to last at most ${cap} s for sync_mode "${mode}" (the output follows the audio) but received ${audioSeconds.toFixed(2)} s`,
    );
  }

  const audio: AudioPlan = {};
  if (audioSeconds > durationSeconds + SECONDS_EPSILON) audio.trimTo = durationSeconds;
  else if (audioSeconds < durationSeconds - SECONDS_EPSILON) audio.padTo = durationSeconds;

  // Frames past the last one shown are never needed; remap (squeezing) may skip some below it too.
  const sourceFramesUsed = mode === 'remap' ? map(outputFrames - 1) + 1 : Math.min(n, outputFrames);

  const plan: TimelinePlan = {
    mode,
    fps: { num: fps.num, den: fps.den },
    outputFrames,
    durationSeconds,
    sourceFrame: (i) => {
      checkIndex(i, outputFrames);
      return map(i);
    },
    sourceFramesUsed,
    audio,
  };
  if (frozenFrom !== undefined) plan.frozenFrom = frozenFrom;
  return plan;
}
