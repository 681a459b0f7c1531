/**
 * Audio decoding with the real ffmpeg: every accepted audio container and the audio track of a
 * video, to 16 kHz mono float32, and the trim/pad that fits the audio to the timeline.
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProcessingError } from '../../../../src/errors.js';
import {
  audioFitFilter,
  decodeAudio,
  decodeAudioArgs,
  ffmpegSeconds,
  fitSamples,
} from '../../../../src/kinds/lipsync/pipeline/index.js';
import type { ContainerKind } from '../../../../src/media/index.js';
import { ffmpeg, makeClip, makeTempDir } from '../../../media/helpers.js';
import { readWav16 } from './pipeline-fixtures.js';

const SPEECH = fileURLToPath(new URL('./fixtures/speech-16k.wav', import.meta.url));

function rms(x: Float32Array): number {
  let sum = 0;
  for (const v of x) sum += v * v;
  return Math.sqrt(sum / x.length);
}

/** Zero crossings per second, for a frequency estimate of a pure tone. */
function toneHz(x: Float32Array, rate: number): number {
  let crossings = 0;
  for (let i = 1; i < x.length; i++) if (x[i - 1]! < 0 !== x[i]! < 0) crossings++;
  return crossings / 2 / (x.length / rate);
}

describe('decodeAudioArgs', () => {
  it('reads the first audio stream through the safe input flags and writes 16 kHz mono f32le to stdout', () => {
    expect(decodeAudioArgs({ path: '/tmp/in.mp3', container: 'mp3' })).toEqual([
      '-hide_banner',
      '-nostdin',
      '-v',
      'error',
      '-protocol_whitelist',
      'file,pipe',
      '-format_whitelist',
      'mp3',
      '-f',
      'mp3',
      '-i',
      'file:/tmp/in.mp3',
      '-map',
      '0:a:0',
      '-vn',
      '-sn',
      '-dn',
      '-ac',
      '1',
      '-ar',
      '16000',
      '-f',
      'f32le',
      'pipe:1',
    ]);
  });

  it('stops after maxSeconds', () => {
    const args = decodeAudioArgs({ path: '/tmp/in.m4a', container: 'm4a' }, { maxSeconds: 12.5 });
    expect(args.slice(args.indexOf('-t'), args.indexOf('-t') + 2)).toEqual(['-t', '12.500000']);
    expect(args).toContain('mov');
  });

  it('refuses a relative path and a bad duration', () => {
    expect(() => decodeAudioArgs({ path: 'in.wav', container: 'wav' })).toThrow(
      'Expected an absolute path for the media input but received "in.wav"',
    );
    expect(() => decodeAudioArgs({ path: '/tmp/in.wav', container: 'wav' }, { maxSeconds: 0 })).toThrow(
      'Expected maxSeconds to be a positive number but received 0',
    );
  });
});

