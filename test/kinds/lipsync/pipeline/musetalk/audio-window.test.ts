/**
 * MuseTalk's per-frame audio window (src/kinds/lipsync/pipeline/musetalk/audio-window.ts): indexing tables, and
 * the whole window against a line-by-line transcription of the reference's get_whisper_chunk
 * (pad the sequence with zeros, slice 10 positions, flatten steps x layers).
 */
import { describe, expect, it } from 'vitest';
import {
  joinWhisperSegments,
  MUSETALK_AUDIO_ROWS,
  museTalkAudioWindow,
  museTalkFrameCount,
  museTalkWindowStart,
  whisperActivePositions,
  WHISPER_SEGMENT_POSITIONS,
  type WhisperHiddenStates,
} from '../../../../../src/kinds/lipsync/pipeline/musetalk/index.js';
import type { Rational } from '../../../../../src/kinds/lipsync/pipeline/index.js';

const fps = (num: number, den = 1): Rational => ({ num, den });

describe('museTalkWindowStart', () => {
  it.each([
    // [fps, frame, start]: floor(i * 50 / fps) - ceil(50 / fps) * 2
    [fps(25), 0, -4],
    [fps(25), 1, -2],
    [fps(25), 2, 0],
    [fps(25), 10, 16],
    [fps(25), 1000, 1996],
    [fps(30), 0, -4],
    [fps(30), 1, -3],
    [fps(30), 3, 1],
    [fps(24), 0, -6],
    [fps(24), 12, 19],
    [fps(30000, 1001), 30, 46],
    [fps(50), 7, 5],
  ])('at %o frame %i starts at %i', (rate, frame, start) => {
    expect(museTalkWindowStart(frame, rate)).toBe(start);
  });

  it('refuses a negative frame or a broken rate', () => {
    expect(() => museTalkWindowStart(-1, fps(25))).toThrow(/non-negative integer/);
    expect(() => museTalkWindowStart(0, fps(0))).toThrow(/positive fraction/);
  });
});

describe('frame and position counts', () => {
  it.each([
    // [samples, fps, frames, positions]
    [44_555, fps(25), 69, 139],
    [16_000, fps(25), 25, 50],
    [15_999, fps(25), 24, 49],
    [0, fps(25), 0, 0],
    [480_000, fps(30000, 1001), 899, 1500],
    [480_001, fps(25), 750, 1500],
  ])('%i samples at %o make %i frames over %i positions', (samples, rate, frames, positions) => {
    expect(museTalkFrameCount(samples, rate)).toBe(frames);
    expect(whisperActivePositions(samples)).toBe(positions);
  });
});

/** A value that names its position, layer and column. */
function stateValue(p: number, layer: number, w: number): number {
  return 1 + p * 1000 + layer * 100 + w;
}

function states(positions: number, layers: number, width: number): WhisperHiddenStates {
  const data = new Float32Array(positions * layers * width);
  for (let p = 0; p < positions; p++)
    for (let l = 0; l < layers; l++)
      for (let w = 0; w < width; w++) data[(p * layers + l) * width + w] = stateValue(p, l, w);
  return { data, positions, layers, width };
}

/** get_whisper_chunk, transcribed: trim, pad ceil(50/fps)*2 in front and ceil(50/fps)*3*2 behind, slice, flatten. */
function referenceWindows(s: WhisperHiddenStates, samples: number, rate: number): Float32Array[] {
  const { layers, width } = s;
  const actual = Math.floor((samples / 16000) * 50);
  const multiplier = 50 / rate;
  const paddingNums = Math.ceil(multiplier);
  const zeros = (n: number): number[][][] =>
    Array.from({ length: n }, () => Array.from({ length: layers }, () => new Array<number>(width).fill(0)));
  const seq: number[][][] = [...zeros(paddingNums * 2)];
  for (let p = 0; p < actual; p++)
    seq.push(
      Array.from({ length: layers }, (_, l) =>
        Array.from({ length: width }, (_, w) => s.data[(p * layers + l) * width + w]!),
      ),
    );
  seq.push(...zeros(paddingNums * 3 * 2));
  const frames = Math.floor((samples / 16000) * rate);
  const out: Float32Array[] = [];
  for (let i = 0; i < frames; i++) {
    const index = Math.floor(i * multiplier);
    const clip = seq.slice(index, index + 10);
    expect(clip.length).toBe(10);
    out.push(Float32Array.from(clip.flatMap((step) => step.flat())));
  }
  return out;
}

