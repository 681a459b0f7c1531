/**
 * lipsyncFile on MuseTalk (network 'musetalk', the generated musetalk-test graphs loaded through the
 * same path as real ones) with real ffmpeg and BlazeFace: each sync mode on the drifting face clip
 * (output length, every pixel away from the lower face the source's, bit for bit, in the frame the
 * timeline shows; the mouth darkening with the output's own audio), the bundled Megamind video, the
 * -2-pro mouth pass and source bitrate, frames without a face passed through, the active speaker,
 * and cancellation (no process, no file left).
 */
import { copyFile, mkdir, mkdtemp, readdir, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SessionCache, createSrModelLoader } from '../../../../src/inference/index.js';
import { resolveFfmpeg, runProcess, type MediaInfo } from '../../../../src/media/index.js';
import { PACKAGE_ROOT } from '../../../../src/paths.js';
import {
  lipsyncFile,
  MUSETALK_TEST_MODEL,
  museTalkManifestPath,
  parseLipsyncModelMapping,
  type LipsyncDeps,
  type LipsyncProgress,
  type LipsyncRequest,
  type RgbFrame,
} from '../../../../src/kinds/lipsync/pipeline/index.js';
import { decodeAudio, requireMegamind } from './faces-helpers.js';
import {
  FPS,
  TWO_FACES,
  changedPixels,
  childProcesses,
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
  twoFaceClip,
} from './pipeline-fixtures.js';

const SIDE = 192;
const VIDEO_FRAMES = 30;

/**
 * The lower face around the mouth in a source frame: everything MuseTalk's blend may touch (the
 * half-ellipse under the face box's middle, cheek to cheek, down past the chin), with a margin.
 * Everything above it (eyes, brows, forehead) and beside it must stay the source's.
 */
function lowerFace(frame: number): { x0: number; x1: number; y0: number; y1: number } {
  const m = mouthInFrame(frame, SIDE);
  const k = SIDE / 160;
  return { x0: m.x - 60 * k, x1: m.x + 60 * k, y0: m.y - 30 * k, y1: m.y + 55 * k };
}

/** RMS of the output's audio over MuseTalk's window for frame i: 0.08 s before to 0.12 s after it. */
function loudness(samples: Float32Array, i: number): number {
  const start = Math.max(0, Math.round(((i - 2) * 16_000) / FPS));
  const end = Math.min(samples.length, Math.round(((i + 3) * 16_000) / FPS));
  let sum = 0;
  for (let k = start; k < end; k += 1) sum += (samples[k] ?? 0) ** 2;
  return end > start ? Math.sqrt(sum / (end - start)) : 0;
}

function correlation(a: readonly number[], b: readonly number[]): number {
  const n = a.length;
  const ma = a.reduce((s, v) => s + v, 0) / n;
  const mb = b.reduce((s, v) => s + v, 0) / n;
  let ab = 0;
  let aa = 0;
  let bb = 0;
  for (let i = 0; i < n; i += 1) {
    ab += (a[i]! - ma) * (b[i]! - mb);
    aa += (a[i]! - ma) ** 2;
    bb += (b[i]! - mb) ** 2;
  }
  return ab / Math.sqrt(aa * bb);
}

