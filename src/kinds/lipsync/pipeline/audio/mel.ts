/**
 * Wav2Lip's audio features: the mel spectrogram its networks were trained on, and the 16-column
 * window of it that goes with each video frame. Pure: samples in, numbers out.
 *
 * The recipe is Wav2Lip's (audio.py and hparams.py, run with librosa 0.7.0):
 *   - pre-emphasis y[n] = x[n] - 0.97 x[n-1], starting from rest;
 *   - STFT with n_fft 800, hop 200, a periodic Hann window of 800, frames centred on t * hop with the
 *     signal *reflected* (not zero-padded) by n_fft/2 at both ends: librosa 0.7's stft defaults
 *     (center=True, pad_mode='reflect'; librosa >= 0.10 zero-pads, so its edge frames differ);
 *   - magnitude, then 80 mel bands 55-7600 Hz on Slaney's mel scale (linear below 1 kHz, logarithmic
 *     above) with each triangle scaled to unit area (librosa's htk=False, norm=1 / 'slaney');
 *   - 20 log10(max(1e-5, mel)) - 20 dB, mapped linearly from [-100, 0] dB onto [-4, 4] and clipped.
 * The result has 1 + floor(samples / 200) frames: 80 per second of 16 kHz audio.
 *
 * scripts/mel-reference.py recomputes all of this in numpy from the same formulas, and the tests
 * compare against its output.
 */
import { FftPlan, realPairMagnitudes } from './fft.js';
import type { Rational } from '../timeline.js';

export interface MelParams {
  sampleRate: number;
  nFft: number;
  hop: number;
  win: number;
  melBands: number;
  fmin: number;
  fmax: number;
  preemphasis: number;
  refLevelDb: number;
  minLevelDb: number;
  /** Output range is [-maxAbs, maxAbs] (Wav2Lip's symmetric_mels). */
  maxAbs: number;
  /** Mel columns per model input window (Wav2Lip's mel_step_size). */
  windowFrames: number;
}

/** Wav2Lip's hparams.py values. */
export const WAV2LIP_MEL: Readonly<MelParams> = Object.freeze({
  sampleRate: 16_000,
  nFft: 800,
  hop: 200,
  win: 800,
  melBands: 80,
  fmin: 55,
  fmax: 7600,
  preemphasis: 0.97,
  refLevelDb: 20,
  minLevelDb: -100,
  maxAbs: 4,
  windowFrames: 16,
});

/** Mel columns per Wav2Lip input window (its `mel_step_size`). */
export const MEL_CHUNK_FRAMES = WAV2LIP_MEL.windowFrames;

/** A spectrogram stored band-major: value (band b, frame t) at `data[b * frames + t]`. */
export interface MelSpectrogram {
  data: Float32Array;
  bands: number;
  frames: number;
}

/** One triangular band: weights for FFT bins start .. start + weights.length - 1 (zero elsewhere). */
export interface MelBand {
  start: number;
  weights: Float64Array;
}

const F_SP = 200 / 3;
const MIN_LOG_HZ = 1000;
const MIN_LOG_MEL = MIN_LOG_HZ / F_SP;
const LOG_STEP = Math.log(6.4) / 27;

/** Slaney's mel scale (librosa's htk=False). */
export function hzToMel(hz: number): number {
  return hz >= MIN_LOG_HZ ? MIN_LOG_MEL + Math.log(hz / MIN_LOG_HZ) / LOG_STEP : hz / F_SP;
}

export function melToHz(mel: number): number {
  return mel >= MIN_LOG_MEL ? MIN_LOG_HZ * Math.exp(LOG_STEP * (mel - MIN_LOG_MEL)) : F_SP * mel;
}

