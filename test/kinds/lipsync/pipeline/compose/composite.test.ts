/**
 * Cutting face crops out of frames and pasting generated faces back: exact identity where the
 * geometry allows it, untouched pixels outside the mask, a seam without steps, rotated crops that go
 * back where they came from, and crops that hang over the frame edge.
 */
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  compositeFace,
  cropBounds,
  cropFace,
  cropToFrame,
  frameToCrop,
  type FaceCrop,
  DEFAULT_MOUTH_MASK,
  maskAlpha,
  maskImage,
  type RgbFrame,
} from '../../../../../src/kinds/lipsync/pipeline/index.js';

const ASTRONAUT = fileURLToPath(new URL('../../../../fixtures/photos/astronaut.png', import.meta.url));

async function loadRgb(path: string): Promise<RgbFrame> {
  const { data, info } = await sharp(path).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  return { data: new Uint8Array(data), width: info.width, height: info.height };
}

function solid(width: number, height: number, value: number): RgbFrame {
  return { data: new Uint8Array(width * height * 3).fill(value), width, height };
}

/** R = x, G = y, B = (x + y) / 2: a linear image that bilinear sampling reproduces exactly. */
function gradient(size: number): RgbFrame {
  const data = new Uint8Array(size * size * 3);
  for (let y = 0; y < size; y++) {
    for (let x = 0; x < size; x++) {
      const o = 3 * (y * size + x);
      data[o] = x;
      data[o + 1] = y;
      data[o + 2] = (x + y) >> 1;
    }
  }
  return { data, width: size, height: size };
}

function copy(frame: RgbFrame): RgbFrame {
  return { ...frame, data: frame.data.slice() };
}

function pixel(frame: RgbFrame, x: number, y: number): number[] {
  const o = 3 * (y * frame.width + x);
  return [frame.data[o]!, frame.data[o + 1]!, frame.data[o + 2]!];
}

describe('cropFace', () => {
  let photo: RgbFrame;
  beforeAll(async () => {
    photo = await loadRgb(ASTRONAUT);
  });

  it('copies the pixels exactly when the crop is axis-aligned, on the pixel grid and not resized', () => {
    const crop: FaceCrop = { cx: 150 + 32, cy: 100 + 32, width: 64, height: 64, angle: 0 };
    const out = cropFace(photo, crop, 64);
    for (let v = 0; v < 64; v++) {
      for (let u = 0; u < 64; u++) {
        const o = 3 * (v * 64 + u);
        expect([out[o], out[o + 1], out[o + 2]]).toEqual(pixel(photo, 150 + u, 100 + v));
      }
    }
  });

  it("turns with the crop's angle: at +90 degrees the crop's x axis runs down the frame", () => {
    const crop: FaceCrop = { cx: 200, cy: 180, width: 64, height: 64, angle: Math.PI / 2 };
    const out = cropFace(photo, crop, 64);
    for (let v = 0; v < 64; v += 7) {
      for (let u = 0; u < 64; u += 5) {
        const o = 3 * (v * 64 + u);
        // crop (u, v) sits at frame (cx - (v + 0.5 - 32), cy + (u + 0.5 - 32)): pixel (231 - v, 148 + u)
        expect([out[o], out[o + 1], out[o + 2]], `${u},${v}`).toEqual(pixel(photo, 231 - v, 148 + u));
      }
    }
  });

  it('repeats the edge pixels where the crop hangs over the frame edge', () => {
    const crop: FaceCrop = { cx: 10, cy: 300, width: 64, height: 64, angle: 0 }; // x from -22 to 42
    const out = cropFace(photo, crop, 64);
    for (let v = 0; v < 64; v++) {
      for (let u = 0; u < 22; u++) {
        const o = 3 * (v * 64 + u);
        expect([out[o], out[o + 1], out[o + 2]]).toEqual(pixel(photo, 0, 268 + v));
      }
      const o = 3 * (v * 64 + 40);
      expect([out[o], out[o + 1], out[o + 2]]).toEqual(pixel(photo, 18, 268 + v));
    }
  });

  it('refuses a frame whose buffer does not match its size, and a bad crop', () => {
    expect(() =>
      cropFace({ data: new Uint8Array(10), width: 4, height: 4 }, { cx: 2, cy: 2, width: 2, height: 2, angle: 0 }, 8),
    ).toThrow('Expected frame to hold 48 bytes (RGB 4x4) but received 10');
    expect(() => cropFace(solid(4, 4, 0), { cx: 2, cy: 2, width: 0, height: 0, angle: 0 }, 8)).toThrow(
      'Expected crop.width to be a positive number but received 0',
    );
  });
});

