/**
 * The crop framed as Wav2Lip's crops were (docs/lipsync.md, "Crop framing"): the geometry against
 * the derivation's numbers on synthetic keypoints, the paste-back mask against the generated half,
 * and on a real still portrait, the generated test model's darkening centred on the mouth.
 */
import ort from 'onnxruntime-node';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SessionCache } from '../../../../../src/inference/index.js';
import {
  loadBlazeFace,
  BOX_PER_EYE_MOUTH,
  cropForFace,
  EYES_PER_EYE_MOUTH,
  eyeMouthDistance,
  frameToCrop,
  WAV2LIP_FRAMING,
  type FaceCrop,
  DEFAULT_MOUTH_MASK,
  maskAlpha,
  type FaceBox,
  type RgbFrame,
  OnnxLipsyncModel,
  TEST_MOUTH,
} from '../../../../../src/kinds/lipsync/pipeline/index.js';
import { testModelManifest } from '../../../../../scripts/make-test-lipsync-model.js';
import { lipsyncOneFace, measureFraming } from '../../../../../scripts/lipsync-framing.js';
import { ASTRONAUT, toFrame } from '../faces-helpers.js';

/** Face proportions the derivation uses, in eye-to-mouth distances below the eye line (adults, Farkas). */
const CHIN_BELOW_EYES = 1.68;
const NOSE_TIP_BELOW_EYES = 0.6;

/**
 * An upright face drawn from proportions: eyes `d` apart-ish (0.95 d), the mouth d below the eyes'
 * midpoint, BlazeFace's box 2.3 d tall; turned by `roll` radians about the eyes' midpoint (ex, ey).
 */
function face(
  ex: number,
  ey: number,
  d: number,
  roll = 0,
  overrides: { mouthBelow?: number; eyeSpacing?: number; boxHeight?: number } = {},
): FaceBox {
  const cos = Math.cos(roll);
  const sin = Math.sin(roll);
  // Face axes in the frame: right (cos, sin), down (-sin, cos).
  const at = (across: number, down: number): [number, number] => [
    ex + cos * across - sin * down,
    ey + sin * across + cos * down,
  ];
  const half = ((overrides.eyeSpacing ?? EYES_PER_EYE_MOUTH) * d) / 2;
  const height = overrides.boxHeight ?? BOX_PER_EYE_MOUTH * d;
  return {
    x: ex - height / 2,
    y: ey - 0.4 * height,
    width: height,
    height,
    score: 0.9,
    keypoints: {
      leftEye: at(-half, 0),
      rightEye: at(half, 0),
      nose: at(0, NOSE_TIP_BELOW_EYES * d),
      mouth: at(0, (overrides.mouthBelow ?? 1) * d),
      leftEar: at(-2 * half, 0.2 * d),
      rightEar: at(2 * half, 0.2 * d),
    },
  };
}

/** Crop-fraction height of a point `below` eye-to-mouth distances under the eyes, on the face's axis. */
function heightInCrop(crop: FaceCrop, f: FaceBox, below: number, d: number): number {
  const [lx, ly] = f.keypoints.leftEye;
  const [rx, ry] = f.keypoints.rightEye;
  const roll = Math.atan2(ry - ly, rx - lx);
  const ex = (lx + rx) / 2;
  const ey = (ly + ry) / 2;
  return frameToCrop(crop, ex - Math.sin(roll) * below * d, ey + Math.cos(roll) * below * d)[1];
}

