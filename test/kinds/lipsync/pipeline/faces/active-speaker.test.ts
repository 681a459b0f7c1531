import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SessionCache } from '../../../../../src/inference/index.js';
import { resolveFfmpeg, runProcess } from '../../../../../src/media/index.js';
import {
  audioEnvelope,
  captureFacePatch,
  laggedPearson,
  PATCH_SIZE,
  loadBlazeFace,
  chooseDrivenFaces,
  detectFaceTracks,
  type FaceTrackingResult,
  type FaceBox,
  type FaceTrack,
} from '../../../../../src/kinds/lipsync/pipeline/index.js';
import { ASTRONAUT, decodeAudio, decodeFrames, saveWithBoxes } from '../faces-helpers.js';
import { FPS, speechLike, syllables } from '../pipeline-fixtures.js';

const FRAMES = 100;
const RATE = 16_000;
const WIDTH = 420;
const HEIGHT = 240;

// The astronaut's mouth is at about (224, 149) in the photo; each copy is cut from (140, 40).
const TILE = { left: 140, top: 40, width: 180, height: 200 };
const FACES = {
  // The left copy is larger, so it is the more prominent face.
  left: { scale: 1.15, x: 0, y: 5 },
  right: { scale: 1, x: 232, y: 20 },
};

function mouthAt(which: keyof typeof FACES): { x: number; y: number; scale: number } {
  const f = FACES[which];
  return { x: f.x + (224 - TILE.left) * f.scale, y: f.y + (151 - TILE.top) * f.scale, scale: f.scale };
}

describe('active speaker on a two-face clip made with ffmpeg', () => {
  const sessions = new SessionCache({ thread: false });
  const leftOpening = syllables(7, FRAMES);
  const rightOpening = syllables(1234, FRAMES);
  let dir: string;
  let result: FaceTrackingResult;
  let envelopeOfRight: Float64Array;
  let envelopeOfLeft: Float64Array;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'active-speaker-'));
    const tiles = await Promise.all(
      (['left', 'right'] as const).map((which) =>
        sharp(ASTRONAUT)
          .extract(TILE)
          .resize(Math.round(TILE.width * FACES[which].scale), Math.round(TILE.height * FACES[which].scale))
          .removeAlpha()
          .png()
          .toBuffer(),
      ),
    );
    const background = await sharp({ create: { width: WIDTH, height: HEIGHT, channels: 3, background: '#203040' } })
      .composite([
        { input: tiles[0] as Buffer, left: FACES.left.x, top: FACES.left.y },
        { input: tiles[1] as Buffer, left: FACES.right.x, top: FACES.right.y },
      ])
      .png()
      .toBuffer();
    // Both mouths move, each with its own syllables: a dark opening that grows with loudness.
    const frames: Buffer[] = [];
    for (let f = 0; f < FRAMES; f += 1) {
      const ellipses = (['left', 'right'] as const)
        .map((which) => {
          const m = mouthAt(which);
          const open = (which === 'left' ? leftOpening : rightOpening)[f] ?? 0;
          return `<ellipse cx="${m.x}" cy="${m.y}" rx="${16 * m.scale}" ry="${(1 + 9 * open) * m.scale}" fill="#1a0505"/>`;
        })
        .join('');
      const svg = `<svg width="${WIDTH}" height="${HEIGHT}" xmlns="http://www.w3.org/2000/svg">${ellipses}</svg>`;
      frames.push(
        await sharp(background)
          .composite([{ input: Buffer.from(svg) }])
          .removeAlpha()
          .raw()
          .toBuffer(),
      );
    }
    const rightAudio = speechLike(rightOpening);
    const audioFile = path.join(dir, 'right.f32');
    await writeFile(audioFile, Buffer.from(rightAudio.buffer));
    const clip = path.join(dir, 'two-faces.mp4');
    await runProcess(
      resolveFfmpeg(),
      [
        '-v',
        'error',
        '-f',
        'rawvideo',
        '-pix_fmt',
        'rgb24',
        '-s',
        `${WIDTH}x${HEIGHT}`,
        '-r',
        String(FPS),
        '-i',
        'pipe:0',
        '-f',
        'f32le',
        '-ar',
        String(RATE),
        '-ac',
        '1',
        '-i',
        audioFile,
        '-c:v',
        'libx264',
        '-preset',
        'veryfast',
        '-crf',
        '18',
        '-pix_fmt',
        'yuv420p',
        '-c:a',
        'aac',
        '-b:a',
        '96k',
        clip,
      ],
      { stdin: Buffer.concat(frames) },
    );

    // From here on only what a job has: the encoded clip.
    const decoded = await decodeFrames(clip);
    expect(decoded).toHaveLength(FRAMES);
    const detector = await loadBlazeFace('blazeface-back-256', { sessions, minScore: 0.5 });
    result = await detectFaceTracks(decoded, detector);
    await saveWithBoxes(decoded[30] as (typeof decoded)[number], result.detections[30] ?? [], 'two-face-clip-30');
    envelopeOfRight = audioEnvelope(await decodeAudio(clip), RATE, FPS, FRAMES);
    envelopeOfLeft = audioEnvelope(speechLike(leftOpening), RATE, FPS, FRAMES);
  });

  afterAll(async () => {
    await sessions.release();
    await rm(dir, { recursive: true, force: true });
  });

  const side = (track: FaceTrack | undefined): string => {
    const box = track?.boxes.find((b): b is FaceBox => b !== undefined);
    if (box === undefined) return 'none';
    return box.x + box.width / 2 < WIDTH / 2 ? 'left' : 'right';
  };

  it('tracks both faces through the whole clip', () => {
    expect(result.tracks).toHaveLength(2);
    for (const track of result.tracks) expect(track.boxes.every((b) => b !== undefined)).toBe(true);
    expect(result.tracks.map(side).sort()).toEqual(['left', 'right']);
  });

  it('drives the more prominent (left, larger) face when active_speaker is false', () => {
    const driven = chooseDrivenFaces(result, { activeSpeaker: false });
    expect(driven.tracks).toHaveLength(1);
    expect(side(driven.tracks[0])).toBe('left');
  });

  it('drives only the right face when the audio follows its mouth', () => {
    const driven = chooseDrivenFaces(result, { activeSpeaker: true, audioEnvelope: envelopeOfRight });
    expect(driven.method).toBe('active-speaker');
    expect(driven.tracks).toHaveLength(1);
    expect(side(driven.tracks[0])).toBe('right');
    const [best, other] = driven.ranking;
    expect(best?.speaker?.score).toBeGreaterThan(0.6);
    expect((best?.speaker?.score ?? 0) - (other?.speaker?.score ?? 0)).toBeGreaterThan(0.3);
    expect(Math.abs(best?.speaker?.lag ?? 99)).toBeLessThanOrEqual(1);
    // Every frame drives the right face's box, none the left's.
    expect(driven.boxes).toEqual(driven.tracks[0]?.boxes);
  });

  it('drives the left face instead when the audio envelope is swapped for the left mouth', () => {
    const driven = chooseDrivenFaces(result, { activeSpeaker: true, audioEnvelope: envelopeOfLeft });
    expect(side(driven.tracks[0])).toBe('left');
    expect(driven.ranking[0]?.speaker?.score).toBeGreaterThan(0.6);
  });

  it('needs an audio envelope to judge', () => {
    expect(() => chooseDrivenFaces(result, { activeSpeaker: true })).toThrow(
      'Expected an audio envelope for active speaker selection but received none',
    );
  });

  it('leaves no file behind but the ones it made', async () => {
    expect((await readdir(dir)).sort()).toEqual(['right.f32', 'two-faces.mp4']);
  });
});

