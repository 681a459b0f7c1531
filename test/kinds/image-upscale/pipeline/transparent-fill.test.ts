/**
 * The outward colour fill under full transparency (issue 40), on pixels: what is visible is kept
 * exactly, what is not is filled from the nearest visible colours, opaque images are untouched.
 */
import { describe, expect, it } from 'vitest';
import type { InterleavedImage } from '../../../../src/inference/index.js';
import { DILATE_RINGS, fillTransparent } from '../../../../src/kinds/image-upscale/pipeline/transparent-fill.js';

function image<T extends Uint8Array | Uint16Array>(data: T, width: number, height: number): InterleavedImage<T> {
  return { data, width, height, channels: 3 };
}

function pixel(img: InterleavedImage<Uint8Array | Uint16Array>, x: number, y: number): number[] {
  const i = (y * img.width + x) * 3;
  return [img.data[i]!, img.data[i + 1]!, img.data[i + 2]!];
}

describe('fillTransparent', () => {
  it('returns an image without a fully transparent pixel as it came (the same object), faint alpha included', () => {
    const colour = image(new Uint8Array([1, 2, 3, 4, 5, 6]), 2, 1);
    expect(fillTransparent(colour, new Uint8Array([255, 255]), 255)).toBe(colour);
    expect(fillTransparent(colour, new Uint8Array([255, 1]), 255)).toBe(colour);
    // Nothing visible to fill from: left alone too.
    expect(fillTransparent(colour, new Uint8Array([0, 0]), 255)).toBe(colour);
  });

  it('fills black under the transparency with the visible colour, near and far, and keeps every visible pixel', () => {
    const w = 40;
    const h = 9;
    const data = new Uint8Array(w * h * 3);
    const alpha = new Uint8Array(w * h);
    // A red column 3 pixels wide on the left, one half-transparent green pixel in it; black elsewhere.
    for (let y = 0; y < h; y++) {
      for (let x = 0; x < 3; x++) {
        data.set([255, 0, 0], (y * w + x) * 3);
        alpha[y * w + x] = 255;
      }
    }
    data.set([0, 200, 0], (4 * w + 1) * 3);
    alpha[4 * w + 1] = 128;
    const colour = image(data, w, h);
    const filled = fillTransparent(colour, alpha, 255);
    expect(filled).not.toBe(colour);
    expect(colour.data[(0 * w + 10) * 3]).toBe(0); // the input is not changed
    expect(pixel(filled, 1, 4)).toEqual([0, 200, 0]);
    expect(pixel(filled, 0, 0)).toEqual([255, 0, 0]);
    // Next to the column: the column's colour (the ring around it), exactly on the rows away from the green pixel.
    expect(pixel(filled, 3, 0)).toEqual([255, 0, 0]);
    // Far away (the pyramid): still red, a little green from the green pixel at most.
    for (const x of [DILATE_RINGS + 3, 20, w - 1]) {
      const [r, g, b] = pixel(filled, x, 0);
      expect(r).toBeGreaterThan(200);
      expect(g).toBeLessThan(60);
      expect(b).toBe(0);
    }
  });

  it('fills between two colours with colours between them, not black', () => {
    const w = 30;
    const data = new Uint16Array(w * 3);
    const alpha = new Uint16Array(w);
    data.set([65535, 0, 0], 0);
    alpha[0] = 65535;
    data.set([0, 0, 65535], (w - 1) * 3);
    alpha[w - 1] = 65535;
    const filled = fillTransparent(image(data, w, 1), alpha, 65535);
    for (let x = 1; x < w - 1; x++) {
      const [r = 0, g, b = 0] = pixel(filled, x, 0);
      expect(g).toBe(0);
      expect(r + b, `x ${x}`).toBeGreaterThan(0.9 * 65535);
    }
    expect(pixel(filled, 1, 0)).toEqual([65535, 0, 0]);
    expect(pixel(filled, w - 2, 0)).toEqual([0, 0, 65535]);
  });

  it('keeps grey grey (three equal channels stay equal)', () => {
    const w = 12;
    const h = 12;
    const data = new Uint8Array(w * h * 3).fill(0);
    const alpha = new Uint8Array(w * h);
    for (let i = 0; i < w * h; i++) {
      if ((i % w) + Math.floor(i / w) < 6) {
        const v = 100 + (i % 7) * 20;
        data.set([v, v, v], i * 3);
        alpha[i] = 255;
      }
    }
    const filled = fillTransparent(image(data, w, h), alpha, 255);
    for (let i = 0; i < w * h; i++) {
      expect(filled.data[i * 3 + 1]).toBe(filled.data[i * 3]);
      expect(filled.data[i * 3 + 2]).toBe(filled.data[i * 3]);
      expect(filled.data[i * 3]).toBeGreaterThanOrEqual(100);
    }
  });

  it('refuses alpha of another size', () => {
    expect(() => fillTransparent(image(new Uint8Array(12), 2, 2), new Uint8Array(3), 255)).toThrow(
      /Expected 4 alpha values/,
    );
  });
});
