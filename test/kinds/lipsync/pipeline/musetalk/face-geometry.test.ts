/**
 * MuseTalk's face geometry from BlazeFace boxes (face-geometry.ts), its Lanczos-4 crop and VAE
 * tensors (crop.ts) and its feathered blend (blend.ts): OpenCV's own outputs for the resize and the
 * blur (scripts/musetalk-geometry-reference.py wrote them), and the rules the reference's geometry
 * follows, checked on constructed faces.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import {
  blendMuseTalkFace,
  cropMuseTalkFace,
  gaussianBlur,
  gaussianKernel,
  lanczos4Weights,
  museTalkBlendBox,
  museTalkBlendMask,
  museTalkBlendRegion,
  museTalkBlurSize,
  museTalkDecodedImage,
  museTalkFaceBox,
  museTalkImageTensor,
  type PixelBox,
} from '../../../../../src/kinds/lipsync/pipeline/musetalk/index.js';
import type { FaceBox, RgbFrame } from '../../../../../src/kinds/lipsync/pipeline/index.js';

const FIXTURES = fileURLToPath(new URL('../fixtures/', import.meta.url));
const ROOT = fileURLToPath(new URL('../../../../../', import.meta.url));

interface GeometryReference {
  cases: {
    lanczos: Record<string, { file: string; box: [number, number, number, number]; size: number }>;
    blur: Record<string, { file: string; side: number; kernel: number }>;
  };
}
const reference = JSON.parse(
  readFileSync(path.join(FIXTURES, 'musetalk-geometry-reference.json'), 'utf8'),
) as GeometryReference;

/** An upright face with eye-to-mouth distance 100 px: eyes at y 300, nose tip 360, mouth 400. */
function uprightFace(cx = 500, scale = 1): FaceBox {
  const at = (x: number, y: number): readonly [number, number] => [cx + x * scale, 300 + (y - 300) * scale];
  return {
    x: cx - 100 * scale,
    y: 300 + (220 - 300) * scale,
    width: 200 * scale,
    height: 230 * scale,
    score: 0.9,
    keypoints: {
      leftEye: at(-48, 300),
      rightEye: at(48, 300),
      nose: at(0, 360),
      mouth: at(0, 400),
      leftEar: at(-100, 320),
      rightEar: at(100, 320),
    },
  };
}

describe('museTalkFaceBox', () => {
  it('spans cheek to cheek, is centred vertically on the nose bridge and adds the margin below the chin', () => {
    const box = museTalkFaceBox(uprightFace(), 1000, 1000)!;
    // chin = mouth + 0.68 d = 468; bridge = nose - 0.1 d = 350; top = 350 - 118 = 232; bottom = 468 + 10.
    expect(box).toEqual({ x1: 400, y1: 232, x2: 600, y2: 478 });
    expect(museTalkFaceBox(uprightFace(), 1000, 1000, { extraMargin: 0 })!.y2).toBe(468);
  });

  it('scales with the face and clips to the frame, or gives nothing off it', () => {
    const big = museTalkFaceBox(uprightFace(500, 2), 1000, 700)!;
    expect(big).toEqual({ x1: 300, y1: 164, x2: 700, y2: 646 });
    const clipped = museTalkFaceBox(uprightFace(50, 2), 1000, 600)!;
    expect(clipped.x1).toBe(0);
    expect(clipped.y2).toBe(600);
    expect(museTalkFaceBox(uprightFace(-400), 1000, 1000)).toBeUndefined();
  });

  it('refuses broken input with a clear message', () => {
    expect(() => museTalkFaceBox({ ...uprightFace(), x: Number.NaN }, 100, 100)).toThrow(/box.x to be a finite number/);
    expect(() => museTalkFaceBox(uprightFace(), 0, 100)).toThrow(/positive integer frame size/);
    expect(() => museTalkFaceBox(uprightFace(), 100, 100, { extraMargin: -1 })).toThrow(/extraMargin/);
  });
});

describe('museTalkBlendBox', () => {
  it.each<[PixelBox, PixelBox]>([
    // s = int(max(w, h) // 2 * 1.5) around ((x1 + x2) // 2, (y1 + y2) // 2)
    [
      { x1: 400, y1: 232, x2: 600, y2: 478 },
      { x1: 316, y1: 171, x2: 684, y2: 539 },
    ],
    [
      { x1: 0, y1: 0, x2: 101, y2: 51 },
      { x1: -25, y1: -50, x2: 125, y2: 100 },
    ],
  ])('of %o is %o', (box, want) => {
    expect(museTalkBlendBox(box)).toEqual(want);
  });
});