describe('crop geometry', () => {
  it('maps crop pixels to the frame and back', () => {
    const crop: FaceCrop = { cx: 123.4, cy: 77.7, width: 72, height: 96, angle: 0.35 };
    for (const [u, v] of [
      [0, 0],
      [47, 12],
      [95, 95],
    ] as const) {
      const [x, y] = cropToFrame(crop, 96, u, v);
      const [nu, nv] = frameToCrop(crop, x, y);
      expect(nu * 96 - 0.5).toBeCloseTo(u, 9);
      expect(nv * 96 - 0.5).toBeCloseTo(v, 9);
    }
  });

  it('bounds a rotated crop by its corners and clips the bounds to the frame', () => {
    const crop: FaceCrop = { cx: 50, cy: 50, width: 40, height: 40, angle: Math.PI / 4 };
    const reach = 20 * Math.SQRT2;
    expect(cropBounds(crop, 200, 200)).toEqual({
      x0: Math.floor(50 - reach),
      y0: Math.floor(50 - reach),
      x1: Math.ceil(50 + reach),
      y1: Math.ceil(50 + reach),
    });
    expect(cropBounds({ cx: -100, cy: 5, width: 10, height: 10, angle: 0 }, 200, 200)).toEqual({
      x0: 0,
      y0: 0,
      x1: 0,
      y1: 10,
    });
    // A rectangle a quarter turn round: its width runs down the frame.
    expect(cropBounds({ cx: 100, cy: 100, width: 30, height: 40, angle: Math.PI / 2 }, 200, 200)).toEqual({
      x0: 80,
      y0: 85,
      x1: 120,
      y1: 115,
    });
  });
});

describe('mask', () => {
  it('is zero on the upper half and along every edge of the crop, and opaque around the mouth', () => {
    const size = 96;
    const alpha = maskImage(size);
    for (let v = 0; v < size / 2; v++) for (let u = 0; u < size; u++) expect(alpha[v * size + u]).toBe(0);
    for (let i = 0; i < size; i++) {
      expect(alpha[i]).toBe(0);
      expect(alpha[(size - 1) * size + i]).toBe(0);
      expect(alpha[i * size]).toBe(0);
      expect(alpha[i * size + size - 1]).toBe(0);
    }
    expect(maskAlpha(0.5, 0.75)).toBe(1);
    expect(maskAlpha(0.3, 0.8)).toBe(1);
  });

  it('fades smoothly: alpha rises monotonically from the outline inwards', () => {
    let previous = -1;
    for (let v = 0.5; v <= 0.75; v += 0.005) {
      const a = maskAlpha(0.5, v);
      expect(a).toBeGreaterThanOrEqual(previous);
      previous = a;
    }
    expect(maskAlpha(0.5, 0.5 + DEFAULT_MOUTH_MASK.feather / 2)).toBeCloseTo(0.5, 9);
  });
});

