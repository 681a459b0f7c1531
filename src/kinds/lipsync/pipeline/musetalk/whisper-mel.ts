/**
 * Whisper's log-mel input features, as MuseTalk 1.5 computes them (musetalk/utils/audio_processor.py:
 * transformers' WhisperFeatureExtractor on each 30 s segment of the 16 kHz audio). Pure: samples in,
 * numbers out.
 *
 * WhisperFeatureExtractor's recipe (its numpy path, the one MuseTalk runs):
 *   - the segment zero-padded (or cut) to 30 s, 480,000 samples;
 *   - STFT with n_fft 400, hop 160, a periodic Hann window of 400, frames centred on t * hop with the
 *     signal reflected by n_fft/2 at both ends; power spectrum |X|^2;
 *   - 80 mel bands 0-8000 Hz on Slaney's scale with Slaney's area normalisation (the same triangles
 *     as Wav2Lip's filterbank, mel.ts, with other edges), floored at 1e-10, log10;
 *   - the last of the 3,001 frames dropped (3,000 left), every value raised to at least the
 *     segment's maximum - 8, then (x + 4) / 4.
 * Longer audio is cut into 30 s segments first, each with its own maximum (as MuseTalk does), and
 * the encoder runs on each segment; audio-window.ts joins their outputs.
 *
 * scripts/whisper-mel-reference.py runs transformers itself on the committed speech clip and
 * test/kinds/lipsync/pipeline/musetalk/whisper-mel.test.ts compares (max abs difference <= 1e-4).
 */
import { FftPlan, realPairMagnitudes } from '../audio/fft.js';
import { melFilterbank, type MelBand, type MelParams, type MelSpectrogram } from '../audio/mel.js';

export const WHISPER_SAMPLE_RATE = 16_000;
export const WHISPER_N_FFT = 400;
export const WHISPER_HOP = 160;
export const WHISPER_MEL_BANDS = 80;
/** Samples in one segment: 30 s (WhisperFeatureExtractor's n_samples). */
export const WHISPER_SEGMENT_SAMPLES = 30 * WHISPER_SAMPLE_RATE;
/** Mel frames per segment (its nb_max_frames): 100 per second. */
export const WHISPER_SEGMENT_FRAMES = WHISPER_SEGMENT_SAMPLES / WHISPER_HOP;
const MEL_FLOOR = 1e-10;
const DYNAMIC_RANGE = 8;

/** The filterbank's parameters in mel.ts's terms (only the filterbank fields matter). */
const WHISPER_FILTERBANK: Readonly<MelParams> = Object.freeze({
  sampleRate: WHISPER_SAMPLE_RATE,
  nFft: WHISPER_N_FFT,
  hop: WHISPER_HOP,
  win: WHISPER_N_FFT,
  melBands: WHISPER_MEL_BANDS,
  fmin: 0,
  fmax: 8000,
  preemphasis: 0,
  refLevelDb: 0,
  minLevelDb: -100,
  maxAbs: 4,
  windowFrames: 1,
});

let prepared: { plan: FftPlan; window: Float64Array; bands: MelBand[] } | undefined;

function prepare(): NonNullable<typeof prepared> {
  if (prepared === undefined) {
    const window = new Float64Array(WHISPER_N_FFT);
    for (let i = 0; i < WHISPER_N_FFT; i++) window[i] = 0.5 - 0.5 * Math.cos((2 * Math.PI * i) / WHISPER_N_FFT);
    prepared = { plan: new FftPlan(WHISPER_N_FFT), window, bands: melFilterbank(WHISPER_FILTERBANK) };
  }
  return prepared;
}

/** numpy's 'reflect' padding as an index map: ..., 2, 1, [0, 1, ..., n-1], n-2, n-3, ... */
function reflectIndex(i: number, n: number): number {
  const period = 2 * (n - 1);
  const j = ((i % period) + period) % period;
  return j >= n ? period - j : j;
}

/**
 * The features of one segment of at most 30 s of 16 kHz mono samples: [80, 3000] band-major
 * (value (band b, frame t) at data[b * 3000 + t]), the [1, 80, 3000] the encoder takes.
 */
export function whisperLogMel(segment: Float32Array | Float64Array): MelSpectrogram {
  if (segment.length > WHISPER_SEGMENT_SAMPLES) {
    throw new RangeError(
      `Expected at most ${WHISPER_SEGMENT_SAMPLES} samples (30 s) in a Whisper segment but received ${segment.length}`,
    );
  }
  const n = WHISPER_SEGMENT_SAMPLES;
  const x = new Float64Array(n);
  x.set(segment);
  const { plan, window, bands } = prepare();
  const frames = WHISPER_SEGMENT_FRAMES;
  const half = WHISPER_N_FFT / 2;
  const binCount = half + 1;
  const logMel = new Float64Array(WHISPER_MEL_BANDS * frames);
  const re = new Float64Array(WHISPER_N_FFT);
  const im = new Float64Array(WHISPER_N_FFT);
  const magA = new Float64Array(binCount);
  const magB = new Float64Array(binCount);
  let max = -Infinity;

  const load = (target: Float64Array, frame: number): void => {
    const first = frame * WHISPER_HOP - half;
    if (first >= 0 && first + WHISPER_N_FFT <= n) {
      for (let j = 0; j < WHISPER_N_FFT; j++) target[j] = x[first + j]! * window[j]!;
    } else {
      for (let j = 0; j < WHISPER_N_FFT; j++) target[j] = x[reflectIndex(first + j, n)]! * window[j]!;
    }
  };
  const store = (mag: Float64Array, frame: number): void => {
    for (let m = 0; m < WHISPER_MEL_BANDS; m++) {
      const { start, weights } = bands[m]!;
      let sum = 0;
      for (let k = 0; k < weights.length; k++) {
        const a = mag[start + k]!;
        sum += weights[k]! * a * a;
      }
      const v = Math.log10(Math.max(MEL_FLOOR, sum));
      logMel[m * frames + frame] = v;
      if (v > max) max = v;
    }
  };

  // Frame 3000 (the 3,001st) is computed by the extractor and then dropped, max included: never made here.
  for (let t = 0; t < frames; t += 2) {
    load(re, t);
    load(im, t + 1);
    realPairMagnitudes(plan, re, im, magA, magB);
    store(magA, t);
    store(magB, t + 1);
  }
  const floor = max - DYNAMIC_RANGE;
  const data = new Float32Array(logMel.length);
  for (let i = 0; i < data.length; i++) data[i] = (Math.max(logMel[i]!, floor) + 4) / 4;
  return { data, bands: WHISPER_MEL_BANDS, frames };
}

/** MuseTalk's 30 s segments of the audio (the last one shorter), each for whisperLogMel. */
export function whisperSegments(samples: Float32Array): Float32Array[] {
  const segments: Float32Array[] = [];
  for (let i = 0; i < samples.length; i += WHISPER_SEGMENT_SAMPLES)
    segments.push(samples.subarray(i, i + WHISPER_SEGMENT_SAMPLES));
  return segments;
}