describe('decodeAudio', () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  beforeAll(async () => {
    ({ dir, cleanup } = await makeTempDir('lipsync-audio'));
  });
  afterAll(async () => {
    await cleanup();
  });

  it('returns the exact samples of a 16 kHz 16-bit WAV (s / 32768, like librosa)', async () => {
    const want = readWav16(SPEECH);
    const got = await decodeAudio({ path: SPEECH, container: 'wav' });
    expect(got.length).toBe(want.length);
    expect(got).toEqual(want);
  });

  // One second of a 440 Hz tone at 44.1 kHz stereo, in each accepted audio container.
  it.each<[string, ContainerKind, string[]]>([
    ['tone.wav', 'wav', ['-c:a', 'pcm_s16le']],
    ['tone.mp3', 'mp3', ['-c:a', 'libmp3lame', '-b:a', '96k']],
    ['tone.aac', 'aac', ['-c:a', 'aac', '-b:a', '96k']],
    ['tone.ogg', 'ogg', ['-c:a', 'libvorbis', '-q:a', '3']],
    ['tone.m4a', 'm4a', ['-c:a', 'aac', '-b:a', '96k']],
  ])('decodes %s to 16 kHz mono', async (name, container, codec) => {
    const path = join(dir, name);
    await ffmpeg(['-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=44100:duration=1', '-ac', '2', ...codec, path]);
    const samples = await decodeAudio({ path, container });
    // Lossy codecs add encoder delay and padding of a few frames: within 0.1 s of one second.
    expect(Math.abs(samples.length - 16000)).toBeLessThan(1600);
    const middle = samples.subarray(2000, 14000);
    expect(toneHz(middle, 16000)).toBeGreaterThan(430);
    expect(toneHz(middle, 16000)).toBeLessThan(450);
    // ffmpeg's sine source has amplitude 1/8: the same in both channels, so the mono mix keeps it.
    expect(rms(middle)).toBeCloseTo(0.125 / Math.SQRT2, 2);
  });

  it('decodes the audio track of a video', async () => {
    const path = await makeClip(join(dir, 'clip.mp4'), { seconds: 1, audio: true, extra: ['-c:a', 'aac'] });
    const samples = await decodeAudio({ path, container: 'mp4' });
    expect(Math.abs(samples.length - 16000)).toBeLessThan(1600);
    expect(toneHz(samples.subarray(2000, 14000), 16000)).toBeCloseTo(440, -1);
  });

  it('stops at maxSeconds', async () => {
    const samples = await decodeAudio({ path: SPEECH, container: 'wav' }, { maxSeconds: 0.5 });
    expect(samples.length).toBe(8000);
  });

  it('fails with a processing failure (LIPSYNC_FAILED for the job) when the file has no audio stream', async () => {
    const path = await makeClip(join(dir, 'silent.mp4'), { seconds: 0.2 });
    const error = await decodeAudio({ path, container: 'mp4' }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(ProcessingError);
    expect((error as ProcessingError).retryable).toBe(false);
    expect((error as ProcessingError).message).toBe('The audio could not be decoded: it has no audio stream');
  });

  it('rejects with the abort reason when cancelled', async () => {
    const controller = new AbortController();
    const reason = new Error('job cancelled');
    controller.abort(reason);
    await expect(decodeAudio({ path: SPEECH, container: 'wav' }, { signal: controller.signal })).rejects.toBe(reason);
  });

  it('fits encoded audio to the planned duration with audioFitFilter (pad and trim)', async () => {
    for (const [seconds, target] of [
      [1, 1.5],
      [1, 0.6],
    ] as const) {
      const out = join(dir, `fit-${target}.wav`);
      await ffmpeg([
        '-f',
        'lavfi',
        '-i',
        `sine=frequency=440:sample_rate=16000:duration=${seconds}`,
        '-af',
        audioFitFilter(target),
        '-c:a',
        'pcm_s16le',
        out,
      ]);
      const samples = readWav16(out);
      expect(samples.length).toBe(Math.round(target * 16000));
      if (target > seconds) expect(rms(samples.subarray(16000))).toBe(0);
    }
  });
});

describe('fitSamples', () => {
  const samples = Float32Array.from({ length: 16000 }, (_, i) => (i % 100) / 100 + 0.01);

  it('trims to round(seconds * 16000) samples', () => {
    const out = fitSamples(samples, 0.5);
    expect(out.length).toBe(8000);
    expect(out[7999]).toBe(samples[7999]);
  });

  it('pads with silence', () => {
    const out = fitSamples(samples, 1.25);
    expect(out.length).toBe(20000);
    expect(out[15999]).toBe(samples[15999]);
    expect(out.subarray(16000).every((v) => v === 0)).toBe(true);
  });

  it('returns the input when it already fits', () => {
    expect(fitSamples(samples, 1)).toBe(samples);
  });

  it('refuses a non-positive duration', () => {
    expect(() => fitSamples(samples, -1)).toThrow('Expected seconds to be a positive number but received -1');
  });
});

describe('audioFitFilter', () => {
  it('pads then trims to the same duration', () => {
    expect(audioFitFilter(5.005)).toBe('apad=whole_dur=5.005000,atrim=end=5.005000');
    expect(ffmpegSeconds(1e-7)).toBe('0.000000');
  });
});