describe('compositeFace', () => {
  let photo: RgbFrame;
  beforeAll(async () => {
    photo = await loadRgb(ASTRONAUT);
  });

  it('changes nothing outside the mask and keeps the frame size', () => {
    const frame = copy(photo);
    const crop: FaceCrop = { cx: 240, cy: 150, width: 105, height: 140, angle: 0 };
    const generated = { data: new Uint8Array(96 * 96 * 3).fill(255), size: 96 };
    const { blended } = compositeFace(frame, generated, crop);
    expect(blended).toBeGreaterThan(0);
    expect([frame.width, frame.height, frame.data.length]).toEqual([photo.width, photo.height, photo.data.length]);

    const { left, right, top, bottom } = DEFAULT_MOUTH_MASK;
    const x0 = crop.cx - crop.width / 2;
    const y0 = crop.cy - crop.height / 2;
    const same = (x: number, y: number): boolean => pixel(frame, x, y).join() === pixel(photo, x, y).join();
    let inside = 0;
    const changedOutside: string[] = [];
    const changedUnmasked: string[] = [];
    const notOpaque: string[] = [];
    for (let y = 0; y < frame.height; y++) {
      for (let x = 0; x < frame.width; x++) {
        // The mask's outline rectangle in frame pixels, from the constants alone.
        const within =
          x + 0.5 > x0 + left * crop.width &&
          x + 0.5 < x0 + right * crop.width &&
          y + 0.5 > y0 + top * crop.height &&
          y + 0.5 < y0 + bottom * crop.height;
        if (within) inside++;
        else if (!same(x, y)) changedOutside.push(`${x},${y}`);
        const [u, v] = frameToCrop(crop, x + 0.5, y + 0.5);
        const alpha = maskAlpha(u, v);
        if (alpha === 0 && !same(x, y)) changedUnmasked.push(`${x},${y}`);
        if (alpha === 1 && pixel(frame, x, y).join() !== '255,255,255') notOpaque.push(`${x},${y}`);
      }
    }
    expect(changedOutside).toEqual([]);
    expect(changedUnmasked).toEqual([]);
    expect(notOpaque).toEqual([]);
    expect(blended).toBeGreaterThan(1000);
    expect(blended).toBeLessThanOrEqual(inside);
  });

  it('leaves no seam: the change along any row or column steps by at most what the feather allows', () => {
    const frame = solid(320, 240, 0);
    const crop: FaceCrop = { cx: 160, cy: 120, width: 160, height: 160, angle: 0.2 };
    compositeFace(frame, { data: new Uint8Array(96 * 96 * 3).fill(255), size: 96 }, crop);
    // smoothstep's steepest slope is 1.5 / feather; one pixel is 1 / side of the crop.
    const bound = (255 * 1.5) / (DEFAULT_MOUTH_MASK.feather * Math.min(crop.width, crop.height)) + 1;
    let steepest = 0;
    let partial = 0;
    for (let y = 0; y < 240; y++) {
      for (let x = 0; x < 320; x++) {
        const here = frame.data[3 * (y * 320 + x)]!;
        if (here > 0 && here < 255) partial++;
        if (x > 0) steepest = Math.max(steepest, Math.abs(here - frame.data[3 * (y * 320 + x - 1)]!));
        if (y > 0) steepest = Math.max(steepest, Math.abs(here - frame.data[3 * ((y - 1) * 320 + x)]!));
      }
    }
    expect(steepest).toBeGreaterThan(0);
    expect(steepest).toBeLessThanOrEqual(bound);
    // A real fade: a band of partly blended pixels all around, not a hard edge.
    expect(partial).toBeGreaterThan(500);
    // And the crop's square itself never shows: its outermost ring of pixels is untouched.
    for (let i = 0; i < 96; i++) {
      for (const [u, v] of [
        [i, 0],
        [i, 95],
        [0, i],
        [95, i],
      ] as const) {
        const [x, y] = cropToFrame(crop, 96, u, v).map(Math.floor) as [number, number];
        expect(frame.data[3 * (y * 320 + x)], `crop pixel ${u},${v}`).toBe(0);
      }
    }
  });

  it('puts a rotated crop back where it came from (crop, then composite the same pixels: identity inside the mask)', () => {
    const source = gradient(256);
    const frame = copy(source);
    const crop: FaceCrop = { cx: 128.3, cy: 120.6, width: 80, height: 110, angle: 0.4 };
    const face = cropFace(source, crop, 160);
    compositeFace(frame, { data: face, size: 160 }, crop);
    let worst = 0;
    let checked = 0;
    for (let y = 0; y < 256; y++) {
      for (let x = 0; x < 256; x++) {
        const [u, v] = frameToCrop(crop, x + 0.5, y + 0.5);
        if (maskAlpha(u, v) === 0) continue;
        checked++;
        const got = pixel(frame, x, y);
        const want = pixel(source, x, y);
        for (let c = 0; c < 3; c++) worst = Math.max(worst, Math.abs(got[c]! - want[c]!));
      }
    }
    expect(checked).toBeGreaterThan(2000);
    expect(worst).toBeLessThanOrEqual(1);
  });

  it('round-trips a real photo through a rotated 96x96 crop with only resampling blur', () => {
    const frame = copy(photo);
    const crop: FaceCrop = { cx: 240, cy: 150, width: 120, height: 120, angle: -0.3 };
    const face = cropFace(photo, crop, 96);
    compositeFace(frame, { data: face, size: 96 }, crop);
    let sum = 0;
    let count = 0;
    for (let i = 0; i < frame.data.length; i++) {
      const d = Math.abs(frame.data[i]! - photo.data[i]!);
      if (d > 0) {
        sum += d;
        count++;
      }
    }
    expect(count).toBeGreaterThan(0);
    expect(sum / count).toBeLessThan(8);
  });

  it('draws only the on-frame part of a crop that hangs over the corner', () => {
    const frame = solid(120, 90, 10);
    const crop: FaceCrop = { cx: 5, cy: 70, width: 80, height: 80, angle: 0.1 };
    const { blended } = compositeFace(frame, { data: new Uint8Array(96 * 96 * 3).fill(200), size: 96 }, crop);
    expect(blended).toBeGreaterThan(0);
    expect(frame.data.length).toBe(120 * 90 * 3);
    for (let y = 0; y < 90; y++) {
      for (let x = 0; x < 120; x++) {
        const [u, v] = frameToCrop(crop, x + 0.5, y + 0.5);
        const value = frame.data[3 * (y * 120 + x)]!;
        const alpha = maskAlpha(u, v);
        if (alpha === 0) expect(value).toBe(10);
        else expect(value).toBe(Math.round(10 + alpha * 190));
      }
    }
  });

  it('takes a generated face larger than the model output (the super-resolved mouth of -2-pro)', () => {
    const small = copy(photo);
    const large = copy(photo);
    const crop: FaceCrop = { cx: 240, cy: 150, width: 140, height: 140, angle: 0 };
    compositeFace(small, { data: new Uint8Array(96 * 96 * 3).fill(90), size: 96 }, crop);
    compositeFace(large, { data: new Uint8Array(384 * 384 * 3).fill(90), size: 384 }, crop);
    expect(Buffer.compare(Buffer.from(small.data), Buffer.from(large.data))).toBe(0);
  });

  it('refuses a generated face whose buffer does not match its size', () => {
    expect(() =>
      compositeFace(
        solid(10, 10, 0),
        { data: new Uint8Array(5), size: 96 },
        { cx: 5, cy: 5, width: 5, height: 5, angle: 0 },
      ),
    ).toThrow(
      'Expected the generated face to hold size * size * 3 bytes for a positive integer size but received 5 bytes for size 96',
    );
  });
});

