/**
 * Which tracked face is speaking: the one whose mouth follows the audio best.
 *
 * Method. For every frame where a track has a detection, a small grey patch around the face is
 * kept (`captureFacePatch`, taken while detecting, so frames need not be decoded twice). Once the
 * track is smoothed, a mouth window (centred on the smoothed mouth keypoint, half a face wide and
 * 0.3 of a face high) is sampled from each patch, giving two per-frame mouth signals:
 *
 * - openness: the face's mean brightness minus the mouth window's (an open mouth is a dark hole;
 *   subtracting the face's level cancels lighting changes);
 * - motion: the mean absolute difference between consecutive mouth windows, each with its own mean
 *   removed (the mouth changing shape, not the light).
 *
 * The audio gives, per video frame, its RMS envelope and the envelope's absolute change. Every
 * signal is detrended (minus its centred moving average over `detrendRadius` frames each side):
 * speech moves the mouth at the syllable rate, 2-8 Hz, while slow drifts (lighting, a head turning,
 * a pause in the dialogue) would otherwise correlate by chance. A track's score is the best Pearson
 * correlation, over lags of up to `maxLag` frames either way (audio and picture are rarely aligned
 * to the frame), of openness with the envelope or of motion with the envelope's change; it is
 * computed over the frames where the track has detections, and is undefined below `minSamples` of
 * them. The speaker is the track with the highest score (faces.ts lets prominence settle near-ties:
 * a small background face gives noisy signals).
 *
 * On real footage the correlations are modest (0.3-0.4 for a speaking face in Megamind.avi against
 * about 0.2 for a silent one behind her); on the test clip, where the mouths are drawn from the
 * audio, they are above 0.9. The defaults suit 24-30 fps video.
 *
 * The envelope must be indexed by the video's frames: the caller passes the video's own soundtrack
 * when it has one (the speech that the faces actually follow), otherwise the new audio.
 */
import type { FaceBox, RgbFrame } from '../types.js';
import type { TrackedFace } from './track.js';

/** Edge of the stored face patches, in samples. */
export const PATCH_SIZE = 48;
/** Patch side over the face box's longer side. */
const PATCH_SPAN = 1.6;
const MOUTH_COLUMNS = 16;
const MOUTH_ROWS = 8;

/** A square grey sample of a frame around one detected face. */
export interface FacePatch {
  /** Top-left corner and side of the sampled square, in frame pixels. */
  left: number;
  top: number;
  side: number;
  /** PATCH_SIZE x PATCH_SIZE luma values, row-major. */
  data: Uint8Array;
}

export interface ActiveSpeakerOptions {
  /** Largest audio-video offset tried, in frames either way. */
  maxLag?: number;
  /** Fewest frames a score is computed from. */
  minSamples?: number;
  /** Half width, in frames, of the moving average subtracted from every signal (0: none). */
  detrendRadius?: number;
}

export const DEFAULT_ACTIVE_SPEAKER_OPTIONS: Readonly<Required<ActiveSpeakerOptions>> = {
  maxLag: 2,
  minSamples: 8,
  detrendRadius: 3,
};

export interface SpeakerScore {
  trackId: number;
  /** Best correlation found, -1..1; undefined when the track has too few frames to judge. */
  score: number | undefined;
  /** The lag (frames, audio after picture when positive) at which the score was found. */
  lag: number;
  /** Frames the score was computed from. */
  samples: number;
}

function luma(frame: RgbFrame, x: number, y: number): number {
  const cx = Math.min(frame.width - 1, Math.max(0, x));
  const cy = Math.min(frame.height - 1, Math.max(0, y));
  const i = (cy * frame.width + cx) * 3;
  return (
    0.299 * (frame.data[i] as number) + 0.587 * (frame.data[i + 1] as number) + 0.114 * (frame.data[i + 2] as number)
  );
}

