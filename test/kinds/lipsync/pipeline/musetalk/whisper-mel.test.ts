/**
 * MuseTalk's Whisper input features (src/kinds/lipsync/pipeline/musetalk/whisper-mel.ts) against transformers'
 * WhisperFeatureExtractor on real speech: the committed reference (scripts/whisper-mel-reference.py
 * wrote it with transformers) always, and transformers run afresh when the Python environment
 * .cache/musetalk-python exists (not in CI: the test says it skipped and why).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, copyFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  WHISPER_SEGMENT_FRAMES,
  WHISPER_SEGMENT_SAMPLES,
  whisperLogMel,
  whisperSegments,
} from '../../../../../src/kinds/lipsync/pipeline/musetalk/index.js';
import { readWav16 } from '../pipeline-fixtures.js';

const FIXTURES = fileURLToPath(new URL('../fixtures/', import.meta.url));
const ROOT = fileURLToPath(new URL('../../../../../', import.meta.url));
const PYTHON = path.join(ROOT, '.cache', 'musetalk-python', 'venv', 'bin', 'python');
const TOLERANCE = 1e-4;

interface ReferenceCase {
  file: string;
  gain: number;
  samples: number;
  bands: number;
  frames: number;
  storedFrames: number;
  restValue: number;
}
interface Reference {
  transformers: string;
  cases: Record<string, ReferenceCase>;
}

function readF32(file: string, count: number): Float32Array {
  const bytes = readFileSync(file);
  expect(bytes.length).toBe(4 * count);
  const out = new Float32Array(count);
  for (let i = 0; i < count; i++) out[i] = bytes.readFloatLE(4 * i);
  return out;
}

/** Max abs difference between our [80, 3000] and a reference holding the first `stored` frames, the rest one value. */
function compare(ours: { data: Float32Array; bands: number; frames: number }, dir: string, c: ReferenceCase): number {
  expect([ours.bands, ours.frames]).toEqual([c.bands, c.frames]);
  const stored = readF32(path.join(dir, c.file), c.bands * c.storedFrames);
  let max = 0;
  for (let b = 0; b < c.bands; b++) {
    for (let t = 0; t < c.frames; t++) {
      const want = t < c.storedFrames ? stored[b * c.storedFrames + t]! : c.restValue;
      max = Math.max(max, Math.abs(ours.data[b * c.frames + t]! - want));
    }
  }
  return max;
}

function scaled(samples: Float32Array, gain: number): Float32Array {
  // The reference multiplies in float32; Math.fround keeps the same rounding.
  return samples.map((v) => Math.fround(v * Math.fround(gain)));
}

const speech = readWav16(path.join(FIXTURES, 'speech-16k.wav'));
const reference = JSON.parse(readFileSync(path.join(FIXTURES, 'whisper-mel-reference.json'), 'utf8')) as Reference;

describe('whisperLogMel against the committed transformers reference', () => {
  it.each(Object.entries(reference.cases))(
    'matches WhisperFeatureExtractor on real speech (%s) within 1e-4',
    (_name, c) => {
      expect(speech.length).toBe(c.samples);
      const diff = compare(whisperLogMel(scaled(speech, c.gain)), FIXTURES, c);
      expect(diff).toBeLessThanOrEqual(TOLERANCE);
    },
  );

  it('is not trivially close: a shifted clip or another floor differs from the reference', () => {
    const c = reference.cases.speech!;
    const shifted = new Float32Array(speech.length);
    shifted.set(speech.subarray(80));
    expect(compare(whisperLogMel(shifted), FIXTURES, c)).toBeGreaterThan(0.05);
    expect(compare(whisperLogMel(scaled(speech, 0.05)), FIXTURES, c)).toBeGreaterThan(0.05);
  });

  it('pads with silence to 30 s and holds its values in [max - 8, max] mapped by (x + 4) / 4', () => {
    const mel = whisperLogMel(speech);
    let max = -Infinity;
    let min = Infinity;
    for (const v of mel.data) {
      max = Math.max(max, v);
      min = Math.min(min, v);
    }
    expect(max - min).toBeLessThanOrEqual(2 + 1e-6);
    expect(mel.data[mel.frames - 1]).toBeCloseTo(min, 6);
  });

  it('refuses a segment longer than 30 s and cuts long audio into 30 s segments', () => {
    expect(() => whisperLogMel(new Float32Array(WHISPER_SEGMENT_SAMPLES + 1))).toThrow(/at most 480000 samples/);
    expect(whisperSegments(new Float32Array(WHISPER_SEGMENT_SAMPLES * 2 + 5)).map((s) => s.length)).toEqual([
      WHISPER_SEGMENT_SAMPLES,
      WHISPER_SEGMENT_SAMPLES,
      5,
    ]);
    expect(whisperSegments(new Float32Array(WHISPER_SEGMENT_SAMPLES)).length).toBe(1);
    expect(WHISPER_SEGMENT_FRAMES).toBe(3000);
  });
});

const hasPython =
  existsSync(PYTHON) && spawnSync(PYTHON, ['-c', 'import transformers, numpy'], { stdio: 'ignore' }).status === 0;
const skipReason =
  'no Python environment with transformers (.cache/musetalk-python/venv: python3 -m venv it, then its pip install transformers numpy)';

describe.skipIf(!hasPython)(
  `whisperLogMel against transformers run now${hasPython ? '' : ` (skipped: ${skipReason})`}`,
  () => {
    it('matches a fresh run of scripts/whisper-mel-reference.py within 1e-4', () => {
      const dir = mkdtempSync(path.join(tmpdir(), 'whisper-mel-'));
      try {
        copyFileSync(path.join(FIXTURES, 'speech-16k.wav'), path.join(dir, 'speech-16k.wav'));
        const run = spawnSync(PYTHON, [path.join(ROOT, 'scripts', 'whisper-mel-reference.py'), dir], {
          encoding: 'utf8',
        });
        expect(run.status, run.stderr).toBe(0);
        const fresh = JSON.parse(readFileSync(path.join(dir, 'whisper-mel-reference.json'), 'utf8')) as Reference;
        for (const c of Object.values(fresh.cases)) {
          expect(compare(whisperLogMel(scaled(speech, c.gain)), dir, c)).toBeLessThanOrEqual(TOLERANCE);
        }
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  },
);
