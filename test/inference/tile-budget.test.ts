import { describe, expect, it } from 'vitest';
import { MAX_BUDGET_TILE, planTiles, tileSizeForBudget } from '../../src/inference/index.js';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { PACKAGE_ROOT } from '../../src/paths.js';

const x4plus = JSON.parse(readFileSync(path.join(PACKAGE_ROOT, 'models', 'realesrgan-x4plus.json'), 'utf8')) as {
  tile: { overlap: number; bytesPerPixel: number; size: number };
};

const GiB = 2 ** 30;
const { overlap, bytesPerPixel, size } = x4plus.tile;

/** Input pixels the network computes over the image's own: 1 is no recomputed overlap at all. */
function computedShare(width: number, height: number, tile: number): number {
  const plan = planTiles({ width, height, tile, overlap, feather: Math.min(overlap, 4) });
  return (plan.count * plan.tileWidth * plan.tileHeight) / (width * height);
}

/** Photos of 2 to 12 MP in the usual aspect ratios, landscape and portrait. */
const PHOTOS = [
  [1632, 1224],
  [2000, 1500],
  [2400, 1600],
  [3000, 2000],
  [3264, 2448],
  [3840, 2160],
  [4000, 3000],
  [4032, 3024],
  [3024, 4032],
  [4608, 2592],
  [4240, 2832],
] as const;

describe('the tile side a memory budget allows', () => {
  it("is the largest multiple of 8 whose tile fits the budget at the manifest's bytes per pixel", () => {
    const tile = tileSizeForBudget({ budgetBytes: 1 * GiB, bytesPerPixel, overlap, fallback: size });
    expect(tile % 8).toBe(0);
    expect(tile * tile * bytesPerPixel).toBeLessThanOrEqual(GiB);
    expect((tile + 8) * (tile + 8) * bytesPerPixel).toBeGreaterThan(GiB);
  });

  it("without a budget or a measured figure it is the manifest's tile; a huge budget stops at the largest tile; a tiny one at the smallest the overlap allows", () => {
    expect(tileSizeForBudget({ bytesPerPixel, overlap, fallback: size })).toBe(size);
    expect(tileSizeForBudget({ budgetBytes: GiB, overlap, fallback: size })).toBe(size);
    expect(tileSizeForBudget({ budgetBytes: 1024 * GiB, bytesPerPixel, overlap, fallback: size })).toBe(
      MAX_BUDGET_TILE,
    );
    expect(tileSizeForBudget({ budgetBytes: 1, bytesPerPixel, overlap, fallback: size })).toBe(176);
  });

  it("x4plus recomputes at most 1.25 of a 2-12 MP photo's pixels with 32 GiB (the manifest tile: about 2)", () => {
    const tile = tileSizeForBudget({ budgetBytes: 32 * GiB, bytesPerPixel, overlap, fallback: size });
    const shares = PHOTOS.map(([w, h]) => computedShare(w, h, tile));
    expect(Math.max(...shares)).toBeLessThanOrEqual(1.25);
    expect(Math.min(...PHOTOS.map(([w, h]) => computedShare(w, h, size)))).toBeGreaterThan(1.85);
  });
});