describe('16-bit frames (HDR kept, deeper SDR)', () => {
  /** The 8-bit frame as 16 bits (x257), plus a sub-8-bit detail (+1..+200) no 8-bit copy could hold. */
  function deepOf(frame: RgbFrame): { data: Uint16Array; width: number; height: number } {
    const data = new Uint16Array(frame.data.length);
    frame.data.forEach((v, i) => (data[i] = Math.min(65_535, v * 257 + (i % 200) + 1)));
    return { data, width: frame.width, height: frame.height };
  }
  let photo: RgbFrame;
  beforeAll(async () => {
    photo = await loadRgb(ASTRONAUT);
  });

  it("cuts the network's 8-bit crop from a 16-bit frame as from its 8-bit twin (within one level)", () => {
    const crop: FaceCrop = { cx: 240, cy: 150, width: 105, height: 140, angle: 0.2 };
    const shallow = cropFace(photo, crop, 96);
    const deep = cropFace(deepOf(photo), crop, 96);
    let worst = 0;
    deep.forEach((v, i) => (worst = Math.max(worst, Math.abs(v - (shallow[i] as number)))));
    expect(deep).toBeInstanceOf(Uint8Array);
    expect(worst).toBeLessThanOrEqual(1);
  });

  it('pastes an 8-bit mouth into a 16-bit frame: every unmasked sample keeps its 16 bits, the opaque core is the mouth x 257', () => {
    const source = deepOf(photo);
    const frame = { ...source, data: Uint16Array.from(source.data) };
    const crop: FaceCrop = { cx: 240, cy: 150, width: 105, height: 140, angle: 0 };
    const generated = { data: new Uint8Array(96 * 96 * 3).fill(200), size: 96 };
    const { blended } = compositeFace(frame, generated, crop);
    expect(blended).toBeGreaterThan(1000);
    let unmaskedChanged = 0;
    let coreWrong = 0;
    let core = 0;
    for (let y = 0; y < frame.height; y++) {
      for (let x = 0; x < frame.width; x++) {
        const [u, v] = frameToCrop(crop, x + 0.5, y + 0.5);
        const alpha = maskAlpha(u, v);
        for (let c = 0; c < 3; c++) {
          const i = 3 * (y * frame.width + x) + c;
          if (alpha === 0 && frame.data[i] !== source.data[i]) unmaskedChanged++;
          if (alpha === 1) {
            core++;
            if (frame.data[i] !== 200 * 257) coreWrong++;
          }
        }
      }
    }
    expect(unmaskedChanged).toBe(0);
    expect(core).toBeGreaterThan(1000);
    expect(coreWrong).toBe(0);
  });
});