describe('OpenCV operations against OpenCV', () => {
  it.each(Object.entries(reference.cases.lanczos))(
    'cv2.resize INTER_LANCZOS4 (%s) within 1 level',
    async (_name, c) => {
      const { data, info } = await sharp(path.join(ROOT, 'test/fixtures/photos/astronaut.png'))
        .removeAlpha()
        .raw()
        .toBuffer({ resolveWithObject: true });
      const frame: RgbFrame = { data: new Uint8Array(data), width: info.width, height: info.height };
      const [x1, y1, x2, y2] = c.box;
      const ours = cropMuseTalkFace(frame, { x1, y1, x2, y2 }, c.size);
      const want = readFileSync(path.join(FIXTURES, c.file));
      expect(ours.length).toBe(want.length);
      let max = 0;
      for (let i = 0; i < ours.length; i++) max = Math.max(max, Math.abs(ours[i]! - want[i]!));
      expect(max).toBeLessThanOrEqual(1);
    },
  );

  // OpenCV blurs 8-bit images in fixed point (its bit-exact kernels), so its levels stray from the
  // exact value by a little more than rounding would: within 1.5 levels, 0.1 on average.
  it.each(Object.entries(reference.cases.blur))('cv2.GaussianBlur of the mask (%s) within 1.5 levels', (_name, c) => {
    const { side } = c;
    expect(museTalkBlurSize(side)).toBe(c.kernel);
    // blur_region() of the script.
    const region = new Float32Array(side * side);
    for (let y = 0; y < side; y++) {
      for (let x = 0; x < side; x++) {
        let inside =
          y >= Math.floor(side / 2) &&
          x >= Math.floor(side / 5) &&
          x < side - Math.floor(side / 5) &&
          y < side - Math.floor(side / 10);
        inside &&= (x - side / 2) ** 2 + (y - side * 0.6) ** 2 > (side * 0.08) ** 2;
        region[y * side + x] = inside ? 255 : 0;
      }
    }
    const ours = gaussianBlur(region, side, c.kernel);
    const want = readFileSync(path.join(FIXTURES, c.file));
    let max = 0;
    let sum = 0;
    for (let i = 0; i < ours.length; i++) {
      const diff = Math.abs(ours[i]! - want[i]!);
      max = Math.max(max, diff);
      sum += diff;
    }
    expect(max).toBeLessThanOrEqual(1.5);
    expect(sum / ours.length).toBeLessThan(0.1);
  });

  it('has the Lanczos weights sum to one and interpolate exactly at whole pixels', () => {
    expect(Array.from(lanczos4Weights(0))).toEqual([0, 0, 0, 1, 0, 0, 0, 0]);
    const w = lanczos4Weights(0.37);
    expect(w.reduce((a, b) => a + b, 0)).toBeCloseTo(1, 12);
    expect(w[3]! > w[4]! && w[4]! > 0).toBe(true);
    expect(Array.from(gaussianKernel(3))).toEqual([0.25, 0.5, 0.25]);
    expect(() => gaussianKernel(4)).toThrow(/odd positive kernel size/);
  });
});

describe('VAE tensors', () => {
  it('maps the crop to [-1, 1] CHW, blacks the lower half out when masked, and decodes back', () => {
    const size = 4;
    const rgb = Uint8Array.from({ length: size * size * 3 }, (_, i) => (i * 17) % 256);
    const out = new Float32Array(2 * 3 * size * size);
    museTalkImageTensor(rgb, size, true, out, 0);
    museTalkImageTensor(rgb, size, false, out, 3 * size * size);
    expect(out[0]).toBeCloseTo(rgb[0]! / 127.5 - 1, 6);
    expect(out[size * size + 1]).toBeCloseTo(rgb[4]! / 127.5 - 1, 6); // green of pixel 1
    for (let c = 0; c < 3; c++) {
      for (let p = 0; p < size * size; p++) {
        const masked = out[c * size * size + p]!;
        if (p >= 2 * size) expect(masked).toBe(-1);
        else expect(masked).toBeCloseTo(rgb[3 * p + c]! / 127.5 - 1, 6);
      }
    }
    const back = museTalkDecodedImage(out, size, 3 * size * size);
    expect(Array.from(back)).toEqual(Array.from(rgb));
    expect(Array.from(museTalkDecodedImage(Float32Array.of(-3, 3, 0), 1))).toEqual([0, 255, 128]);
    expect(() => museTalkImageTensor(rgb, size, true, new Float32Array(10))).toThrow(/room for 48 values/);
  });
});