describe('lip-sync pipeline on MuseTalk (musetalk-test)', () => {
  const sessions = new SessionCache({ thread: false, threads: 1 });
  const srSessions = new SessionCache({ threads: 1 });
  let dir: string;
  let deps: LipsyncDeps;
  let clip: string;
  let clipInfo: MediaInfo;
  let sources: RgbFrame[];
  const audio: Record<string, { file: string; info: MediaInfo; frames: number }> = {};

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'musetalk-pipeline-'));
    // A models folder of its own: the detector's files, and MuseTalk's manifest, whose graphs are
    // generated into it on first use as on a new host.
    const models = path.join(dir, 'models');
    await mkdir(path.join(models, 'musetalk'), { recursive: true });
    for (const file of ['blazeface-back-256.json', 'blazeface-back-256.onnx'])
      await symlink(path.join(PACKAGE_ROOT, 'models', file), path.join(models, file));
    await copyFile(
      museTalkManifestPath(path.join(PACKAGE_ROOT, 'models'), MUSETALK_TEST_MODEL),
      museTalkManifestPath(models, MUSETALK_TEST_MODEL),
    );
    deps = {
      sessions,
      lipsyncModelMapping: parseLipsyncModelMapping(MUSETALK_TEST_MODEL),
      registry: { modelsDir: models },
      loadSrModel: createSrModelLoader({ sessions: srSessions }),
    };
    clip = await encodeClip(
      path.join(dir, 'face.mp4'),
      await faceFrames(VIDEO_FRAMES, { side: SIDE }),
      { width: SIDE, height: SIDE },
      'mp4',
    );
    clipInfo = await probe(clip);
    sources = await sourceFrames(clip, clipInfo);
    expect(sources).toHaveLength(VIDEO_FRAMES);
    for (const [name, seconds] of [
      ['long.mp3', undefined],
      ['short.m4a', 1],
    ] as const) {
      const file = await speechClip(path.join(dir, name), seconds);
      const samples = await decodeAudio(file);
      audio[name] = { file, info: await probe(file), frames: Math.round((samples.length / 16_000) * FPS) };
    }
  }, 120_000);

  afterAll(async () => {
    await sessions.release();
    await srSessions.release();
    await rm(dir, { recursive: true, force: true });
  });

  function request(extra: Partial<LipsyncRequest> & Pick<LipsyncRequest, 'outputPath'>): LipsyncRequest {
    const input = audio['long.mp3']!;
    return {
      videoPath: clip,
      videoInfo: clipInfo,
      audioPath: input.file,
      audioInfo: input.info,
      model: 'vendor-lipsync-2',
      syncMode: 'cut_off',
      activeSpeaker: false,
      lossless: true,
      ...extra,
    };
  }

  // Output frames (video 30, long audio 70, short audio 25..27).
  it.each([
    ['cut_off', 'long.mp3', () => VIDEO_FRAMES],
    ['loop', 'long.mp3', () => 70],
    ['bounce', 'short.m4a', (a: number) => a],
    ['silence', 'short.m4a', () => VIDEO_FRAMES],
    ['remap', 'long.mp3', () => 70],
  ] as const)(
    "%s with %s: the mode's length within a frame, only the lower face changed, the mouth following the output's audio",
    async (mode, audioName, expected) => {
      const input = audio[audioName]!;
      const frames = expected(input.frames);
      const outputPath = path.join(dir, `${mode}.mp4`);
      const outcome = await lipsyncFile(
        request({ outputPath, syncMode: mode, audioPath: input.file, audioInfo: input.info }),
        deps,
      );
      expect(outcome).toMatchObject({ network: MUSETALK_TEST_MODEL, testModel: true, syncMode: mode, frames });
      expect(outcome.drivenFrames).toBe(frames);
      expect(outcome.stats.modelCalls).toBeGreaterThanOrEqual(Math.ceil(frames / 8));

      const facts = await outputFacts(outputPath);
      const seconds = frames / FPS;
      expect(Math.abs(facts.frames - frames)).toBeLessThanOrEqual(1);
      expect(Math.abs(facts.videoSeconds - seconds)).toBeLessThanOrEqual(1 / FPS);
      expect(Math.abs(facts.audioSeconds - facts.videoSeconds)).toBeLessThanOrEqual(1 / FPS);

      const out = await outputFrames(outputPath, SIDE, SIDE);
      const carried = await decodeAudio(outputPath);
      let outside = 0;
      let inside = 0;
      let aboveMouth = 0;
      const darkening: number[] = [];
      const levels: number[] = [];
      for (let i = 0; i < out.length; i += 1) {
        const shown = shownFrame(mode, i, VIDEO_FRAMES, frames);
        const source = sources[shown]!;
        const frame = out[i]!;
        const region = lowerFace(shown);
        const m = mouthInFrame(shown, SIDE);
        for (const p of changedPixels(source, frame)) {
          if (p.x < region.x0 || p.x >= region.x1 || p.y < region.y0 || p.y >= region.y1) outside += 1;
          else inside += 1;
          // The eyes sit about 0.9 eye-to-mouth distances (~40 px here) above the mouth.
          if (p.y < m.y - 30) aboveMouth += 1;
        }
        darkening.push(
          meanLuma(source, m.x - 20, m.y - 8, m.x + 20, m.y + 14) -
            meanLuma(frame, m.x - 20, m.y - 8, m.x + 20, m.y + 14),
        );
        levels.push(loudness(carried, i));
      }
      // Every pixel away from the lower face is the source's, bit for bit, in the frame the mode shows.
      expect(outside).toBe(0);
      expect(aboveMouth).toBe(0);
      expect(inside).toBeGreaterThan(out.length * 500);
      // The test UNet darkens the mouth with the audio window's level: it follows the output's own
      // soundtrack, and no longer does when the soundtrack is read half a second off.
      const inSync = correlation(darkening, levels);
      const shifted = correlation(darkening.slice(12), levels.slice(0, -12));
      // (Measured: 0.41 to 0.79 in sync, -0.60 to -0.16 shifted.)
      expect(inSync).toBeGreaterThan(0.3);
      expect(inSync).toBeGreaterThan(shifted + 0.4);
      expect((await readdir(dir)).filter((f) => f.includes('.partial'))).toEqual([]);
    },
  );

  it('lip-syncs the bundled Megamind video: its length, changes only on the faces it drives', async () => {
    const megamind = path.join(dir, 'megamind.mp4');
    await runProcess(resolveFfmpeg(), [
      '-v',
      'error',
      '-y',
      '-i',
      requireMegamind(),
      '-t',
      '2',
      '-vf',
      'scale=360:-2',
      '-an',
      '-c:v',
      'libx264',
      '-preset',
      'veryfast',
      '-crf',
      '16',
      megamind,
    ]);
    const info = await probe(megamind);
    const source = await sourceFrames(megamind, info);
    const outputPath = path.join(dir, 'megamind-out.mp4');
    const outcome = await lipsyncFile(request({ outputPath, videoPath: megamind, videoInfo: info }), deps);
    expect(Math.abs(outcome.frames - source.length)).toBeLessThanOrEqual(1);
    expect(outcome.drivenFrames).toBeGreaterThan(source.length / 2);
    const { width, height } = source[0]!;
    const out = await outputFrames(outputPath, width, height);
    expect(Math.abs(out.length - source.length)).toBeLessThanOrEqual(1);
    let changedFrames = 0;
    for (let i = 0; i < Math.min(out.length, source.length); i += 1) {
      const changed = changedPixels(source[i]!, out[i]!);
      if (changed.length === 0) continue;
      changedFrames += 1;
      const xs = changed.map((p) => p.x);
      const ys = changed.map((p) => p.y);
      // One lower face: a small patch of the frame, never the whole picture.
      expect(Math.max(...xs) - Math.min(...xs)).toBeLessThan(width / 3);
      expect(Math.max(...ys) - Math.min(...ys)).toBeLessThan(height / 3);
      expect(changed.length).toBeLessThan((width * height) / 20);
    }
    expect(changedFrames).toBe(outcome.drivenFrames);
  });

  it('vendor-lipsync-2-pro: the mouth pass upscales faces larger than 256 px, and the source bitrate is kept', async () => {
    const side = 560;
    const frames = 3;
    const large = await encodeClip(
      path.join(dir, 'large-face.mp4'),
      await faceFrames(frames, { side }),
      { width: side, height: side },
      'mp4',
      { videoBitrate: '900k' },
    );
    const info = await probe(large);
    const outputPath = path.join(dir, 'pro.mp4');
    const pro = await lipsyncFile(
      request({ outputPath, videoPath: large, videoInfo: info, model: 'vendor-lipsync-2-pro', lossless: false }),
      deps,
    );
    expect(pro.network).toBe(MUSETALK_TEST_MODEL);
    expect(pro.srModel).toBeDefined();
    expect(pro.stats.srFaces).toBe(frames);
    expect(pro.encoder).toMatchObject({ mode: 'bitrate', bitsPerSecond: info.video?.bitRate });
    expect((await outputFacts(outputPath)).frames).toBe(frames);
  });

  it('passes the frames without a face through untouched', async () => {
    // Ten frames of her face, then ten of a grey wall.
    const faces = await faceFrames(10, { side: SIDE });
    const wall = Buffer.alloc(SIDE * SIDE * 3, 118);
    const partly = await encodeClip(
      path.join(dir, 'face-then-wall.mp4'),
      [...faces, ...Array.from({ length: 10 }, () => wall)],
      { width: SIDE, height: SIDE },
      'mp4',
    );
    const info = await probe(partly);
    const outputPath = path.join(dir, 'face-then-wall-out.mp4');
    const outcome = await lipsyncFile(request({ outputPath, videoPath: partly, videoInfo: info }), deps);
    expect(outcome.frames).toBe(20);
    expect(outcome.drivenFrames).toBeGreaterThanOrEqual(8);
    expect(outcome.drivenFrames).toBeLessThanOrEqual(10);
    const source = await sourceFrames(partly, info);
    const out = await outputFrames(outputPath, SIDE, SIDE);
    expect(out).toHaveLength(20);
    expect(changedPixels(source[2]!, out[2]!).length).toBeGreaterThan(500);
    for (let i = 10; i < 20; i += 1) expect(changedPixels(source[i]!, out[i]!)).toEqual([]);
  });

  it('active speaker: of two faces, drives the one whose mouth moves with the audio', async () => {
    const two = await twoFaceClip(dir, 40);
    const info = await probe(two);
    const outputPath = path.join(dir, 'two-out.mp4');
    const outcome = await lipsyncFile(
      request({
        outputPath,
        videoPath: two,
        videoInfo: info,
        activeSpeaker: true,
      }),
      deps,
    );
    expect(outcome.faces).toMatchObject({ tracks: 2, method: 'active-speaker' });
    expect(outcome.faces.driven).toHaveLength(1);
    const source = await sourceFrames(two, info);
    const out = await outputFrames(outputPath, TWO_FACES.width, TWO_FACES.height);
    let left = 0;
    let right = 0;
    out.forEach((frame, i) => {
      for (const p of changedPixels(source[i]!, frame)) {
        if (p.x < TWO_FACES.split) left += 1;
        else right += 1;
      }
    });
    expect(right).toBeGreaterThan(1000);
    expect(left).toBe(0);
  });

  it('cancelled while lip-syncing: rejects with the reason at once, no process and no file left', async () => {
    const controller = new AbortController();
    const reason = new Error('cancelled by the test');
    const outputPath = path.join(dir, 'cancelled.mp4');
    const before = (await readdir(dir)).sort();
    const run = lipsyncFile(
      request({
        outputPath,
        syncMode: 'loop',
        signal: controller.signal,
        progressIntervalMs: 0,
        onProgress: (p: LipsyncProgress) => {
          if (p.stage === 'lip-syncing' && p.done >= 3) controller.abort(reason);
        },
      }),
      deps,
    );
    await expect(run).rejects.toBe(reason);
    expect(await childProcesses()).toEqual([]);
    expect((await readdir(dir)).sort()).toEqual(before);
  });
});
