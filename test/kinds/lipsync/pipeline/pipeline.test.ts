/**
 * lipsyncFile on a real face (the astronaut photo, drifting a few pixels a frame) and real speech,
 * through real ffmpeg, BlazeFace and the generated wav2lip-test model: every sync mode with audio
 * longer and shorter than the video. The output is encoded losslessly here, so that pixels outside
 * the mouth can be compared exactly with the source frames the timeline says each output frame
 * shows (the drift makes any frame shown out of place differ everywhere).
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SessionCache } from '../../../../src/inference/index.js';
import {
  lipsyncFile,
  type LipsyncOutcome,
  type RgbFrame,
  releaseLipsyncThreads,
  parseLipsyncModelMapping,
} from '../../../../src/kinds/lipsync/pipeline/index.js';
import type { MediaInfo } from '../../../../src/media/index.js';
import { decodeAudio } from './faces-helpers.js';
import {
  FPS,
  SIDE,
  changedPixels,
  encodeClip,
  faceFrames,
  meanLuma,
  mouthInFrame,
  outputFacts,
  outputFrames,
  probe,
  shownFrame,
  sourceFrames,
  speechClip,
  type OutputFacts,
} from './pipeline-fixtures.js';

const VIDEO_FRAMES = 40;
const SHORT_SECONDS = 1;

/** The mouth's neighbourhood in a source frame: everything the paste may touch, generously. */
function mouthRegion(frame: number): { x0: number; x1: number; y0: number; y1: number } {
  const m = mouthInFrame(frame);
  return { x0: m.x - 40, x1: m.x + 40, y0: m.y - 32, y1: m.y + 42 };
}

/** RMS of the audio the output carries, over the 0.2 s window the model sees for frame i. */
function loudness(samples: Float32Array, i: number): number {
  const start = Math.round((i * 16_000) / FPS);
  const end = Math.min(samples.length, start + 3200);
  let sum = 0;
  for (let k = start; k < end; k += 1) sum += (samples[k] ?? 0) ** 2;
  return end > start ? Math.sqrt(sum / (end - start)) : 0;
}

const mean = (values: number[]): number => values.reduce((a, b) => a + b, 0) / values.length;