describe('the Wav2Lip framing', () => {
  it("is the test model's yardstick: the mouth at the ellipse's centre, 70/96 down and centred across", () => {
    expect(WAV2LIP_FRAMING.mouthX * 96).toBe(TEST_MOUTH.cx);
    expect(WAV2LIP_FRAMING.mouthY * 96).toBeCloseTo(TEST_MOUTH.cy, 12);
  });

  it('gives the derivation numbers: eyes at ~0.365, the masked half from the upper nose, the chin inside', () => {
    const { mouthY, heightPerEyeMouth, aspect } = WAV2LIP_FRAMING;
    const eyes = mouthY - 1 / heightPerEyeMouth;
    expect(eyes).toBeCloseTo(0.365, 2);
    // The masked half starts between the eyes and the nose tip: 0.37 d below the eyes.
    expect((0.5 - eyes) * heightPerEyeMouth).toBeCloseTo(0.37, 2);
    expect(eyes + NOSE_TIP_BELOW_EYES / heightPerEyeMouth).toBeGreaterThan(0.5);
    // The chin, 0.68 d below the mouth, lies inside with a small margin, as Wav2Lip's --pads intend.
    const chin = eyes + CHIN_BELOW_EYES / heightPerEyeMouth;
    expect(chin).toBeGreaterThan(0.95);
    expect(chin).toBeLessThan(1);
    // Cheek to cheek (~2.05 eye-to-mouth distances) across: 0.75 as wide as tall.
    expect(aspect * heightPerEyeMouth).toBeCloseTo(2.05, 1);
    // So the test ellipse, 40/96 of the crop wide, is a mouth's width (~0.8 eye-to-mouth, 50-55 mm).
    const ellipseWidth = ((2 * TEST_MOUTH.rx) / 96) * aspect * heightPerEyeMouth;
    expect(ellipseWidth).toBeGreaterThan(0.7);
    expect(ellipseWidth).toBeLessThan(1);
  });

  // [eyes' midpoint, eye-to-mouth distance, roll (degrees), align]
  const cases: [number, number, number, number, boolean][] = [
    [200, 150, 60, 0, false],
    [200, 150, 60, 0, true],
    [40.5, 300.25, 23, 0, false],
    [640, 360, 180, 0, true],
    [300, 200, 70, 20, true],
    [300, 200, 70, -35, true],
    [300, 200, 70, 20, false],
    [300, 200, 70, 90, true],
  ];
  it.each(cases)(
    'puts the mouth at (0.5, 0.729) and frames eyes and chin for eyes at (%d, %d), d %d, roll %d, align %s',
    (ex, ey, d, rollDeg, align) => {
      const roll = (rollDeg * Math.PI) / 180;
      const f = face(ex, ey, d, roll);
      const crop = cropForFace(f, { align });
      expect(crop.height).toBeCloseTo(WAV2LIP_FRAMING.heightPerEyeMouth * d, 9);
      expect(crop.width).toBeCloseTo(WAV2LIP_FRAMING.aspect * crop.height, 9);
      expect(crop.angle).toBeCloseTo(align ? roll : 0, 12);
      const [u, v] = frameToCrop(crop, ...f.keypoints.mouth);
      expect(u).toBeCloseTo(WAV2LIP_FRAMING.mouthX, 9);
      expect(v).toBeCloseTo(WAV2LIP_FRAMING.mouthY, 9);
      if (align || rollDeg === 0) {
        // Upright in the crop: eyes level at 0.365, the nose tip below the masked half's edge, the chin inside.
        const [lu, lv] = frameToCrop(crop, ...f.keypoints.leftEye);
        const [ru, rv] = frameToCrop(crop, ...f.keypoints.rightEye);
        expect(lv).toBeCloseTo(0.365, 2);
        expect(rv).toBeCloseTo(lv, 9);
        expect((lu + ru) / 2).toBeCloseTo(0.5, 9);
        expect(frameToCrop(crop, ...f.keypoints.nose)[1]).toBeCloseTo(0.584, 2);
        expect(heightInCrop(crop, f, CHIN_BELOW_EYES, d)).toBeCloseTo(0.976, 2);
      }
    },
  );

  // [what is off, overrides, expected eye-to-mouth distance used]
  const scales: [string, Parameters<typeof face>[4], number][] = [
    ['nothing', {}, 60],
    ['the mouth keypoint (a face looking down: 0.7 d)', { mouthBelow: 0.7 }, 60],
    ['the eye spacing (a turned head: 0.5 d)', { eyeSpacing: 0.5 }, 60],
    ['the box (a detector box 3 d tall)', { boxHeight: 180 }, 60],
    [
      'two of three (mouth 0.8 d, box 2.3 x 0.9 d): the median follows them',
      { mouthBelow: 0.8, boxHeight: BOX_PER_EYE_MOUTH * 54 },
      54,
    ],
  ];
  it.each(scales)(
    'sizes the crop from the median of three scale estimates when %s is off',
    (_, overrides, expected) => {
      const f = face(200, 150, 60, 0, overrides);
      expect(eyeMouthDistance(f)).toBeCloseTo(expected, 9);
      expect(cropForFace(f).height).toBeCloseTo(WAV2LIP_FRAMING.heightPerEyeMouth * expected, 9);
      // Whatever the size, the mouth keypoint stays where the framing puts it.
      expect(frameToCrop(cropForFace(f), ...f.keypoints.mouth)[1]).toBeCloseTo(WAV2LIP_FRAMING.mouthY, 9);
    },
  );

  it('refuses framings and faces it cannot place', () => {
    const f = face(200, 150, 60);
    expect(() => cropForFace(f, { framing: { ...WAV2LIP_FRAMING, mouthY: 1.2 } })).toThrow(
      'Expected framing.mouthY to be between 0 and 1 but received 1.2',
    );
    expect(() => cropForFace(f, { framing: { ...WAV2LIP_FRAMING, heightPerEyeMouth: 0 } })).toThrow(
      'Expected framing.heightPerEyeMouth to be a positive number but received 0',
    );
    expect(() => cropForFace(f, { framing: { ...WAV2LIP_FRAMING, aspect: -1 } })).toThrow(
      'Expected framing.aspect to be a positive number but received -1',
    );
    const broken = { ...f, keypoints: { ...f.keypoints, mouth: [Number.NaN, 3] as const } };
    expect(() => cropForFace(broken)).toThrow('Expected a keypoint to be a finite number but received NaN');
    const dot = face(200, 150, 0);
    expect(() => cropForFace(dot)).toThrow(
      'Expected a face with a positive size but its keypoints and box give a crop height of 0',
    );
  });
});

