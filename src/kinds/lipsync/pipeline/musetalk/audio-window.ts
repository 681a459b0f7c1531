/**
 * MuseTalk 1.5's audio input of each video frame: a window of the Whisper encoder's hidden states
 * (AudioProcessor.get_whisper_chunk in musetalk/utils/audio_processor.py). Pure: indices and
 * arrays in, arrays out.
 *
 * The encoder gives 50 positions a second (1,500 per 30 s segment), each with all 5 hidden states of
 * Whisper tiny (the embeddings and the 4 layers' outputs) of width 384. The reference:
 *   - joins the segments' positions and keeps the first floor(seconds * 50) (the rest is the last
 *     segment's padded silence);
 *   - pads with ceil(50 / fps) * 2 zero positions in front and more than enough behind;
 *   - makes floor(seconds * fps) frames; frame i takes 10 positions from floor(i * 50 / fps) of the
 *     padded sequence, i.e. positions floor(i * 50 / fps) - 4 .. + 5 of the real one at 25 fps
 *     (two frames of context either side), zeros where they fall outside;
 *   - lays the 10 x 5 x 384 window out as 50 rows of 384, row = step * 5 + layer
 *     (einops 'b c h w -> b (c h) w').
 * fps is exact here (a fraction): the reference's int(fps) and float products agree with it at
 * 25 fps, the rate MuseTalk was trained on; other rates are indexed the same way.
 */
import type { Rational } from '../timeline.js';

export const WHISPER_POSITIONS_PER_SECOND = 50;
/** Whisper tiny's hidden states: the embeddings and 4 encoder layers. */
export const WHISPER_TINY_LAYERS = 5;
export const WHISPER_TINY_WIDTH = 384;
/** Encoder positions per 30 s segment. */
export const WHISPER_SEGMENT_POSITIONS = 1500;
/** Frames of context on either side (the reference's audio_padding_length_left / _right). */
export const MUSETALK_AUDIO_PADDING = 2;
/** Positions per frame window: 2 * (left + right + 1). */
export const MUSETALK_WINDOW_STEPS = 2 * (2 * MUSETALK_AUDIO_PADDING + 1);
/** Rows of one frame's audio input (10 steps x 5 layers), each WHISPER_TINY_WIDTH wide. */
export const MUSETALK_AUDIO_ROWS = MUSETALK_WINDOW_STEPS * WHISPER_TINY_LAYERS;

/** The encoder's hidden states of the whole clip: [positions][layers][width], position-major. */
export interface WhisperHiddenStates {
  data: Float32Array;
  positions: number;
  layers: number;
  width: number;
}

function checkFps(fps: Rational): void {
  if (!(Number.isInteger(fps.num) && Number.isInteger(fps.den) && fps.num > 0 && fps.den > 0)) {
    throw new RangeError(`Expected fps to be a positive fraction of integers but received ${fps.num}/${fps.den}`);
  }
}

function checkSamples(samples: number): void {
  if (!Number.isInteger(samples) || samples < 0)
    throw new RangeError(`Expected a non-negative integer sample count but received ${String(samples)}`);
}

/** Video frames the reference makes for `samples` of 16 kHz audio: floor(seconds * fps). */
export function museTalkFrameCount(samples: number, fps: Rational, sampleRate = 16_000): number {
  checkSamples(samples);
  checkFps(fps);
  return Math.floor((samples * fps.num) / (sampleRate * fps.den));
}

/** Encoder positions that hold the audio: floor(seconds * 50). */
export function whisperActivePositions(samples: number, sampleRate = 16_000): number {
  checkSamples(samples);
  return Math.floor((samples * WHISPER_POSITIONS_PER_SECOND) / sampleRate);
}

/**
 * The first position of frame `frameIndex`'s window in the unpadded sequence (negative where it
 * starts in the front padding): floor(i * 50 / fps) - ceil(50 / fps) * 2.
 */
export function museTalkWindowStart(frameIndex: number, fps: Rational): number {
  if (!Number.isInteger(frameIndex) || frameIndex < 0) {
    throw new RangeError(`Expected frameIndex to be a non-negative integer but received ${String(frameIndex)}`);
  }
  checkFps(fps);
  const perFrame = WHISPER_POSITIONS_PER_SECOND * fps.den;
  const index = Math.floor((frameIndex * perFrame) / fps.num);
  const paddingPerSide = Math.ceil(perFrame / fps.num);
  return index - paddingPerSide * MUSETALK_AUDIO_PADDING;
}

/**
 * Frame `frameIndex`'s audio input, [50, width] row-major with row = step * layers + layer, into
 * `out` at `offset` when given (so that a batch fills in place). Positions at or past
 * `activePositions` (the padded silence at the end) and before 0 are zeros.
 */
export function museTalkAudioWindow(
  states: WhisperHiddenStates,
  activePositions: number,
  frameIndex: number,
  fps: Rational,
  out?: Float32Array,
  offset = 0,
): Float32Array {
  const { layers, width, positions, data } = states;
  if (data.length !== positions * layers * width) {
    throw new RangeError(
      `Expected ${positions * layers * width} hidden-state values (${positions} x ${layers} x ${width}) but received ${data.length}`,
    );
  }
  if (!Number.isInteger(activePositions) || activePositions < 0 || activePositions > positions) {
    throw new RangeError(`Expected activePositions between 0 and ${positions} but received ${String(activePositions)}`);
  }
  const stepSize = layers * width;
  const size = MUSETALK_WINDOW_STEPS * stepSize;
  const target = out ?? new Float32Array(size);
  if (offset < 0 || offset + size > target.length) {
    throw new RangeError(`Expected room for ${size} values at offset ${offset} but the output holds ${target.length}`);
  }
  const start = museTalkWindowStart(frameIndex, fps);
  for (let step = 0; step < MUSETALK_WINDOW_STEPS; step++) {
    const p = start + step;
    const dst = offset + step * stepSize;
    if (p >= 0 && p < activePositions) target.set(data.subarray(p * stepSize, (p + 1) * stepSize), dst);
    else target.fill(0, dst, dst + stepSize);
  }
  return target;
}

/**
 * Joins the encoder's per-segment outputs ([1500][layers][width] each, in order) into the clip's
 * sequence, as the reference's torch.cat over segments.
 */
export function joinWhisperSegments(
  segments: readonly Float32Array[],
  layers = WHISPER_TINY_LAYERS,
  width = WHISPER_TINY_WIDTH,
): WhisperHiddenStates {
  const perSegment = WHISPER_SEGMENT_POSITIONS * layers * width;
  const data = new Float32Array(segments.length * perSegment);
  segments.forEach((segment, i) => {
    if (segment.length !== perSegment) {
      throw new RangeError(
        `Expected segment ${i} to hold ${perSegment} values (${WHISPER_SEGMENT_POSITIONS} x ${layers} x ${width}) but received ${segment.length}`,
      );
    }
    data.set(segment, i * perSegment);
  });
  return { data, positions: segments.length * WHISPER_SEGMENT_POSITIONS, layers, width };
}