describe('lip-sync pipeline: sync modes, durations and pixels', () => {
  const sessions = new SessionCache({ thread: false, threads: 1 });
  const mapping = parseLipsyncModelMapping('wav2lip-test');
  let dir: string;
  let clip: string;
  let clipInfo: MediaInfo;
  let sources: RgbFrame[];
  const audio: Record<string, { file: string; info: MediaInfo; samples: Float32Array; frames: number }> = {};

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'lipsync-pipeline-'));
    clip = await encodeClip(
      path.join(dir, 'face.mp4'),
      await faceFrames(VIDEO_FRAMES),
      { width: SIDE, height: SIDE },
      'mp4',
    );
    clipInfo = await probe(clip);
    sources = await sourceFrames(clip, clipInfo);
    expect(sources).toHaveLength(VIDEO_FRAMES);
    const files = {
      'long.mp3': await speechClip(path.join(dir, 'long.mp3')),
      'long.ogg': await speechClip(path.join(dir, 'long.ogg')),
      'short.m4a': await speechClip(path.join(dir, 'short.m4a'), SHORT_SECONDS),
      'short.aac': await speechClip(path.join(dir, 'short.aac'), SHORT_SECONDS),
      'short.wav': await speechClip(path.join(dir, 'short.wav'), SHORT_SECONDS),
    };
    for (const [name, file] of Object.entries(files)) {
      const samples = await decodeAudio(file);
      audio[name] = { file, info: await probe(file), samples, frames: Math.round((samples.length / 16_000) * FPS) };
    }
  });

  afterAll(async () => {
    await releaseLipsyncThreads();
    await sessions.release();
    await rm(dir, { recursive: true, force: true });
  });

  it('has speech longer and shorter than the video', () => {
    // 2.78 s of speech and 1 s of it, against a 1.6 s video at 25 fps. AAC keeps some of its
    // encoder's priming and padding (ADTS more than MP4, which has an edit list): a frame or two.
    for (const name of ['long.mp3', 'long.ogg']) expect(audio[name]?.frames).toBe(70);
    expect(audio['short.wav']?.frames).toBe(25);
    for (const name of ['short.m4a', 'short.aac']) expect(audio[name]?.frames).toBeOneOf([25, 26, 27]);
  });

  // Output frames (video 40, long audio 70, short audio a = 25..27): cut_off the shorter input,
  // loop/bounce/remap the audio, silence the longer input. Silent frames: the speech's last 0.3 s,
  // or (silence mode, short audio) the padding after it.
  it.each([
    ['cut_off', 'long.mp3', () => 40, 0],
    ['cut_off', 'short.m4a', (a: number) => a, 0],
    ['loop', 'long.ogg', () => 70, 7],
    ['loop', 'short.aac', (a: number) => a, 0],
    ['bounce', 'long.mp3', () => 70, 7],
    ['bounce', 'short.wav', () => 25, 0],
    ['silence', 'long.ogg', () => 70, 7],
    ['silence', 'short.m4a', () => 40, 12],
    ['remap', 'long.mp3', () => 70, 7],
    ['remap', 'short.aac', (a: number) => a, 0],
  ] as const)(
    "%s with %s: the mode's frames and duration, pixels outside the mouth untouched",
    async (mode, audioName, expected, silentFrames) => {
      const input = audio[audioName];
      if (input === undefined) throw new Error(`no fixture ${audioName}`);
      const frames = expected(input.frames);
      const outputPath = path.join(dir, `${mode}-${audioName}.mp4`);
      const progress: string[] = [];
      const outcome: LipsyncOutcome = await lipsyncFile(
        {
          videoPath: clip,
          videoInfo: clipInfo,
          audioPath: input.file,
          audioInfo: input.info,
          outputPath,
          model: 'vendor-lipsync-2',
          syncMode: mode,
          activeSpeaker: false,
          lossless: true,
          progressIntervalMs: 0,
          onProgress: (p) => progress.push(`${p.stage} ${p.done}/${p.total}`),
        },
        { sessions, lipsyncModelMapping: mapping },
      );
      const seconds = frames / FPS;
      expect(outcome).toMatchObject({
        outputPath,
        frames,
        width: SIDE,
        height: SIDE,
        fps: FPS,
        network: 'wav2lip-test',
        testModel: true,
        syncMode: mode,
      });
      expect(outcome.durationSeconds).toBeCloseTo(seconds, 9);
      expect(outcome.drivenFrames).toBe(frames);
      expect(progress.at(-1)).toBe(`lip-syncing ${frames}/${frames}`);
      expect(progress).toContain(
        `detecting faces ${Math.min(VIDEO_FRAMES, mode === 'silence' || mode === 'remap' ? VIDEO_FRAMES : input.frames)}/${Math.min(VIDEO_FRAMES, mode === 'silence' || mode === 'remap' ? VIDEO_FRAMES : input.frames)}`,
      );

      const facts: OutputFacts = await outputFacts(outputPath);
      expect(facts).toMatchObject({ width: SIDE, height: SIDE, frames, videoCodec: 'h264', audioCodec: 'aac' });
      expect(Math.abs(facts.videoSeconds - seconds)).toBeLessThan(1e-3);
      expect(Math.abs(facts.audioSeconds - seconds)).toBeLessThanOrEqual(1 / FPS);
      expect(Math.abs(facts.formatSeconds - seconds)).toBeLessThanOrEqual(1 / FPS);

      const out = await outputFrames(outputPath, SIDE, SIDE);
      expect(out).toHaveLength(frames);
      // The audio the result carries: the input cut or padded with silence to the output's length.
      const carried = new Float32Array(Math.round(seconds * 16_000));
      carried.set(input.samples.subarray(0, carried.length));
      const darkening: { loud: number[]; silent: number[] } = { loud: [], silent: [] };
      let outside = 0;
      let compared = 0;
      for (let i = 0; i < frames; i += 1) {
        const shown = shownFrame(mode, i, VIDEO_FRAMES, frames);
        const source = sources[shown] as RgbFrame;
        const frame = out[i] as RgbFrame;
        const region = mouthRegion(shown);
        const changed = changedPixels(source, frame);
        expect(changed.length).toBeGreaterThan(100);
        outside += changed.filter(
          (p) => p.x < region.x0 || p.x >= region.x1 || p.y < region.y0 || p.y >= region.y1,
        ).length;
        compared += SIDE * SIDE - (region.x1 - region.x0) * (region.y1 - region.y0);
        const m = mouthInFrame(shown);
        const d =
          meanLuma(source, m.x - 20, m.y - 10, m.x + 20, m.y + 22) -
          meanLuma(frame, m.x - 20, m.y - 10, m.x + 20, m.y + 22);
        const level = loudness(carried, i);
        if (level > 0.09) darkening.loud.push(d);
        if (level < 0.005) darkening.silent.push(d);
      }
      // Every pixel away from the mouth is the source's, bit for bit, in every frame.
      expect(compared).toBeGreaterThan(frames * 10_000);
      expect(outside).toBe(0);
      // The test model darkens the mouth with the mel level: loud speech darkens, silence does not.
      expect(darkening.loud.length).toBeGreaterThanOrEqual(5);
      expect(mean(darkening.loud)).toBeGreaterThan(8);
      expect(darkening.silent.length).toBeGreaterThanOrEqual(silentFrames);
      if (silentFrames > 0) expect(mean(darkening.silent)).toBeLessThan(3);
      expect((await readdir(dir)).filter((f) => f.includes('.partial'))).toEqual([]);
    },
  );
});