describe('the paste-back mask on a Wav2Lip-framed crop', () => {
  it('covers the generated half only: nothing from the eyes down to the half line, the test ellipse opaque', () => {
    expect(DEFAULT_MOUTH_MASK.top).toBe(0.5);
    for (let u = 0; u <= 1; u += 0.01) {
      for (let v = 0; v < 0.5; v += 0.01) expect(maskAlpha(u, v)).toBe(0);
    }
    // Every pixel of the test model's ellipse, where its shade is above zero, is pasted (all but whole).
    for (let y = 0; y < 96; y += 1) {
      for (let x = 0; x < 96; x += 1) {
        const dx = (x + 0.5 - TEST_MOUTH.cx) / TEST_MOUTH.rx;
        const dy = (y + 0.5 - TEST_MOUTH.cy) / TEST_MOUTH.ry;
        if (dx * dx + dy * dy < 1) expect(maskAlpha((x + 0.5) / 96, (y + 0.5) / 96)).toBeGreaterThan(0.999);
      }
    }
  });

  it('leaves the eyes and the jaw contour to the source', () => {
    const f = face(300, 200, 70, 0);
    const crop = cropForFace(f);
    for (const eye of [f.keypoints.leftEye, f.keypoints.rightEye])
      expect(maskAlpha(...frameToCrop(crop, ...eye))).toBe(0);
    // Outside 0.15-0.85 across (beyond ~0.72 d of the face's middle line: the jaw's contour, ~1.5 d wide).
    for (const v of [0.6, 0.75, 0.9]) {
      expect(maskAlpha(0.14, v)).toBe(0);
      expect(maskAlpha(0.86, v)).toBe(0);
    }
  });
});

describe('on a real still portrait', () => {
  const sessions = new SessionCache({ thread: false });
  let frame: RgbFrame;
  let box: FaceBox;
  let model: OnnxLipsyncModel;
  beforeAll(async () => {
    // A 384x448 portrait of the astronaut, her face in the upper half as in a head-and-shoulders shot.
    frame = await toFrame(sharp(ASTRONAUT).extract({ left: 64, top: 0, width: 384, height: 448 }));
    const detector = await loadBlazeFace('blazeface-back-256', { sessions });
    const faces = await detector.detect(frame);
    expect(faces).toHaveLength(1);
    box = faces[0] as FaceBox;
    const { manifest, bytes } = testModelManifest();
    model = new OnnxLipsyncModel(manifest, await ort.InferenceSession.create(bytes), 1);
  });
  afterAll(() => sessions.release());

  // Tolerance: 2 % of the face height (the box's), 2.6 px here; the goal is 5 %.
  it.each([false, true])("centres the test model's darkening on the mouth keypoint (align %s)", async (align) => {
    const m = await measureFraming(frame, box, model, { align });
    expect(m.mouthInCrop[1]).toBeCloseTo(WAV2LIP_FRAMING.mouthY, 6);
    expect(Number.isFinite(m.darkening[0])).toBe(true);
    expect(m.offsetPerFaceHeight).toBeLessThan(0.02);
    // Eyes and nose land where the derivation expects them on a real face, within a few hundredths.
    expect(m.eyesInCrop).toBeGreaterThan(0.33);
    expect(m.eyesInCrop).toBeLessThan(0.4);
    expect(m.noseInCrop).toBeGreaterThan(0.5);
    expect(m.noseInCrop).toBeLessThan(0.65);
  });

  it('pastes nothing above the half line, which lies between the eyes and the nose tip', async () => {
    const crop = cropForFace(box);
    const loud = await lipsyncOneFace(frame, crop, model, 4);
    const eyeRow = Math.max(box.keypoints.leftEye[1], box.keypoints.rightEye[1]);
    const halfLine = crop.cy; // the crop's 0.5 line, axis-aligned
    let changedAbove = 0;
    let changedBelow = 0;
    for (let y = 0; y < frame.height; y += 1) {
      for (let x = 0; x < frame.width; x += 1) {
        const o = 3 * (y * frame.width + x);
        const changed =
          loud[o] !== frame.data[o] || loud[o + 1] !== frame.data[o + 1] || loud[o + 2] !== frame.data[o + 2];
        if (!changed) continue;
        if (y + 0.5 <= halfLine) changedAbove += 1;
        else changedBelow += 1;
      }
    }
    expect(halfLine).toBeGreaterThan(eyeRow + 0.2 * (box.keypoints.mouth[1] - eyeRow));
    expect(halfLine).toBeLessThan(box.keypoints.nose[1]);
    expect(changedAbove).toBe(0);
    expect(changedBelow).toBeGreaterThan(1000);
  });
});
