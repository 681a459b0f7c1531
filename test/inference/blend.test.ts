import { describe, expect, it } from 'vitest';
import { TileCompositor, featherWeights } from '../../src/inference/blend.js';
import { planTiles } from '../../src/inference/tile-plan.js';

const IDENTITY = { gain: 1, offset: 0 };

/** Three planes of one constant value for a tile of `w` x `h` output pixels. */
function constantTile(w: number, h: number, value: number): Float32Array {
  return new Float32Array(3 * w * h).fill(value);
}

describe('featherWeights', () => {
  it.each([1, 2, 7, 16])('rises from 0 to 1 across %i pixels and pairs up to one', (width) => {
    const w = featherWeights(width);
    expect(w.length).toBe(width);
    for (let i = 0; i < width; i += 1) {
      expect(w[i]!).toBeGreaterThan(0);
      expect(w[i]!).toBeLessThan(1);
      expect(w[i]! + w[width - 1 - i]!).toBeCloseTo(1, 6);
      if (i > 0) expect(w[i]!).toBeGreaterThan(w[i - 1]!);
    }
  });
});

describe('TileCompositor', () => {
  it('writes every output byte once all tiles are in (weights sum to one, corners included)', () => {
    const plan = planTiles({ width: 70, height: 50, tile: 30, overlap: 2, feather: 4 });
    expect(plan.cols.length * plan.rows.length).toBeGreaterThanOrEqual(6);
    const scale = 2;
    const out = new Uint8Array(70 * scale * 50 * scale * 3);
    const compositor = new TileCompositor(plan, scale, out, IDENTITY);
    for (let k = 0; k < plan.count; k += 1) {
      compositor.add(k, constantTile(plan.tileWidth * scale, plan.tileHeight * scale, 100.2), 0);
    }
    const wrong = out.filter((v) => v !== 100).length;
    expect(wrong).toBe(0);
  });

  it('blends two tiles across the feather band with the raised-cosine weights', () => {
    const plan = planTiles({ width: 40, height: 4, tile: 24, overlap: 2, feather: 4 });
    expect(plan.cols.map((c) => [c.ownEnd, c.trailEnd])).toEqual([
      [18, 22],
      [40, 40],
    ]);
    const scale = 2;
    const out = new Uint8Array(80 * 8 * 3);
    const compositor = new TileCompositor(plan, scale, out, { gain: 2, offset: 10 });
    compositor.add(0, constantTile(48, 8, 0), 0);
    compositor.add(1, constantTile(48, 8, 100), 0);
    const weights = featherWeights(8);
    const expected = Array.from({ length: 80 }, (_, x) => {
      if (x < 36) return 10;
      if (x >= 44) return 210;
      return Math.round(10 + 200 * weights[x - 36]!);
    });
    for (let y = 0; y < 8; y += 1) {
      const row = Array.from({ length: 80 }, (_, x) => out[(y * 80 + x) * 3 + 1]);
      expect(row).toEqual(expected);
    }
  });

  it('clamps values outside 0..255 and rounds', () => {
    const plan = planTiles({ width: 2, height: 1, tile: 8, overlap: 0, feather: 0 });
    const out = new Uint8Array(2 * 3);
    const data = new Float32Array([-20, 300, 12.6, 254.5, 0.4, 1e9]);
    new TileCompositor(plan, 1, out, IDENTITY).add(0, data, 0);
    // Planes: R = [-20, 300], G = [12.6, 254.5], B = [0.4, 1e9]; 254.5 rounds to even.
    expect([...out]).toEqual([0, 13, 0, 255, 254, 255]);
  });

  it('refuses tiles out of row-major order and outputs of the wrong size', () => {
    const plan = planTiles({ width: 40, height: 4, tile: 24, overlap: 2, feather: 4 });
    const compositor = new TileCompositor(plan, 1, new Uint8Array(40 * 4 * 3), IDENTITY);
    expect(() => compositor.add(1, constantTile(24, 4, 0), 0)).toThrow('Expected tile 0 next but received tile 1');
    expect(() => new TileCompositor(plan, 2, new Uint8Array(40 * 4 * 3), IDENTITY)).toThrow(
      'Expected output to hold 80x8x3 bytes but received 480',
    );
  });
});
