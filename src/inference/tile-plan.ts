/**
 * Where the tiles of an image go, and which part of each tile's output is kept. Pure: no pixels.
 *
 * Every tile of an image has the same shape, so ONNX Runtime plans its memory once per image size
 * (once per job for video frames) and tiles stack into one [B, 3, H, W] batch. An axis shorter than
 * the tile is a single tile of its own length; a longer one gets the fewest tiles of at most `tile`,
 * shrunk to what covers it (fitTileSize). Edge tiles are not padded: the last tile on an axis is
 * moved back so that it ends on the image edge. That keeps the shape and also keeps the network's
 * own zero padding at the image border exactly where an untiled run has it, which no padding of
 * ours (zeros, edge replication or reflection) could reproduce.
 *
 * Near a tile edge that is not an image edge the convolutions see the tile's zero padding instead
 * of the image, so `overlap` pixels on each such side are context only and are discarded. Between
 * two neighbours' kept parts lies a band `feather` pixels wide that both keep and blend. Neighbours
 * therefore share at least 2 * overlap + feather pixels. With an overlap at least the network's
 * receptive radius, every kept pixel is the untiled value up to float rounding, and the feather only
 * hides what a too-small overlap leaves.
 *
 *   tile i   |---------- kept ----------|~ feather ~|- overlap -|
 *   tile i+1             |- overlap -|~ feather ~|------- kept -----------
 *                        ^ p(i+1)                            ^ p(i) + T
 */

export interface AxisTile {
  /** First input pixel of the tile on this axis. */
  start: number;
  /** Feather band shared with the previous tile: [leadStart, ownStart); empty for the first tile. */
  leadStart: number;
  /** Pixels this tile alone decides: [ownStart, ownEnd). */
  ownStart: number;
  ownEnd: number;
  /** Feather band shared with the next tile: [ownEnd, trailEnd); empty for the last tile. */
  trailEnd: number;
}

export interface AxisPlan {
  length: number;
  /** Tile extent on this axis: the requested tile, or the whole axis when that is shorter. */
  size: number;
  tiles: AxisTile[];
}

export interface TilePlanRequest {
  width: number;
  height: number;
  /** Tile side in input pixels. */
  tile: number;
  /** Context pixels discarded on each inner side of a tile. */
  overlap: number;
  /** Width of the blended band between neighbours' kept parts, input pixels; 0: a hard cut. */
  feather: number;
  /** Shrink the tile to the fewest tiles that still cover each axis (see fitTileSize). Default true. */
  fit?: boolean;
}

export interface TilePlan {
  width: number;
  height: number;
  tileWidth: number;
  tileHeight: number;
  cols: AxisTile[];
  rows: AxisTile[];
  /** Tiles in row-major order: tile k is row floor(k / cols.length), column k % cols.length. */
  count: number;
  /** Input pixels of real context each kept pixel has at least, where the image does not end first. */
  overlap: number;
  /** Blended band width in input pixels (0 when the image is a single tile). */
  feather: number;
}

export function planAxis(length: number, tile: number, overlap: number, feather: number): AxisPlan {
  requireInteger('length', length, 1);
  requireInteger('tile', tile, 1);
  requireInteger('overlap', overlap, 0);
  requireInteger('feather', feather, 0);
  if (length <= tile) {
    return { length, size: length, tiles: [{ start: 0, leadStart: 0, ownStart: 0, ownEnd: length, trailEnd: length }] };
  }
  // With the slack spread evenly, a tile keeps pixels of its own between its two feather bands
  // only when the stride exceeds twice the feather: hence 3 * feather.
  const minimum = 2 * overlap + 3 * feather;
  if (tile <= minimum) {
    throw new RangeError(
      `Expected tile to be greater than 2 * overlap + 3 * feather (${minimum}) but received ${tile}`,
    );
  }
  const stride = tile - 2 * overlap - feather;
  const n = Math.ceil((length - tile) / stride) + 1;
  // Spread the slack over every seam instead of piling it on the last tile: each shared band is
  // then at least 2 * overlap + feather wide, and any extra is split between the two sides.
  const starts = Array.from({ length: n }, (_, i) => Math.floor((i * (length - tile)) / (n - 1)));
  const tiles: AxisTile[] = starts.map((start) => ({
    start,
    leadStart: 0,
    ownStart: 0,
    ownEnd: length,
    trailEnd: length,
  }));
  for (let i = 0; i + 1 < n; i += 1) {
    const left = tiles[i] as AxisTile;
    const right = tiles[i + 1] as AxisTile;
    const shared = left.start + tile - right.start;
    const bandStart = right.start + Math.floor((shared - feather) / 2);
    left.ownEnd = bandStart;
    left.trailEnd = bandStart + feather;
    right.leadStart = bandStart;
    right.ownStart = bandStart + feather;
  }
  return { length, size: tile, tiles };
}

/** Fitted tile sizes are rounded up to a multiple of this, so few distinct shapes occur. */
export const TILE_ALIGN = 8;

/**
 * The tile size to use on an axis: the number of tiles `tile` needs, then the smallest size (a
 * multiple of TILE_ALIGN, at most `tile`) with which that many tiles still cover the axis. A 600
 * pixel axis with tile 512 then runs two tiles of about 312 instead of two of 512, which would
 * compute 64 % more pixels than the image has. Still one shape for the whole image.
 */
export function fitTileSize(length: number, tile: number, overlap: number, feather: number): number {
  if (length <= tile) return length;
  const stride = tile - 2 * overlap - feather;
  if (stride < 1) return tile;
  const n = Math.ceil((length - tile) / stride) + 1;
  const needed = Math.ceil((length + (n - 1) * (2 * overlap + feather)) / n);
  const fitted = Math.min(tile, Math.ceil(needed / TILE_ALIGN) * TILE_ALIGN);
  return fitted > 2 * overlap + 3 * feather ? fitted : tile;
}

export function planTiles(request: TilePlanRequest): TilePlan {
  const { width, height, tile, overlap, feather } = request;
  const fit = request.fit ?? true;
  const cols = planAxis(width, fit ? fitTileSize(width, tile, overlap, feather) : tile, overlap, feather);
  const rows = planAxis(height, fit ? fitTileSize(height, tile, overlap, feather) : tile, overlap, feather);
  return {
    width,
    height,
    tileWidth: cols.size,
    tileHeight: rows.size,
    cols: cols.tiles,
    rows: rows.tiles,
    count: cols.tiles.length * rows.tiles.length,
    overlap,
    feather: cols.tiles.length > 1 || rows.tiles.length > 1 ? feather : 0,
  };
}

function requireInteger(name: string, value: number, min: number): void {
  if (!Number.isInteger(value) || value < min) {
    const expectation = min === 0 ? 'a non-negative integer' : `an integer of at least ${min}`;
    throw new RangeError(`Expected ${name} to be ${expectation} but received ${String(value)}`);
  }
}