/** The area-normalised triangular filterbank over bins 0..nFft/2, kept sparse. */
export function melFilterbank(params: Readonly<MelParams> = WAV2LIP_MEL): MelBand[] {
  const { sampleRate, nFft, melBands: nMels, fmin, fmax } = params;
  const binCount = Math.floor(nFft / 2) + 1;
  const binHz = (k: number): number => (k * (sampleRate / 2)) / (binCount - 1);
  const lowMel = hzToMel(fmin);
  const highMel = hzToMel(fmax);
  const edges: number[] = [];
  for (let i = 0; i < nMels + 2; i++) edges.push(melToHz(lowMel + ((highMel - lowMel) * i) / (nMels + 1)));

  const bands: MelBand[] = [];
  for (let m = 0; m < nMels; m++) {
    const lo = edges[m]!;
    const mid = edges[m + 1]!;
    const hi = edges[m + 2]!;
    const area = 2 / (hi - lo);
    const values: number[] = [];
    let start = -1;
    for (let k = 0; k < binCount; k++) {
      const f = binHz(k);
      const w = Math.max(0, Math.min((f - lo) / (mid - lo), (hi - f) / (hi - mid))) * area;
      if (w > 0) {
        if (start < 0) start = k;
        values[k - start] = w;
      }
    }
    // A band narrower than one bin (tiny nFft) keeps no weights and stays at the floor.
    bands.push({ start: Math.max(0, start), weights: Float64Array.from(values, (v) => v ?? 0) });
  }
  return bands;
}

/** numpy's 'reflect' padding as an index map: ..., 2, 1, [0, 1, ..., n-1], n-2, n-3, ... */
function reflectIndex(i: number, n: number): number {
  if (n === 1) return 0;
  const period = 2 * (n - 1);
  const j = ((i % period) + period) % period;
  return j >= n ? period - j : j;
}

interface Prepared {
  plan: FftPlan;
  window: Float64Array;
  bands: MelBand[];
}

const preparedCache = new Map<string, Prepared>();

function prepare(params: Readonly<MelParams>): Prepared {
  const key = JSON.stringify(params);
  let prepared = preparedCache.get(key);
  if (prepared === undefined) {
    const { nFft, win } = params;
    // A window shorter than the FFT is centred in it with zeros around (librosa's pad_center).
    const window = new Float64Array(nFft);
    const left = Math.floor((nFft - win) / 2);
    for (let i = 0; i < win; i++) window[left + i] = 0.5 - 0.5 * Math.cos((2 * Math.PI * i) / win);
    prepared = { plan: new FftPlan(nFft), window, bands: melFilterbank(params) };
    preparedCache.set(key, prepared);
  }
  return prepared;
}

function checkParams(params: Readonly<MelParams>): void {
  const { sampleRate, nFft, hop, win, melBands, windowFrames, fmin, fmax } = params;
  for (const [name, value] of [
    ['sampleRate', sampleRate],
    ['nFft', nFft],
    ['hop', hop],
    ['win', win],
    ['melBands', melBands],
    ['windowFrames', windowFrames],
  ] as const) {
    if (!Number.isInteger(value) || value < 1) {
      throw new RangeError(`Expected ${name} to be a positive integer but received ${String(value)}`);
    }
  }
  if (win > nFft) throw new RangeError(`Expected win to be at most nFft (${nFft}) but received ${win}`);
  if (!(fmin >= 0 && fmin < fmax && fmax <= sampleRate / 2)) {
    throw new RangeError(`Expected 0 <= fmin < fmax <= sampleRate / 2 but received fmin ${fmin} and fmax ${fmax}`);
  }
}

/**
 * The normalised mel spectrogram of mono samples at `params.sampleRate` (16 kHz for Wav2Lip),
 * [bands, 1 + floor(samples / hop)].
 */