describe('museTalkAudioWindow', () => {
  it('lays a frame out as 10 steps x 5 layers = 50 rows of 384, zeros outside the audio', () => {
    const s = states(60, 5, 384);
    const w = museTalkAudioWindow(s, 55, 1, fps(25));
    expect(w.length).toBe(MUSETALK_AUDIO_ROWS * 384);
    expect(MUSETALK_AUDIO_ROWS).toBe(50);
    // Frame 1 starts at position -2: steps 0 and 1 are front padding, step 2 is position 0.
    expect(w.subarray(0, 2 * 5 * 384).every((v) => v === 0)).toBe(true);
    expect(w[(2 * 5 + 0) * 384 + 0]).toBe(stateValue(0, 0, 0));
    expect(w[(3 * 5 + 4) * 384 + 383]).toBe(stateValue(1, 4, 383));
    // Near the end, positions at and past the active 55 are zeros even though the states hold 60.
    const tail = museTalkAudioWindow(s, 55, 28, fps(25)); // start 52: steps 0-2 real, 3-9 zeros
    expect(tail[(2 * 5 + 1) * 384 + 7]).toBe(stateValue(54, 1, 7));
    expect(tail.subarray(3 * 5 * 384).every((v) => v === 0)).toBe(true);
  });

  it.each([
    [44_555, 25],
    [16_000 * 3 + 123, 30],
    [16_000 * 2 + 7, 24],
  ])('matches the reference transcription for %i samples at %i fps', (samples, rate) => {
    const active = whisperActivePositions(samples);
    const s = states(active + 20, 5, 3);
    const want = referenceWindows(s, samples, rate);
    expect(want.length).toBe(museTalkFrameCount(samples, fps(rate)));
    const batch = new Float32Array(want.length * 50 * 3);
    want.forEach((_, i) => museTalkAudioWindow(s, active, i, fps(rate), batch, i * 50 * 3));
    want.forEach((w, i) => expect(batch.subarray(i * 150, (i + 1) * 150)).toEqual(w));
  });

  it('refuses inconsistent inputs with a message naming them', () => {
    const s = states(10, 5, 4);
    expect(() => museTalkAudioWindow({ ...s, positions: 11 }, 10, 0, fps(25))).toThrow(
      /Expected 220 hidden-state values/,
    );
    expect(() => museTalkAudioWindow(s, 11, 0, fps(25))).toThrow(/activePositions between 0 and 10/);
    expect(() => museTalkAudioWindow(s, 10, 0, fps(25), new Float32Array(10))).toThrow(/room for 200 values/);
  });
});

describe('joinWhisperSegments', () => {
  it('concatenates 1500-position segments in order', () => {
    const a = new Float32Array(WHISPER_SEGMENT_POSITIONS * 2 * 3).fill(1);
    const b = new Float32Array(WHISPER_SEGMENT_POSITIONS * 2 * 3).fill(2);
    const joined = joinWhisperSegments([a, b], 2, 3);
    expect(joined.positions).toBe(3000);
    expect(joined.data[WHISPER_SEGMENT_POSITIONS * 6 - 1]).toBe(1);
    expect(joined.data[WHISPER_SEGMENT_POSITIONS * 6]).toBe(2);
    expect(() => joinWhisperSegments([a.subarray(1)], 2, 3)).toThrow(/segment 0 to hold 9000/);
  });
});
