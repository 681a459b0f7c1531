/**
 * Writes tile outputs (float32 planar, as the network returns them) into the interleaved 8-bit or
 * 16-bit output image, blending the feather bands of a tile plan.
 *
 * Memory stays near the output image: a pixel that one tile alone decides is quantised straight
 * into the output. Only feather pixels wait in float, in two kinds of small stores:
 *   - a vertical strip per column seam, as tall as the current tile row;
 *   - a horizontal band per row seam, as wide as the image; at most two are alive (the seam above
 *     the current tile row and the one below it).
 * Tiles must arrive in row-major order (the plan's order); when the last tile of a row has arrived,
 * that row's strips and the band above it are complete and are quantised.
 *
 * Blend weights are a raised cosine across the band: the two tiles' weights sum to exactly one,
 * and at a four-tile corner the products of the row and column weights do as well.
 */
import type { AxisTile, TilePlan } from './tile-plan.js';

/** Maps a network output value to 0..255 (0..65535 for 16-bit): `value * gain + offset` (then clamp and round). */
export interface OutputMapping {
  gain: number;
  offset: number;
}

/**
 * The one part of compositing that depends on the output's bit depth. Each depth has its own class
 * so every inner loop sees one array type (the 8-bit path stays as fast as before 16-bit existed);
 * they are called once per row run, not per value.
 */
interface Quantiser {
  /** `count` pixels from three float planes (at s, s + plane, s + 2 * plane) into interleaved output at d. */
  planar(data: Float32Array, s: number, plane: number, d: number, count: number): void;
  /** `count` consecutive values of an interleaved float store at s into the output at d. */
  run(src: Float32Array, s: number, d: number, count: number): void;
}

class Quantise8 implements Quantiser {
  readonly #out: Uint8ClampedArray;
  readonly #gain: number;
  readonly #bias: number;

  constructor(output: Uint8Array, mapping: OutputMapping) {
    // A clamped view rounds and clamps on store, which is the quantisation we want, for free.
    this.#out = new Uint8ClampedArray(output.buffer, output.byteOffset, output.length);
    this.#gain = mapping.gain;
    this.#bias = mapping.offset;
  }

  planar(data: Float32Array, s: number, plane: number, d: number, count: number): void {
    const out = this.#out;
    const gain = this.#gain;
    const bias = this.#bias;
    const end = s + count;
    for (; s < end; s += 1, d += 3) {
      out[d] = data[s]! * gain + bias;
      out[d + 1] = data[s + plane]! * gain + bias;
      out[d + 2] = data[s + 2 * plane]! * gain + bias;
    }
  }

  run(src: Float32Array, s: number, d: number, count: number): void {
    const out = this.#out;
    const gain = this.#gain;
    const bias = this.#bias;
    const end = s + count;
    for (; s < end; s += 1, d += 1) out[d] = src[s]! * gain + bias;
  }
}

/** Clamps to 0..65535 and rounds to nearest (there is no clamped 16-bit array to do it on store). */
function to16(v: number): number {
  return v > 0 ? (v < 65535 ? Math.round(v) : 65535) : 0;
}

class Quantise16 implements Quantiser {
  readonly #out: Uint16Array;
  readonly #gain: number;
  readonly #bias: number;

  constructor(output: Uint16Array, mapping: OutputMapping) {
    this.#out = output;
    this.#gain = mapping.gain;
    this.#bias = mapping.offset;
  }

  planar(data: Float32Array, s: number, plane: number, d: number, count: number): void {
    const out = this.#out;
    const gain = this.#gain;
    const bias = this.#bias;
    const end = s + count;
    for (; s < end; s += 1, d += 3) {
      out[d] = to16(data[s]! * gain + bias);
      out[d + 1] = to16(data[s + plane]! * gain + bias);
      out[d + 2] = to16(data[s + 2 * plane]! * gain + bias);
    }
  }

  run(src: Float32Array, s: number, d: number, count: number): void {
    const out = this.#out;
    const gain = this.#gain;
    const bias = this.#bias;
    const end = s + count;
    for (; s < end; s += 1, d += 1) out[d] = to16(src[s]! * gain + bias);
  }
}

/** Weight of the later tile at each output pixel of a feather band `width` output pixels wide. */
export function featherWeights(width: number): Float32Array {
  const weights = new Float32Array(width);
  for (let i = 0; i < width; i += 1) {
    const t = (i + 0.5) / width;
    weights[i] = 0.5 - 0.5 * Math.cos(Math.PI * t);
  }
  return weights;
}

