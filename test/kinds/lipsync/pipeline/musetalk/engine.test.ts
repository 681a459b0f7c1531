/**
 * MuseTalk in process (src/kinds/lipsync/pipeline/musetalk/engine.ts) with the musetalk-test graphs, loaded
 * through the same path as real weights (manifest, sha256, session cache, contract check), on the
 * bundled face frames (the astronaut photo, drifting) with faces found by BlazeFace and the real
 * speech clip: only the lower face changes, the mouth darkens while she speaks and not in silence,
 * batches of any size give the same pixels, and a cancelled render stops.
 */
import { mkdtempSync, rmSync, cpSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SessionCache } from '../../../../../src/inference/index.js';
import { loadBlazeFace, type FaceBox, type RgbFrame } from '../../../../../src/kinds/lipsync/pipeline/index.js';
import {
  loadMuseTalk,
  MUSETALK_TEST_MODEL,
  museTalkBlendBox,
  museTalkFaceBox,
  museTalkManifestPath,
  type MuseTalkEngine,
  type MuseTalkAudio,
} from '../../../../../src/kinds/lipsync/pipeline/musetalk/index.js';
import { faceFrames, FPS, SPEECH } from '../pipeline-fixtures.js';
import { readWav16 } from '../pipeline-fixtures.js';

const MODELS = fileURLToPath(new URL('../../../../../models/', import.meta.url));
const FRAMES = 40;
const SIDE = 256;
const fps = { num: FPS, den: 1 };

let dir: string;
let sessions: SessionCache;
let engine: MuseTalkEngine;
let frames: RgbFrame[];
let faces: FaceBox[];
let speech: MuseTalkAudio;
let silence: MuseTalkAudio;

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'musetalk-engine-'));
  // A models folder of its own: the graphs are generated into it on first use, as on a new host.
  mkdirSync(path.join(dir, 'musetalk'));
  cpSync(museTalkManifestPath(MODELS, MUSETALK_TEST_MODEL), museTalkManifestPath(dir, MUSETALK_TEST_MODEL));
  sessions = new SessionCache({ thread: false, threads: 1 });
  engine = await loadMuseTalk(MUSETALK_TEST_MODEL, { sessions, modelsDir: dir, batch: 8 });
  frames = (await faceFrames(FRAMES, { side: SIDE })).map((raw) => ({
    data: new Uint8Array(raw),
    width: SIDE,
    height: SIDE,
  }));
  const detector = await loadBlazeFace('blazeface-back-256', { sessions, minScore: 0.5 });
  faces = [];
  for (const frame of frames) {
    const found = await detector.detect(frame);
    expect(found.length).toBeGreaterThan(0);
    faces.push(found[0]!);
  }
  const samples = readWav16(SPEECH);
  speech = await engine.audio(samples);
  silence = await engine.audio(new Float32Array(samples.length));
}, 120_000);

afterAll(async () => {
  await sessions.release();
  rmSync(dir, { recursive: true, force: true });
});

function copies(): RgbFrame[] {
  return frames.map((f) => ({ ...f, data: f.data.slice() }));
}

function lumaMean(frame: RgbFrame, x0: number, y0: number, x1: number, y1: number): number {
  let sum = 0;
  for (let y = y0; y < y1; y++)
    for (let x = x0; x < x1; x++) for (let c = 0; c < 3; c++) sum += frame.data[3 * (y * frame.width + x) + c]!;
  return sum / (3 * (x1 - x0) * (y1 - y0));
}

describe('MuseTalkEngine with musetalk-test', () => {
  it('reads 50 encoder positions a second of the clip', () => {
    expect(speech.states.positions).toBe(1500);
    expect(speech.active).toBe(Math.floor((readWav16(SPEECH).length * 50) / 16000));
  });

  it('changes only the lower face, darkens the mouth with speech and not in silence', async () => {
    const talking = copies();
    const quiet = copies();
    const stats = await engine.render(
      talking.map((frame, i) => ({ frame, face: faces[i]!, audioFrame: i })),
      speech,
      fps,
    );
    await engine.render(
      quiet.map((frame, i) => ({ frame, face: faces[i]!, audioFrame: i })),
      silence,
      fps,
    );
    expect(stats).toEqual({ rendered: FRAMES, skipped: 0, unetCalls: Math.ceil(FRAMES / 8) });
    let darker = 0;
    for (let i = 0; i < FRAMES; i++) {
      const box = museTalkFaceBox(faces[i]!, SIDE, SIDE)!;
      const square = museTalkBlendBox(box);
      const middle = square.y1 + Math.trunc((square.y2 - square.y1) / 2);
      // Untouched: everything outside the face box, and the face box above the blend square's middle less the blur.
      const src = frames[i]!.data;
      for (let y = 0; y < SIDE; y++) {
        for (let x = 0; x < SIDE; x++) {
          const inside = x >= box.x1 && x < box.x2 && y >= Math.max(box.y1, middle - 8) && y < box.y2;
          if (inside) continue;
          const o = 3 * (y * SIDE + x);
          if (talking[i]!.data[o] !== src[o] || talking[i]!.data[o + 1] !== src[o + 1])
            throw new Error(`frame ${i} changed at ${x},${y} outside the lower face`);
        }
      }
      const [mx, my] = faces[i]!.keypoints.mouth;
      const r = [Math.round(mx - 8), Math.round(my - 3), Math.round(mx + 8), Math.round(my + 5)] as const;
      if (lumaMean(quiet[i]!, ...r) - lumaMean(talking[i]!, ...r) > 15) darker++;
    }
    // The clip speaks for most of its 2.8 s: most of the first 40 frames (1.6 s) have a darker mouth.
    expect(darker).toBeGreaterThan(FRAMES / 2);
  }, 120_000);

  it('gives the same pixels whatever the batch', async () => {
    const one = copies().slice(0, 5);
    const many = copies().slice(0, 5);
    const small = await loadMuseTalk(MUSETALK_TEST_MODEL, { sessions, modelsDir: dir, batch: 2 });
    await small.render(
      one.map((frame, i) => ({ frame, face: faces[i]!, audioFrame: i + 20 })),
      speech,
      fps,
    );
    await engine.render(
      many.map((frame, i) => ({ frame, face: faces[i]!, audioFrame: i + 20 })),
      speech,
      fps,
    );
    for (let i = 0; i < 5; i++) {
      let max = 0;
      for (let j = 0; j < one[i]!.data.length; j++) max = Math.max(max, Math.abs(one[i]!.data[j]! - many[i]!.data[j]!));
      expect(max).toBeLessThanOrEqual(1);
    }
  }, 60_000);

  it('passes a face off the frame through, and stops when cancelled', async () => {
    const off = { ...faces[0]!, x: -5000, keypoints: { ...faces[0]!.keypoints } };
    const frame = copies()[0]!;
    const before = frame.data.slice();
    expect(await engine.render([{ frame, face: off, audioFrame: 0 }], speech, fps)).toEqual({
      rendered: 0,
      skipped: 1,
      unetCalls: 0,
    });
    expect(frame.data).toEqual(before);
    const controller = new AbortController();
    controller.abort(new Error('cancelled by the test'));
    await expect(
      engine.render([{ frame, face: faces[0]!, audioFrame: 0 }], speech, fps, controller.signal),
    ).rejects.toThrow(/cancelled by the test/);
    expect(frame.data).toEqual(before);
  });
});
