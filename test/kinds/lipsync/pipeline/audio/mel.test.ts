/**
 * Wav2Lip's mel spectrogram against reference values that scripts/mel-reference.py computed with
 * numpy/scipy from the formulas (test/kinds/lipsync/pipeline/fixtures), the FFT against a plain DFT, and the
 * per-frame mel window indexing.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  decodeAudio,
  FftPlan,
  realPairMagnitudes,
  MEL_CHUNK_FRAMES,
  melChunk,
  melChunkStart,
  melFilterbank,
  melSpectrogram,
  WAV2LIP_MEL,
  type MelSpectrogram,
} from '../../../../../src/kinds/lipsync/pipeline/index.js';
import { random } from '../../../../helpers/seeded-random.js';

const FIXTURES = fileURLToPath(new URL('../fixtures/', import.meta.url));

interface ReferenceCase {
  file: string;
  samples: number;
  bands: number;
  frames: number;
}
interface Reference {
  params: Record<string, number>;
  cases: Record<string, ReferenceCase>;
  filterbank: { start: number; weights: number[] }[];
}
const reference = JSON.parse(readFileSync(`${FIXTURES}mel-reference.json`, 'utf8')) as Reference;

function referenceMel(name: string): { data: Float32Array; c: ReferenceCase } {
  const c = reference.cases[name];
  if (c === undefined) throw new Error(`no reference case ${name}`);
  const bytes = readFileSync(`${FIXTURES}${c.file}`);
  const data = new Float32Array(c.bands * c.frames);
  for (let i = 0; i < data.length; i++) data[i] = bytes.readFloatLE(4 * i);
  return { data, c };
}

/** Operation for operation the signal of mel-reference.py's synthetic_signal(). */
function syntheticSignal(): Float64Array {
  const x = new Float64Array(24000);
  for (let n = 0; n < x.length; n++) {
    const t = n / 16000.0;
    x[n] =
      0.6 * Math.sin(2.0 * Math.PI * (80.0 * t + 1300.0 * t * t)) +
      0.25 * Math.sin(2.0 * Math.PI * 440.0 * t) +
      0.1 * Math.sin(2.0 * Math.PI * 6000.0 * t);
  }
  x.fill(0, 16000, 17600);
  return x;
}

function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  expect(a.length).toBe(b.length);
  let max = 0;
  for (let i = 0; i < a.length; i++) max = Math.max(max, Math.abs(a[i]! - b[i]!));
  return max;
}

function compare(ours: MelSpectrogram, name: string): number {
  const { data, c } = referenceMel(name);
  expect([ours.bands, ours.frames]).toEqual([c.bands, c.frames]);
  return maxAbsDiff(ours.data, data);
}

function naiveDft(re: Float64Array, im: Float64Array): [Float64Array, Float64Array] {
  const n = re.length;
  const outRe = new Float64Array(n);
  const outIm = new Float64Array(n);
  for (let k = 0; k < n; k++) {
    let sr = 0;
    let si = 0;
    for (let j = 0; j < n; j++) {
      const a = (-2 * Math.PI * ((k * j) % n)) / n;
      sr += re[j]! * Math.cos(a) - im[j]! * Math.sin(a);
      si += re[j]! * Math.sin(a) + im[j]! * Math.cos(a);
    }
    outRe[k] = sr;
    outIm[k] = si;
  }
  return [outRe, outIm];
}

describe('FftPlan', () => {
  it.each([1, 2, 3, 4, 5, 7, 8, 12, 16, 30, 97, 100, 800])('matches a plain DFT for size %i', (n) => {
    const next = random(n);
    const re = Float64Array.from({ length: n }, () => next() * 2 - 1);
    const im = Float64Array.from({ length: n }, () => next() * 2 - 1);
    const [wantRe, wantIm] = naiveDft(re, im);
    new FftPlan(n).transform(re, im);
    for (let k = 0; k < n; k++) {
      expect(Math.abs(re[k]! - wantRe[k]!)).toBeLessThan(1e-9 * n);
      expect(Math.abs(im[k]! - wantIm[k]!)).toBeLessThan(1e-9 * n);
    }
  });

  it('separates the spectra of two real frames transformed together', () => {
    const n = 800;
    const next = random(7);
    const a = Float64Array.from({ length: n }, () => next() - 0.5);
    const b = Float64Array.from({ length: n }, () => next() - 0.5);
    const [aRe, aIm] = naiveDft(a, new Float64Array(n));
    const [bRe, bIm] = naiveDft(b, new Float64Array(n));
    const magA = new Float64Array(n / 2 + 1);
    const magB = new Float64Array(n / 2 + 1);
    realPairMagnitudes(new FftPlan(n), a.slice(), b.slice(), magA, magB);
    for (let k = 0; k <= n / 2; k++) {
      expect(magA[k]).toBeCloseTo(Math.hypot(aRe[k]!, aIm[k]!), 9);
      expect(magB[k]).toBeCloseTo(Math.hypot(bRe[k]!, bIm[k]!), 9);
    }
  });

  it('refuses a size that is not a positive integer', () => {
    expect(() => new FftPlan(0)).toThrow('Expected the FFT size to be a positive integer but received 0');
  });
});