/** An axis tile in output pixels. */
interface Span {
  start: number;
  leadStart: number;
  ownStart: number;
  ownEnd: number;
  trailEnd: number;
}

function scaleSpan(tile: AxisTile, scale: number): Span {
  return {
    start: tile.start * scale,
    leadStart: tile.leadStart * scale,
    ownStart: tile.ownStart * scale,
    ownEnd: tile.ownEnd * scale,
    trailEnd: tile.trailEnd * scale,
  };
}

export class TileCompositor {
  readonly #quantise: Quantiser;
  readonly #outWidth: number;
  readonly #tileW: number;
  readonly #tileH: number;
  readonly #cols: Span[];
  readonly #rows: Span[];
  /** Feather band width in output pixels (the same for every seam). */
  readonly #band: number;
  readonly #up: Float32Array;
  /** Column seams' strips for the current tile row: [ownHeight][seam][band][3]. */
  #strips: Float32Array = new Float32Array(0);
  #stripRow = -1;
  /** Row seam bands by seam index (seam r lies between tile rows r and r + 1): [band][outWidth][3]. */
  readonly #bands = new Map<number, Float32Array>();
  readonly #spare: Float32Array[] = [];
  #next = 0;

  /**
   * @param output interleaved RGB, (plan.width * scale) x (plan.height * scale) x 3, 8-bit
   *   (mapped to 0..255) or 16-bit (mapped to 0..65535); every value of it is written once all
   *   tiles have been added.
   */
  constructor(plan: TilePlan, scale: number, output: Uint8Array | Uint16Array, mapping: OutputMapping) {
    const outWidth = plan.width * scale;
    if (output.length !== outWidth * plan.height * scale * 3) {
      const unit = output instanceof Uint16Array ? '16-bit values' : 'bytes';
      throw new RangeError(
        `Expected output to hold ${outWidth}x${plan.height * scale}x3 ${unit} but received ${output.length}`,
      );
    }
    this.#quantise = output instanceof Uint16Array ? new Quantise16(output, mapping) : new Quantise8(output, mapping);
    this.#outWidth = outWidth;
    this.#tileW = plan.tileWidth * scale;
    this.#tileH = plan.tileHeight * scale;
    this.#cols = plan.cols.map((t) => scaleSpan(t, scale));
    this.#rows = plan.rows.map((t) => scaleSpan(t, scale));
    this.#band = plan.feather * scale;
    this.#up = featherWeights(this.#band);
  }

  /** How many tiles have been added. */
  get added(): number {
    return this.#next;
  }