/** Box-filtered grey square around a face (edges clamped for faces cut by the frame). */
export function captureFacePatch(frame: RgbFrame, box: FaceBox): FacePatch {
  const side = Math.max(box.width, box.height) * PATCH_SPAN;
  const left = box.x + box.width / 2 - side / 2;
  const top = box.y + box.height / 2 - side / 2;
  const data = new Uint8Array(PATCH_SIZE * PATCH_SIZE);
  const step = side / PATCH_SIZE;
  // Up to 3x3 taps per sample: enough averaging to keep noise and aliasing out of the signals.
  const taps = Math.max(1, Math.min(3, Math.round(step)));
  for (let py = 0; py < PATCH_SIZE; py += 1) {
    for (let px = 0; px < PATCH_SIZE; px += 1) {
      let sum = 0;
      for (let ty = 0; ty < taps; ty += 1) {
        for (let tx = 0; tx < taps; tx += 1) {
          sum += luma(
            frame,
            Math.floor(left + (px + (tx + 0.5) / taps) * step),
            Math.floor(top + (py + (ty + 0.5) / taps) * step),
          );
        }
      }
      data[py * PATCH_SIZE + px] = Math.round(sum / (taps * taps));
    }
  }
  return { left, top, side, data };
}

function samplePatch(patch: FacePatch, x: number, y: number): number {
  const u = Math.min(PATCH_SIZE - 1, Math.max(0, ((x - patch.left) / patch.side) * PATCH_SIZE - 0.5));
  const v = Math.min(PATCH_SIZE - 1, Math.max(0, ((y - patch.top) / patch.side) * PATCH_SIZE - 0.5));
  const x0 = Math.floor(u);
  const y0 = Math.floor(v);
  const x1 = Math.min(PATCH_SIZE - 1, x0 + 1);
  const y1 = Math.min(PATCH_SIZE - 1, y0 + 1);
  const fx = u - x0;
  const fy = v - y0;
  const at = (xx: number, yy: number): number => patch.data[yy * PATCH_SIZE + xx] as number;
  return (at(x0, y0) * (1 - fx) + at(x1, y0) * fx) * (1 - fy) + (at(x0, y1) * (1 - fx) + at(x1, y1) * fx) * fy;
}

function mouthWindow(patch: FacePatch, box: FaceBox): Float64Array {
  const [mx, my] = box.keypoints.mouth;
  const width = box.width * 0.5;
  const height = box.width * 0.3;
  const out = new Float64Array(MOUTH_COLUMNS * MOUTH_ROWS);
  for (let r = 0; r < MOUTH_ROWS; r += 1) {
    for (let c = 0; c < MOUTH_COLUMNS; c += 1) {
      out[r * MOUTH_COLUMNS + c] = samplePatch(
        patch,
        mx + ((c + 0.5) / MOUTH_COLUMNS - 0.5) * width,
        my + ((r + 0.5) / MOUTH_ROWS - 0.5) * height,
      );
    }
  }
  return out;
}

function mean(values: ArrayLike<number>): number {
  let sum = 0;
  for (let i = 0; i < values.length; i += 1) sum += values[i] as number;
  return values.length > 0 ? sum / values.length : Number.NaN;
}

/** Per-frame patches of one frame's detections, in detection order. */
export type FramePatches = readonly (readonly FacePatch[])[];

export interface MouthSignals {
  /** Per frame; NaN where the track has no detection. */
  openness: Float64Array;
  /** Per frame; NaN unless the track has detections at this frame and the one before. */
  motion: Float64Array;
}

export function mouthSignals(track: TrackedFace, patches: FramePatches): MouthSignals {
  const n = track.boxes.length;
  const openness = new Float64Array(n).fill(Number.NaN);
  const motion = new Float64Array(n).fill(Number.NaN);
  let previous: Float64Array | undefined;
  for (let f = 0; f < n; f += 1) {
    const box = track.boxes[f];
    const index = track.detections[f];
    const patch = index === undefined ? undefined : patches[f]?.[index];
    if (box === undefined || patch === undefined) {
      previous = undefined;
      continue;
    }
    const window = mouthWindow(patch, box);
    const windowMean = mean(window);
    openness[f] = mean(patch.data) - windowMean;
    for (let i = 0; i < window.length; i += 1) window[i] = (window[i] as number) - windowMean;
    if (previous !== undefined) {
      let sum = 0;
      for (let i = 0; i < window.length; i += 1) sum += Math.abs((window[i] as number) - (previous[i] as number));
      motion[f] = sum / window.length;
    }
    previous = window;
  }
  return { openness, motion };
}

