import path from 'node:path';
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import {
  type Plane,
  blockiness,
  gaussianWeights,
  lumaBt601,
  meanFrameChange,
  meanGradient,
  psnr,
  sharpnessRatio,
  ssim,
  trimBorder,
} from '../../bench/metrics.js';
import { BUNDLED_PHOTOS_DIR } from '../../src/paths.js';

function plane(width: number, height: number, f: (x: number, y: number) => number): Plane {
  const data = new Float64Array(width * height);
  for (let y = 0; y < height; y += 1) for (let x = 0; x < width; x += 1) data[y * width + x] = f(x, y);
  return { data, width, height };
}

/** A deterministic pseudo-random texture (no Math.random: a failure must be reproducible). */
function texture(width: number, height: number, seed: number): Plane {
  let s = seed >>> 0;
  return plane(width, height, () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return (s / 2 ** 32) * 255;
  });
}

async function photoLuma(name: string): Promise<Plane> {
  const { data, info } = await sharp(path.join(BUNDLED_PHOTOS_DIR, name))
    .removeAlpha()
    .resize(96, 64, { fit: 'cover' })
    .raw()
    .toBuffer({ resolveWithObject: true });
  return lumaBt601(new Uint8Array(data.buffer, data.byteOffset, data.length), info.width, info.height);
}

/** SSIM straight from the definition: a full 2-D Gaussian window at every valid position. */
function naiveSsim(a: Plane, b: Plane, size = 11, sigma = 1.5): number {
  const g = gaussianWeights(size, sigma);
  const c1 = (0.01 * 255) ** 2;
  const c2 = (0.03 * 255) ** 2;
  let total = 0;
  let count = 0;
  for (let y = 0; y + size <= a.height; y += 1) {
    for (let x = 0; x + size <= a.width; x += 1) {
      let ma = 0;
      let mb = 0;
      for (let j = 0; j < size; j += 1) {
        for (let i = 0; i < size; i += 1) {
          const w = g[i]! * g[j]!;
          ma += w * a.data[(y + j) * a.width + x + i]!;
          mb += w * b.data[(y + j) * b.width + x + i]!;
        }
      }
      let va = 0;
      let vb = 0;
      let cov = 0;
      for (let j = 0; j < size; j += 1) {
        for (let i = 0; i < size; i += 1) {
          const w = g[i]! * g[j]!;
          const da = a.data[(y + j) * a.width + x + i]! - ma;
          const db = b.data[(y + j) * b.width + x + i]! - mb;
          va += w * da * da;
          vb += w * db * db;
          cov += w * da * db;
        }
      }
      total += ((2 * ma * mb + c1) * (2 * cov + c2)) / ((ma * ma + mb * mb + c1) * (va + vb + c2));
      count += 1;
    }
  }
  return total / count;
}

describe('lumaBt601', () => {
  it.each([
    { rgb: [0, 0, 0], y: 16 },
    { rgb: [255, 255, 255], y: 235 },
    { rgb: [255, 0, 0], y: 16 + 65.481 },
    { rgb: [0, 255, 0], y: 16 + 128.553 },
    { rgb: [0, 0, 255], y: 16 + 24.966 },
  ])('maps RGB $rgb to Y $y (studio range)', ({ rgb, y }) => {
    const luma = lumaBt601(Uint8Array.from(rgb), 1, 1);
    expect(luma.data[0]).toBeCloseTo(y, 10);
  });

  it('skips a fourth channel and refuses a buffer of the wrong size', () => {
    const rgba = Uint8Array.from([255, 255, 255, 0, 0, 0, 0, 255]);
    expect([...lumaBt601(rgba, 2, 1, 4).data].map((v) => Number(v.toFixed(6)))).toEqual([235, 16]);
    expect(() => lumaBt601(new Uint8Array(5), 2, 1)).toThrow(/Expected 2x1x3 = 6 samples but received 5/);
  });
});

describe('trimBorder', () => {
  it('keeps the centre rows and columns', () => {
    const p = plane(5, 4, (x, y) => 10 * y + x);
    const t = trimBorder(p, 1);
    expect([t.width, t.height]).toEqual([3, 2]);
    expect([...t.data]).toEqual([11, 12, 13, 21, 22, 23]);
  });

  it('refuses a border that leaves nothing', () => {
    expect(() =>
      trimBorder(
        plane(4, 4, () => 0),
        2,
      ),
    ).toThrow(/larger than twice the border 2/);
  });
});

describe('psnr', () => {
  it('is infinite for identical planes', async () => {
    const y = await photoLuma('astronaut.png');
    expect(psnr(y, { ...y, data: y.data.slice() })).toBe(Number.POSITIVE_INFINITY);
  });

  it.each([1, 5, 20])('equals 20 log10(255 / %i) for a +-%i checkerboard added to a photo', async (d) => {
    const y = await photoLuma('coffee.png');
    const noisy = plane(y.width, y.height, (x, r) => y.data[r * y.width + x]! + ((x + r) % 2 === 0 ? d : -d));
    expect(psnr(y, noisy)).toBeCloseTo(20 * Math.log10(255 / d), 9);
  });

  it('refuses planes of different sizes', () => {
    expect(() =>
      psnr(
        plane(4, 4, () => 0),
        plane(4, 5, () => 0),
      ),
    ).toThrow(/same size but received 4x4 and 4x5/);
  });
});