  /**
   * Adds the output of tile `index` (row-major), read from `data` at `offset` as three planes of
   * tileHeight x tileWidth output pixels.
   */
  add(index: number, data: Float32Array, offset: number): void {
    if (index !== this.#next) {
      throw new RangeError(`Expected tile ${this.#next} next but received tile ${index}`);
    }
    const nCols = this.#cols.length;
    const r = Math.floor(index / nCols);
    const c = index % nCols;
    const row = this.#rows[r];
    const col = this.#cols[c];
    if (row === undefined || col === undefined) {
      throw new RangeError(`Expected a tile index below ${nCols * this.#rows.length} but received ${index}`);
    }
    if (offset + 3 * this.#tileW * this.#tileH > data.length) {
      throw new RangeError(
        `Expected tile data of ${3 * this.#tileW * this.#tileH} values at ${offset} but received ${data.length - offset}`,
      );
    }
    if (r !== this.#stripRow) this.#startRow(r, row);

    this.#writeOwn(data, offset, row, col);
    if (col.leadStart < col.ownStart) this.#addStrip(data, offset, row, col, c - 1, col.leadStart, col.ownStart, false);
    if (col.ownEnd < col.trailEnd) this.#addStrip(data, offset, row, col, c, col.ownEnd, col.trailEnd, true);
    if (row.leadStart < row.ownStart) this.#addBand(data, offset, row, col, r - 1, row.leadStart, row.ownStart, false);
    if (row.ownEnd < row.trailEnd) this.#addBand(data, offset, row, col, r, row.ownEnd, row.trailEnd, true);

    this.#next += 1;
    if (c === nCols - 1) this.#finishRow(r, row);
  }

  #startRow(r: number, row: Span): void {
    this.#stripRow = r;
    const seams = this.#cols.length - 1;
    const size = (row.ownEnd - row.ownStart) * seams * this.#band * 3;
    if (this.#strips.length < size) this.#strips = new Float32Array(size);
    else this.#strips.fill(0, 0, size);
  }

  /** Pixels only this tile covers: quantised straight into the output. */
  #writeOwn(data: Float32Array, offset: number, row: Span, col: Span): void {
    const quantise = this.#quantise;
    const tileW = this.#tileW;
    const plane = tileW * this.#tileH;
    const width = col.ownEnd - col.ownStart;
    for (let y = row.ownStart; y < row.ownEnd; y += 1) {
      const s = offset + (y - row.start) * tileW + (col.ownStart - col.start);
      const d = (y * this.#outWidth + col.ownStart) * 3;
      quantise.planar(data, s, plane, d, width);
    }
  }

  /** Own rows of a column seam band: weighted into the seam's strip. */
  #addStrip(
    data: Float32Array,
    offset: number,
    row: Span,
    col: Span,
    seam: number,
    x0: number,
    x1: number,
    trailing: boolean,
  ): void {
    const strips = this.#strips;
    const up = this.#up;
    const band = this.#band;
    const seams = this.#cols.length - 1;
    const tileW = this.#tileW;
    const plane = tileW * this.#tileH;
    for (let y = row.ownStart; y < row.ownEnd; y += 1) {
      const s0 = offset + (y - row.start) * tileW + (x0 - col.start);
      const d0 = ((y - row.ownStart) * seams + seam) * band * 3;
      for (let i = 0; i < x1 - x0; i += 1) {
        const w = trailing ? 1 - up[i]! : up[i]!;
        const s = s0 + i;
        const d = d0 + i * 3;
        strips[d] = strips[d]! + w * data[s]!;
        strips[d + 1] = strips[d + 1]! + w * data[s + plane]!;
        strips[d + 2] = strips[d + 2]! + w * data[s + 2 * plane]!;
      }
    }
  }

  /** The tile's part of a row seam band, full tile width, weighted by row and column weights. */
  #addBand(
    data: Float32Array,
    offset: number,
    row: Span,
    col: Span,
    seam: number,
    y0: number,
    y1: number,
    trailing: boolean,
  ): void {
    const store = this.#bandStore(seam);
    const up = this.#up;
    const tileW = this.#tileW;
    const plane = tileW * this.#tileH;
    const outWidth = this.#outWidth;
    for (let y = y0; y < y1; y += 1) {
      const wy = trailing ? 1 - up[y - y0]! : up[y - y0]!;
      const sRow = offset + (y - row.start) * tileW - col.start;
      const dRow = (y - y0) * outWidth;
      for (let x = col.leadStart; x < col.trailEnd; x += 1) {
        let w = wy;
        if (x < col.ownStart) w *= up[x - col.leadStart]!;
        else if (x >= col.ownEnd) w *= 1 - up[x - col.ownEnd]!;
        const s = sRow + x;
        const d = (dRow + x) * 3;
        store[d] = store[d]! + w * data[s]!;
        store[d + 1] = store[d + 1]! + w * data[s + plane]!;
        store[d + 2] = store[d + 2]! + w * data[s + 2 * plane]!;
      }
    }
  }

  #bandStore(seam: number): Float32Array {
    let store = this.#bands.get(seam);
    if (store === undefined) {
      store = this.#spare.pop() ?? new Float32Array(this.#band * this.#outWidth * 3);
      store.fill(0);
      this.#bands.set(seam, store);
    }
    return store;
  }

  /** Row r is complete: its strips and the row seam above it hold their final values. */
  #finishRow(r: number, row: Span): void {
    const quantise = this.#quantise;
    const band = this.#band;
    const seams = this.#cols.length - 1;
    const outWidth = this.#outWidth;
    const strips = this.#strips;
    if (band > 0 && seams > 0) {
      for (let c = 0; c < seams; c += 1) {
        const x0 = (this.#cols[c] as Span).ownEnd;
        for (let y = row.ownStart; y < row.ownEnd; y += 1) {
          const s = ((y - row.ownStart) * seams + c) * band * 3;
          const d = (y * outWidth + x0) * 3;
          quantise.run(strips, s, d, band * 3);
        }
      }
    }
    const above = this.#bands.get(r - 1);
    if (above !== undefined) {
      quantise.run(above, 0, row.leadStart * outWidth * 3, band * outWidth * 3);
      this.#bands.delete(r - 1);
      this.#spare.push(above);
    }
  }
}