export function melSpectrogram(
  samples: Float32Array | Float64Array,
  params: Readonly<MelParams> = WAV2LIP_MEL,
): MelSpectrogram {
  checkParams(params);
  const n = samples.length;
  if (n === 0) throw new RangeError('Expected at least one audio sample for the mel spectrogram but received none');
  const { nFft, hop, melBands: nMels, preemphasis, refLevelDb, minLevelDb, maxAbs } = params;
  const { plan, window, bands } = prepare(params);

  const y = new Float64Array(n);
  y[0] = samples[0]!;
  for (let i = 1; i < n; i++) y[i] = samples[i]! - preemphasis * samples[i - 1]!;

  const frames = 1 + Math.floor(n / hop);
  const binCount = Math.floor(nFft / 2) + 1;
  const half = Math.floor(nFft / 2);
  const out = new Float32Array(nMels * frames);
  const re = new Float64Array(nFft);
  const im = new Float64Array(nFft);
  const magA = new Float64Array(binCount);
  const magB = new Float64Array(binCount);
  const minAmp = 10 ** (minLevelDb / 20);
  const gain = (2 * maxAbs) / -minLevelDb;

  const load = (target: Float64Array, frame: number): void => {
    const first = frame * hop - half;
    if (first >= 0 && first + nFft <= n) {
      for (let j = 0; j < nFft; j++) target[j] = y[first + j]! * window[j]!;
    } else {
      for (let j = 0; j < nFft; j++) target[j] = y[reflectIndex(first + j, n)]! * window[j]!;
    }
  };
  const store = (mag: Float64Array, frame: number): void => {
    for (let m = 0; m < nMels; m++) {
      const { start, weights } = bands[m]!;
      let sum = 0;
      for (let k = 0; k < weights.length; k++) sum += weights[k]! * mag[start + k]!;
      const db = 20 * Math.log10(Math.max(minAmp, sum)) - refLevelDb;
      const v = gain * (db - minLevelDb) - maxAbs;
      out[m * frames + frame] = v < -maxAbs ? -maxAbs : v > maxAbs ? maxAbs : v;
    }
  };

  for (let t = 0; t < frames; t += 2) {
    load(re, t);
    if (t + 1 < frames) load(im, t + 1);
    else im.fill(0);
    realPairMagnitudes(plan, re, im, magA, magB);
    store(magA, t);
    if (t + 1 < frames) store(magB, t + 1);
  }
  return { data: out, bands: nMels, frames };
}

/**
 * The first mel column of video frame `frameIndex`'s window: floor(frameIndex * 80 / fps), computed
 * exactly from the rational fps (Wav2Lip's `int(i * 80. / fps)` in floating point lands one column
 * early at some exact multiples for 24000/1001 fps; the exact value is what it means). Windows that
 * would run past the end are moved back to end on the last column, as Wav2Lip does for its tail.
 */
export function melChunkStart(
  frameIndex: number,
  fps: Rational,
  melFrames: number,
  params: Readonly<MelParams> = WAV2LIP_MEL,
): number {
  if (!Number.isInteger(frameIndex) || frameIndex < 0) {
    throw new RangeError(`Expected frameIndex to be a non-negative integer but received ${String(frameIndex)}`);
  }
  if (!(Number.isInteger(fps.num) && Number.isInteger(fps.den) && fps.num > 0 && fps.den > 0)) {
    throw new RangeError(`Expected fps to be a positive fraction of integers but received ${fps.num}/${fps.den}`);
  }
  // Columns per second are sampleRate / hop; everything stays an integer until the one division.
  const start = Math.floor((frameIndex * params.sampleRate * fps.den) / (params.hop * fps.num));
  return Math.max(0, Math.min(start, melFrames - params.windowFrames));
}

/**
 * Video frame `frameIndex`'s model input: mel[:, start : start + 16] as [bands, 16] band-major (the
 * [1, 80, 16] Wav2Lip expects), written into `out` at `offset` when given so that a batch fills in
 * place. Audio shorter than one window (16 columns: under 0.19 s) is extended with the silence
 * value -maxAbs. A lip-sync manifest's `audio` section can be passed as `params` as it is.
 */
export function melChunk(
  mel: MelSpectrogram,
  frameIndex: number,
  fps: Rational,
  out?: Float32Array,
  offset = 0,
  params: Readonly<MelParams> = WAV2LIP_MEL,
): Float32Array {
  const columns = params.windowFrames;
  const size = mel.bands * columns;
  const target = out ?? new Float32Array(size);
  if (offset < 0 || offset + size > target.length) {
    throw new RangeError(`Expected room for ${size} values at offset ${offset} but the output holds ${target.length}`);
  }
  const start = melChunkStart(frameIndex, fps, mel.frames, params);
  const available = Math.min(columns, mel.frames - start);
  for (let b = 0; b < mel.bands; b++) {
    const row = b * mel.frames + start;
    const dst = offset + b * columns;
    target.set(mel.data.subarray(row, row + available), dst);
    if (available < columns) target.fill(-params.maxAbs, dst + available, dst + columns);
  }
  return target;
}