describe('ssim', () => {
  it('is 1 for identical planes', async () => {
    const y = await photoLuma('chelsea.png');
    expect(ssim(y, { ...y, data: y.data.slice() })).toBeCloseTo(1, 12);
  });

  it.each([
    { a: 100, b: 100 },
    { a: 100, b: 120 },
    { a: 16, b: 235 },
  ])('of constant planes $a and $b is the luminance term alone', ({ a, b }) => {
    const c1 = (0.01 * 255) ** 2;
    const expected = (2 * a * b + c1) / (a * a + b * b + c1);
    expect(
      ssim(
        plane(16, 12, () => a),
        plane(16, 12, () => b),
      ),
    ).toBeCloseTo(expected, 12);
  });

  it('matches a direct 2-D evaluation of the definition on a photo with noise', async () => {
    const y = await photoLuma('astronaut.png');
    const crop = trimBorder(y, 20);
    const noise = texture(crop.width, crop.height, 7);
    const noisy = plane(
      crop.width,
      crop.height,
      (x, r) => crop.data[r * crop.width + x]! + (noise.data[r * crop.width + x]! - 127.5) / 8,
    );
    const fast = ssim(crop, noisy);
    expect(fast).toBeGreaterThan(0.3);
    expect(fast).toBeLessThan(0.99);
    expect(fast).toBeCloseTo(naiveSsim(crop, noisy), 10);
  });

  it('falls as the noise grows and is symmetric', async () => {
    const y = await photoLuma('coffee.png');
    const noise = texture(y.width, y.height, 3);
    const scores = [4, 16, 64].map((div) =>
      ssim(
        y,
        plane(y.width, y.height, (x, r) => y.data[r * y.width + x]! + (noise.data[r * y.width + x]! - 127.5) / div),
      ),
    );
    expect(scores[0]).toBeLessThan(scores[1]!);
    expect(scores[1]).toBeLessThan(scores[2]!);
    const other = plane(y.width, y.height, (x, r) => y.data[r * y.width + x]! * 0.9 + 10);
    expect(ssim(y, other)).toBeCloseTo(ssim(other, y), 12);
  });

  it('refuses a plane smaller than the window', () => {
    expect(() =>
      ssim(
        plane(10, 20, () => 0),
        plane(10, 20, () => 0),
      ),
    ).toThrow(/at least 11x11 for SSIM but received 10x20/);
  });
});

describe('sharpness, blockiness and flicker', () => {
  it('measures the mean gradient of a ramp exactly, and the ratio of a blurred picture below 1', () => {
    expect(meanGradient(plane(10, 10, (x) => 3 * x))).toBeCloseTo(3, 12);
    expect(meanGradient(plane(10, 10, (x, y) => 3 * x + 4 * y))).toBeCloseTo(5, 12);
    const sharp = texture(64, 64, 3);
    const blurred = plane(64, 64, (x, y) => {
      let s = 0;
      for (let d = -1; d <= 1; d += 1) s += sharp.data[y * 64 + Math.min(63, Math.max(0, x + d))]!;
      return s / 3;
    });
    expect(sharpnessRatio(sharp, sharp)).toBe(1);
    expect(sharpnessRatio(blurred, sharp)).toBeLessThan(0.8);
  });

  it('is 1 for a smooth ramp and for noise, and high for a pixel lattice repeated 4 times', () => {
    expect(
      blockiness(
        plane(64, 64, (x, y) => x + 2 * y),
        4,
      ),
    ).toBeCloseTo(1, 12);
    expect(blockiness(texture(128, 128, 9), 4)).toBeGreaterThan(0.95);
    expect(blockiness(texture(128, 128, 9), 4)).toBeLessThan(1.05);
    const lr = texture(32, 32, 5);
    const nearest = plane(128, 128, (x, y) => lr.data[Math.floor(y / 4) * 32 + Math.floor(x / 4)]!);
    expect(blockiness(nearest, 4)).toBe(Number.POSITIVE_INFINITY);
    // A faint grid on a smooth picture: small steps at every 4th boundary only.
    const grid = plane(128, 128, (x, y) => 100 + x * 0.5 + (x % 4 === 0 ? 1 : 0) + (y % 4 === 0 ? 1 : 0));
    expect(blockiness(grid, 4)).toBeGreaterThan(1.5);
  });

  it('measures frame-to-frame change', () => {
    const a = plane(8, 8, () => 10);
    const b = plane(8, 8, () => 13);
    expect(meanFrameChange([a, b, a])).toBe(3);
    expect(() => meanFrameChange([a])).toThrow('at least 2 frames');
  });
});