describe('melFilterbank', () => {
  it("matches the reference's Slaney-scale, area-normalised triangles", () => {
    const ours = melFilterbank();
    expect(ours).toHaveLength(reference.filterbank.length);
    expect(ours).toHaveLength(80);
    ours.forEach((band, m) => {
      const want = reference.filterbank[m]!;
      expect(band.start, `band ${m} start`).toBe(want.start);
      expect(band.weights.length, `band ${m} width`).toBe(want.weights.length);
      band.weights.forEach((w, k) => expect(Math.abs(w - want.weights[k]!)).toBeLessThan(1e-12));
    });
  });

  it('spans 55 to 7600 Hz: the first band starts above bin 0 and the last ends below Nyquist', () => {
    const bands = melFilterbank();
    const hzPerBin = 16000 / 800;
    expect(bands[0]!.start * hzPerBin).toBeGreaterThanOrEqual(55);
    const last = bands[79]!;
    expect((last.start + last.weights.length - 1) * hzPerBin).toBeLessThanOrEqual(7600);
  });
});

describe('melSpectrogram', () => {
  it('uses the parameters the reference was computed with', () => {
    const { windowFrames, ...features } = WAV2LIP_MEL;
    expect(windowFrames).toBe(16);
    expect(reference.params).toEqual(features);
  });

  it.each([
    ['synthetic', () => syntheticSignal()],
    ['short', () => syntheticSignal().slice(0, 300)],
    [
      'loud',
      () =>
        syntheticSignal()
          .slice(0, 4000)
          .map((v) => v * 40),
    ],
  ])('matches the numpy reference on the %s signal', (name, signal) => {
    const diff = compare(melSpectrogram(signal()), name);
    // The reference is stored as float32: ~2.4e-7 on the [-4, 4] scale is its own rounding.
    expect(diff).toBeLessThan(1e-4);
  });

  it('reaches both ends of the [-4, 4] range where the input does (silence and a loud tone)', () => {
    const quiet = melSpectrogram(syntheticSignal());
    expect(Math.min(...quiet.data)).toBe(-4);
    const loud = melSpectrogram(
      syntheticSignal()
        .slice(0, 4000)
        .map((v) => v * 40),
    );
    expect(Math.max(...loud.data)).toBe(4);
  });

  it('matches the numpy reference on real speech decoded by ffmpeg (espeak-ng, 16 kHz WAV)', async () => {
    const samples = await decodeAudio({ path: `${FIXTURES}speech-16k.wav`, container: 'wav' });
    expect(samples.length).toBe(reference.cases['speech']!.samples);
    const diff = compare(melSpectrogram(samples), 'speech');
    expect(diff).toBeLessThan(1e-4);
  });

  it('has 1 + floor(samples / 200) frames', () => {
    for (const n of [1, 199, 200, 201, 16000])
      expect(melSpectrogram(new Float32Array(n)).frames).toBe(1 + Math.floor(n / 200));
  });

  it('maps digital silence to the floor, -4, everywhere', () => {
    const mel = melSpectrogram(new Float32Array(1600));
    expect(mel.data.every((v) => v === -4)).toBe(true);
  });

  it('refuses an empty signal', () => {
    expect(() => melSpectrogram(new Float32Array(0))).toThrow(
      'Expected at least one audio sample for the mel spectrogram but received none',
    );
  });

  it('featurises 30 s of audio well under a second', () => {
    const next = random(30);
    const samples = Float32Array.from({ length: 30 * 16000 }, () => next() - 0.5);
    melSpectrogram(samples.subarray(0, 16000)); // plan and filterbank are built once
    const started = performance.now();
    const mel = melSpectrogram(samples);
    const elapsed = performance.now() - started;
    expect(mel.frames).toBe(2401);
    expect(elapsed).toBeLessThan(1000);
  });
});