describe('the blend mask', () => {
  const face = uprightFace();
  const box = museTalkFaceBox(face, 1000, 1000)!;
  const mask = museTalkBlendMask(face, box);
  const side = mask.square.x2 - mask.square.x1;
  const alphaAt = (x: number, y: number): number => mask.alpha[(y - mask.square.y1) * side + (x - mask.square.x1)]!;

  it('keeps the upper face, the nose and everything outside the box; replaces the mouth and chin', () => {
    const middle = mask.square.y1 + Math.trunc(side / 2);
    const blur = museTalkBlurSize(side);
    // Nothing above the middle row less the blur's reach: the eyes stay the source's.
    for (let y = mask.square.y1; y < middle - blur; y++)
      for (let x = mask.square.x1; x < mask.square.x2; x++) expect(alphaAt(x, y)).toBe(0);
    expect(alphaAt(452, 300)).toBe(0);
    expect(alphaAt(500, 362)).toBeLessThan(0.5); // the nose tip
    expect(alphaAt(500, 400)).toBeCloseTo(1, 3); // the mouth
    expect(alphaAt(470, 410)).toBeCloseTo(1, 3);
    expect(alphaAt(500, 455)).toBeGreaterThan(0.9); // the chin
    expect(alphaAt(box.x1 - blur, 420)).toBe(0); // outside the box
    expect(alphaAt(500, box.y2 + blur)).toBe(0);
  });

  it('is feathered: alpha passes through intermediate values across its edges', () => {
    const row = 420;
    const across = Array.from({ length: box.x2 - box.x1 + 20 }, (_, i) => alphaAt(box.x1 - 10 + i, row));
    expect(across.some((a) => a > 0.05 && a < 0.95)).toBe(true);
    // Monotone from outside to the middle on this row.
    const half = across.slice(0, Math.floor(across.length / 2));
    for (let i = 1; i < half.length; i++) expect(half[i]!).toBeGreaterThanOrEqual(half[i - 1]! - 1e-6);
    const region = museTalkBlendRegion(face, box).region;
    expect(region.some((v) => v === 1)).toBe(true);
  });

  it('blends a generated face only where the mask is above 0, and leaves every other pixel alone', () => {
    const width = 1000;
    const height = 700;
    const frame: RgbFrame = { data: new Uint8Array(width * height * 3).fill(100), width, height };
    const before = frame.data.slice();
    const generated = new Uint8Array(256 * 256 * 3).fill(200);
    const blended = blendMuseTalkFace(frame, generated, 256, mask);
    expect(blended).toBeGreaterThan(1000);
    let changed = 0;
    let wrong = 0;
    let worst = 0;
    for (let y = 0; y < height; y++) {
      for (let x = 0; x < width; x++) {
        const o = 3 * (y * width + x);
        // Outside the face box the reference's paste mixes the frame with itself: no change.
        const inBox = x >= box.x1 && x < box.x2 && y >= box.y1 && y < box.y2;
        const a = inBox ? alphaAt(x, y) : 0;
        if (a <= 0) {
          if (frame.data[o] !== before[o]) wrong++;
        } else {
          worst = Math.max(worst, Math.abs(frame.data[o]! - (100 + a * 100)));
          changed++;
        }
      }
    }
    expect(wrong).toBe(0);
    expect(worst).toBeLessThanOrEqual(0.5 + 1e-9);
    expect(changed).toBe(blended);
    expect(frame.data[3 * (400 * width + 500)]).toBe(200);
    expect(frame.data[3 * (300 * width + 452)]).toBe(100);
    expect(() => blendMuseTalkFace(frame, generated.subarray(3), 256, mask)).toThrow(/256 x 256 x 3 bytes/);
  });
});