describe('active speaker signals', () => {
  it('finds a correlation at its lag and refuses too few samples', () => {
    const a = [0, 1, 0, 2, 5, 1, 0, 3, 4, 0, 1, 2];
    const b = [9, 9, ...a.map((v) => 3 * v + 1)];
    expect(laggedPearson(a, b, 2, 8).r).toBeCloseTo(1, 12);
    expect(laggedPearson(a, b, 0, 8).r).toBeLessThan(0.5);
    expect(laggedPearson(a, b, 2, 13)).toEqual({ r: Number.NaN, samples: 12 });
    expect(laggedPearson([1, 1, 1, 1], [1, 2, 3, 4], 0, 2).r).toBeNaN();
  });

  it('measures RMS per video frame', () => {
    const samples = new Float32Array(16_000).map((_, i) =>
      i < 8000 ? 0.5 * Math.sin((2 * Math.PI * 400 * i) / 16_000) : 0,
    );
    const envelope = audioEnvelope(samples, 16_000, 4, 5);
    expect([...envelope].map((v) => Number(v.toFixed(3)))).toEqual([0.354, 0.354, 0, 0, 0]);
  });

  it('keeps a grey patch around a face, clamped at the frame edge', () => {
    const width = 64;
    const height = 48;
    const data = new Uint8Array(width * height * 3);
    for (let y = 0; y < height; y += 1)
      for (let x = 0; x < width; x += 1) data.fill(x < 32 ? 0 : 200, (y * width + x) * 3, (y * width + x) * 3 + 3);
    const face = { x: 20, y: 4, width: 24, height: 24, score: 1, keypoints: {} as FaceBox['keypoints'] };
    const patch = captureFacePatch({ data, width, height }, face);
    expect(patch.side).toBeCloseTo(24 * 1.6, 9);
    expect(patch.data).toHaveLength(PATCH_SIZE * PATCH_SIZE);
    // Left half dark, right half bright, as in the frame.
    expect(patch.data[10 * PATCH_SIZE + 5]).toBe(0);
    expect(patch.data[10 * PATCH_SIZE + PATCH_SIZE - 5]).toBe(200);
  });
});