describe('melChunkStart', () => {
  // floor(i * 80 / fps) computed by hand; the tail is clamped to melFrames - 16.
  it.each([
    // 25 fps: 3.2 columns per frame
    [
      { num: 25, den: 1 },
      1000,
      [
        [0, 0],
        [1, 3],
        [2, 6],
        [4, 12],
        [5, 16],
        [10, 32],
        [100, 320],
      ],
    ],
    // 29.97 fps: 80 * 1001 / 30000 = 2.66933... columns per frame; frame 375 lands exactly on 1001
    [
      { num: 30000, den: 1001 },
      2000,
      [
        [0, 0],
        [1, 2],
        [2, 5],
        [3, 8],
        [374, 998],
        [375, 1001],
        [376, 1003],
      ],
    ],
    // 23.976 fps: frame 300 lands exactly on 1001, where Wav2Lip's float arithmetic says 1000
    [
      { num: 24000, den: 1001 },
      2000,
      [
        [1, 3],
        [299, 997],
        [300, 1001],
        [301, 1004],
      ],
    ],
    // clamped tail: 100 columns, so no window starts after column 84
    [
      { num: 25, den: 1 },
      100,
      [
        [26, 83],
        [27, 84],
        [28, 84],
        [40, 84],
      ],
    ],
    [
      { num: 30000, den: 1001 },
      100,
      [
        [31, 82],
        [32, 84],
        [33, 84],
      ],
    ],
  ] as const)('at %o fps with %i columns', (fps, columns, table) => {
    for (const [frame, start] of table) expect(melChunkStart(frame, fps, columns), `frame ${frame}`).toBe(start);
  });

  it('keeps every window inside the spectrogram for a whole clip', () => {
    const fps = { num: 30000, den: 1001 };
    const seconds = 10;
    const columns = 1 + Math.floor((seconds * 16000) / 200);
    const frames = Math.round((seconds * 30000) / 1001);
    for (let i = 0; i < frames; i++) {
      const start = melChunkStart(i, fps, columns);
      expect(start).toBeGreaterThanOrEqual(0);
      expect(start + MEL_CHUNK_FRAMES).toBeLessThanOrEqual(columns);
    }
    expect(melChunkStart(frames - 1, fps, columns)).toBe(columns - MEL_CHUNK_FRAMES);
  });

  it('refuses a negative frame and a zero frame rate', () => {
    expect(() => melChunkStart(-1, { num: 25, den: 1 }, 100)).toThrow(
      'Expected frameIndex to be a non-negative integer but received -1',
    );
    expect(() => melChunkStart(0, { num: 0, den: 1 }, 100)).toThrow(
      'Expected fps to be a positive fraction of integers but received 0/1',
    );
  });
});

describe('melChunk', () => {
  const columns = 40;
  const mel: MelSpectrogram = {
    bands: 80,
    frames: columns,
    data: Float32Array.from({ length: 80 * columns }, (_, i) => i),
  };

  it("copies mel[:, start : start + 16] band-major (the model's [1, 80, 16])", () => {
    const chunk = melChunk(mel, 2, { num: 25, den: 1 }); // start 6
    expect(chunk).toHaveLength(80 * 16);
    for (let b = 0; b < 80; b++) {
      for (let t = 0; t < 16; t++) expect(chunk[b * 16 + t]).toBe(b * columns + 6 + t);
    }
  });

  it('writes into a batch at an offset and clamps the tail window', () => {
    const batch = new Float32Array(3 * 80 * 16).fill(99);
    melChunk(mel, 100, { num: 25, den: 1 }, batch, 80 * 16);
    expect(batch[0]).toBe(99);
    expect(batch[80 * 16]).toBe(columns - 16);
    expect(batch[2 * 80 * 16 - 1]).toBe(79 * columns + columns - 1);
    expect(batch[2 * 80 * 16]).toBe(99);
  });

  it('extends audio shorter than one window with the silence value', () => {
    const short: MelSpectrogram = { bands: 80, frames: 5, data: new Float32Array(80 * 5).fill(1) };
    const chunk = melChunk(short, 3, { num: 25, den: 1 });
    expect(Array.from(chunk.subarray(0, 16))).toEqual([1, 1, 1, 1, 1, ...Array<number>(11).fill(-4)]);
  });

  it('refuses an output without room for the window', () => {
    expect(() => melChunk(mel, 0, { num: 25, den: 1 }, new Float32Array(100))).toThrow(
      'Expected room for 1280 values at offset 0 but the output holds 100',
    );
  });
});
