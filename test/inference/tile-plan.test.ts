import { describe, expect, it } from 'vitest';
import { type AxisTile, fitTileSize, planAxis, planTiles } from '../../src/inference/tile-plan.js';

/** [start, leadStart, ownStart, ownEnd, trailEnd] */
type Row = [number, number, number, number, number];
const rows = (tiles: AxisTile[]): Row[] => tiles.map((t) => [t.start, t.leadStart, t.ownStart, t.ownEnd, t.trailEnd]);

describe('planAxis', () => {
  it.each<[string, number, number, number, number, number, Row[]]>([
    // name, length, tile, overlap, feather, expected size, expected tiles
    ['shorter than the tile: one tile of the axis length', 50, 64, 8, 4, 50, [[0, 0, 0, 50, 50]]],
    ['exactly the tile', 64, 64, 8, 4, 64, [[0, 0, 0, 64, 64]]],
    [
      'one pixel longer: the second tile moves back to the edge',
      65,
      64,
      8,
      4,
      64,
      [
        [0, 0, 0, 30, 34],
        [1, 30, 34, 65, 65],
      ],
    ],
    [
      'stride divides the slack',
      100,
      40,
      4,
      2,
      40,
      [
        [0, 0, 0, 34, 36],
        [30, 34, 36, 64, 66],
        [60, 64, 66, 100, 100],
      ],
    ],
    [
      'no overlap, no feather: hard cuts in the middle of each shared band',
      100,
      32,
      0,
      0,
      32,
      [
        [0, 0, 0, 27, 27],
        [22, 27, 27, 49, 49],
        [45, 49, 49, 72, 72],
        [68, 72, 72, 100, 100],
      ],
    ],
    [
      'tile 50 on 112 with overlap 6 (does not divide)',
      112,
      50,
      6,
      4,
      50,
      [
        [0, 0, 0, 38, 42],
        [31, 38, 42, 69, 73],
        [62, 69, 73, 112, 112],
      ],
    ],
  ])('%s', (_name, length, tile, overlap, feather, size, expected) => {
    const plan = planAxis(length, tile, overlap, feather);
    expect(plan.size).toBe(size);
    expect(rows(plan.tiles)).toEqual(expected);
  });

  it.each<[number, number, number, number, string]>([
    [0, 64, 8, 4, 'Expected length to be an integer of at least 1 but received 0'],
    [100, 0, 0, 0, 'Expected tile to be an integer of at least 1 but received 0'],
    [100, 32.5, 0, 0, 'Expected tile to be an integer of at least 1 but received 32.5'],
    [100, 64, -1, 0, 'Expected overlap to be a non-negative integer but received -1'],
    [100, 64, 8, Number.NaN, 'Expected feather to be a non-negative integer but received NaN'],
    [100, 28, 8, 4, 'Expected tile to be greater than 2 * overlap + 3 * feather (28) but received 28'],
    [100, 10, 0, 4, 'Expected tile to be greater than 2 * overlap + 3 * feather (12) but received 10'],
  ])('rejects length %s tile %s overlap %s feather %s', (length, tile, overlap, feather, message) => {
    expect(() => planAxis(length, tile, overlap, feather)).toThrow(new RangeError(message));
  });

  // Every combination in a small grid: the properties the compositor and exactness rely on.
  const grid: [number, number, number, number][] = [];
  for (const length of [1, 7, 31, 32, 33, 100, 257, 1000])
    for (const tile of [8, 32, 50, 64, 128])
      for (const overlap of [0, 1, 3, 8])
        for (const feather of [0, 1, 4])
          if (tile > 2 * overlap + 3 * feather) grid.push([length, tile, overlap, feather]);

  it(`holds its invariants on ${grid.length} combinations`, () => {
    for (const [length, tile, overlap, feather] of grid) {
      const { size, tiles } = planAxis(length, tile, overlap, feather);
      const where = `length ${length} tile ${tile} overlap ${overlap} feather ${feather}`;
      expect(size, where).toBe(Math.min(tile, length));
      const first = tiles[0]!;
      const last = tiles[tiles.length - 1]!;
      expect([first.start, first.leadStart, first.ownStart], where).toEqual([0, 0, 0]);
      expect([last.start + size, last.ownEnd, last.trailEnd], where).toEqual([length, length, length]);
      if (length > tile) {
        expect(tiles.length, where).toBe(Math.ceil((length - tile) / (tile - 2 * overlap - feather)) + 1);
      }
      for (let i = 0; i < tiles.length; i += 1) {
        const t = tiles[i]!;
        expect(t.start >= 0 && t.start + size <= length, where).toBe(true);
        expect(t.leadStart <= t.ownStart && t.ownStart < t.ownEnd && t.ownEnd <= t.trailEnd, where).toBe(true);
        const next = tiles[i + 1];
        if (next === undefined) continue;
        // Kept parts tile the axis: each feather band is shared by exactly the two neighbours.
        expect([next.leadStart, next.ownStart], where).toEqual([t.ownEnd, t.trailEnd]);
        expect(t.trailEnd - t.ownEnd, where).toBe(feather);
        // Context: every kept pixel has `overlap` real pixels beyond it inside its tile.
        expect(t.start + size - t.trailEnd, where).toBeGreaterThanOrEqual(overlap);
        expect(next.leadStart - next.start, where).toBeGreaterThanOrEqual(overlap);
      }
    }
  });
});