/** RMS of the samples falling in each video frame's interval [i/fps, (i+1)/fps). */
export function audioEnvelope(
  samples: Float32Array,
  sampleRate: number,
  fps: number,
  frameCount: number,
): Float64Array {
  if (!(sampleRate > 0 && fps > 0 && Number.isInteger(frameCount) && frameCount >= 0)) {
    throw new RangeError(
      `Expected positive sampleRate and fps and a frame count but received ${sampleRate}, ${fps}, ${frameCount}`,
    );
  }
  const out = new Float64Array(frameCount);
  for (let f = 0; f < frameCount; f += 1) {
    const start = Math.min(samples.length, Math.round((f * sampleRate) / fps));
    const end = Math.min(samples.length, Math.round(((f + 1) * sampleRate) / fps));
    let sum = 0;
    for (let i = start; i < end; i += 1) sum += (samples[i] as number) ** 2;
    out[f] = end > start ? Math.sqrt(sum / (end - start)) : 0;
  }
  return out;
}

/** Pearson correlation of a[t] with b[t + lag] over the t where both are finite; NaN below minSamples or with no variance. */
export function laggedPearson(
  a: ArrayLike<number>,
  b: ArrayLike<number>,
  lag: number,
  minSamples: number,
): { r: number; samples: number } {
  let n = 0;
  let sa = 0;
  let sb = 0;
  let saa = 0;
  let sbb = 0;
  let sab = 0;
  for (let t = 0; t < a.length; t += 1) {
    const x = a[t] as number;
    const y = b[t + lag];
    if (y === undefined || !Number.isFinite(x) || !Number.isFinite(y)) continue;
    n += 1;
    sa += x;
    sb += y;
    saa += x * x;
    sbb += y * y;
    sab += x * y;
  }
  if (n < minSamples) return { r: Number.NaN, samples: n };
  const cov = sab - (sa * sb) / n;
  const va = saa - (sa * sa) / n;
  const vb = sbb - (sb * sb) / n;
  // Relative floor: float round-off leaves tiny variances on constant signals.
  if (va <= 1e-9 * (saa + 1e-12) || vb <= 1e-9 * (sbb + 1e-12)) return { r: Number.NaN, samples: n };
  return { r: cov / Math.sqrt(va * vb), samples: n };
}

/** The signal minus its centred moving average over the finite values within `radius` frames. */
export function detrend(signal: ArrayLike<number>, radius: number): Float64Array {
  const out = new Float64Array(signal.length).fill(Number.NaN);
  for (let i = 0; i < signal.length; i += 1) {
    const v = signal[i] as number;
    if (!Number.isFinite(v)) continue;
    let sum = 0;
    let n = 0;
    for (let j = Math.max(0, i - radius); j <= Math.min(signal.length - 1, i + radius); j += 1) {
      const w = signal[j] as number;
      if (Number.isFinite(w)) {
        sum += w;
        n += 1;
      }
    }
    out[i] = v - sum / n;
  }
  return out;
}

/** Scores every track against the envelope (indexed by the tracks' frames). */
export function scoreSpeakers(
  tracks: readonly TrackedFace[],
  patches: FramePatches,
  envelope: ArrayLike<number>,
  options: ActiveSpeakerOptions = {},
): SpeakerScore[] {
  const { maxLag, minSamples, detrendRadius } = { ...DEFAULT_ACTIVE_SPEAKER_OPTIONS, ...options };
  const prepare = (signal: ArrayLike<number>): ArrayLike<number> =>
    detrendRadius > 0 ? detrend(signal, detrendRadius) : signal;
  const rawChange = new Float64Array(envelope.length);
  for (let t = 1; t < envelope.length; t += 1)
    rawChange[t] = Math.abs((envelope[t] as number) - (envelope[t - 1] as number));
  rawChange[0] = Number.NaN;
  const level = prepare(envelope);
  const change = prepare(rawChange);
  return tracks.map((track) => {
    const signals = mouthSignals(track, patches);
    const openness = prepare(signals.openness);
    const motion = prepare(signals.motion);
    let best: SpeakerScore = { trackId: track.id, score: undefined, lag: 0, samples: 0 };
    for (let lag = -maxLag; lag <= maxLag; lag += 1) {
      for (const [signal, audio] of [
        [openness, level],
        [motion, change],
      ] as const) {
        const { r, samples } = laggedPearson(signal, audio, lag, minSamples);
        best.samples = Math.max(best.samples, samples);
        if (Number.isFinite(r) && (best.score === undefined || r > best.score))
          best = { trackId: track.id, score: r, lag, samples };
      }
    }
    return best;
  });
}
