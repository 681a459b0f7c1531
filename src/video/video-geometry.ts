/**
 * Frame sizes and frame rates of a video upscale, decided once from the probe before any process
 * starts. Pure: the decoder and encoder argument builders and the frame reader all take their
 * numbers from here, so the raw pipes can never disagree about how many bytes make a frame.
 *
 * Sizes:
 * - `decoded`: the upright picture on the decoder's pipe. ffmpeg applies the rotation metadata while
 *   decoding, so a 90° or 270° phone clip arrives with width and height swapped, and the output needs
 *   no rotation tag.
 * - `network`: what the network returns, decoded x network scale; what crosses the encoder's pipe.
 * - `target`: decoded x upscale factor (the spec's output resolution). Where the network scales
 *   further than the factor (the default x4 network for "2" and "1"), the encoder brings its output
 *   down to the target (Lanczos).
 * - `output`: what is delivered: exactly `target`. An odd side (factor "1" on an odd input) is
 *   encoded 4:4:4, which has no even-size rule (colour.ts), rather than padded.
 */
import type { Rational, VideoStreamInfo } from '../media/index.js';

export interface Size {
  width: number;
  height: number;
}

export type { Rational };

export interface VideoGeometry {
  decoded: Size;
  network: Size;
  target: Size;
  output: Size;
  /** Network scale (at least the factor). */
  scale: number;
}

/** The picture as displayed: coded size with width and height swapped for quarter turns. */
export function displayedSize(video: Pick<VideoStreamInfo, 'width' | 'height' | 'rotation'>): Size {
  const quarterTurn = video.rotation === 90 || video.rotation === 270;
  return quarterTurn ? { width: video.height, height: video.width } : { width: video.width, height: video.height };
}

export function videoGeometry(
  video: Pick<VideoStreamInfo, 'width' | 'height' | 'rotation'>,
  factor: number,
  scale: number,
): VideoGeometry {
  const decoded = displayedSize(video);
  requireSide('width', decoded.width);
  requireSide('height', decoded.height);
  if (!Number.isInteger(scale) || scale < Math.max(1, factor))
    throw new RangeError(`Expected a network scale of at least ${factor} but received ${scale}`);
  const network = { width: decoded.width * scale, height: decoded.height * scale };
  const target = { width: decoded.width * factor, height: decoded.height * factor };
  return { decoded, network, target, output: { ...target }, scale };
}

/** Bytes of one interleaved RGB frame, 8 bits per sample (or 16). */
export function rgbFrameBytes(size: Size, depth: 8 | 16 = 8): number {
  return size.width * size.height * 3 * (depth / 8);
}

/**
 * How the decoder times its frames.
 * - `passthrough`: every decoded frame once, in order (constant frame rate input): the output has
 *   exactly the input's frames, timed at the input's rate.
 * - `cfr`: variable frame rate input becomes constant rate at its highest rate (the shortest usual
 *   spacing of its frames, probe-media.ts `cfrRate`), each output frame the input frame nearest its
 *   time: no input frame is dropped (unless two fall within one output frame's time), a frame that
 *   lasted longer is shown again, so every frame stays within half an output frame of where it was
 *   and the A/V sync is kept. The frame count is duration x that rate, which the quote bills.
 *   (Keeping the input's own timestamps would need timestamps on the raw pipes; MP4 players also
 *   handle constant rate best.)
 */
export interface FrameTiming {
  mode: 'passthrough' | 'cfr';
  rate: Rational;
}

export function frameTiming(video: Pick<VideoStreamInfo, 'fps' | 'variableFrameRate' | 'cfrRate'>): FrameTiming {
  const { num, den } = video.variableFrameRate ? (video.cfrRate ?? video.fps) : video.fps;
  if (!(Number.isInteger(num) && Number.isInteger(den) && num > 0 && den > 0)) {
    throw new RangeError(`Expected a positive frame rate fraction but received ${num}/${den}`);
  }
  return { mode: video.variableFrameRate ? 'cfr' : 'passthrough', rate: { num, den } };
}

/** Frames the decoder is expected to deliver, for progress (the container's count when it has one). */
export function expectedFrameCount(
  video: Pick<VideoStreamInfo, 'frameCount'>,
  durationSeconds: number,
  timing: FrameTiming,
): number {
  if (timing.mode === 'passthrough' && video.frameCount !== undefined) return video.frameCount;
  return Math.max(1, Math.round((durationSeconds * timing.rate.num) / timing.rate.den));
}

/** "30000/1001" as ffmpeg reads a rate. */
export function formatRate(rate: Rational): string {
  return `${rate.num}/${rate.den}`;
}

function requireSide(name: string, value: number): void {
  if (!Number.isInteger(value) || value < 1) {
    throw new RangeError(`Expected the video ${name} to be a positive integer but received ${String(value)}`);
  }
}