describe('fitTileSize', () => {
  it.each([
    // length, tile, overlap, feather, fitted
    [50, 64, 8, 4, 50], // one tile: the axis itself
    [600, 512, 10, 4, 312], // two tiles of ceil((600 + 24) / 2) = 312
    [1000, 512, 10, 4, 512], // ceil((1000 + 24) / 2) = 512
    [1001, 512, 10, 4, 352], // three tiles: ceil((1001 + 48) / 3) = 350 -> 352
    [100, 40, 4, 2, 40],
    [65, 64, 8, 4, 48], // ceil((65 + 20) / 2) = 43 -> 48
    [70, 30, 8, 4, 30], // the stride is only 10: nothing to save
  ])('length %i, tile %i, overlap %i, feather %i -> %i', (length, tile, overlap, feather, fitted) => {
    expect(fitTileSize(length, tile, overlap, feather)).toBe(fitted);
  });

  it('never needs more tiles than the requested size would', () => {
    for (const length of [33, 97, 250, 513, 1025, 4000]) {
      for (const tile of [32, 64, 100, 512]) {
        const fitted = fitTileSize(length, tile, 6, 4);
        expect(fitted).toBeLessThanOrEqual(tile);
        expect(planAxis(length, fitted, 6, 4).tiles.length).toBeLessThanOrEqual(
          planAxis(length, tile, 6, 4).tiles.length,
        );
      }
    }
  });
});

describe('planTiles', () => {
  it('accepts the smallest tile that leaves each tile a pixel of its own', () => {
    let smallest = Infinity;
    for (let length = 30; length <= 400; length += 1) {
      for (const t of planAxis(length, 29, 8, 4).tiles) smallest = Math.min(smallest, t.ownEnd - t.ownStart);
    }
    expect(smallest).toBe(1);
  });

  it('combines the axes in row-major order with one tile shape', () => {
    const plan = planTiles({ width: 100, height: 50, tile: 40, overlap: 4, feather: 2, fit: false });
    expect([plan.tileWidth, plan.tileHeight, plan.cols.length, plan.rows.length, plan.count]).toEqual([
      40, 40, 3, 2, 6,
    ]);
    expect([plan.overlap, plan.feather]).toEqual([4, 2]);
  });

  it('fits the tile to each axis by default, keeping the tile count', () => {
    const plan = planTiles({ width: 100, height: 50, tile: 40, overlap: 4, feather: 2 });
    expect([plan.tileWidth, plan.tileHeight, plan.cols.length, plan.rows.length]).toEqual([40, 32, 3, 2]);
  });

  it('shrinks the tile to an image smaller than it on one axis only', () => {
    const plan = planTiles({ width: 300, height: 20, tile: 128, overlap: 8, feather: 4 });
    expect([plan.tileWidth, plan.tileHeight, plan.rows.length]).toEqual([120, 20, 1]);
    expect(plan.cols.length).toBe(3);
  });

  it('has no feather when the image is one tile', () => {
    const plan = planTiles({ width: 30, height: 20, tile: 128, overlap: 8, feather: 4 });
    expect([plan.count, plan.feather]).toEqual([1, 0]);
  });
});
