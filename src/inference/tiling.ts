/**
 * Tiled super-resolution of an 8-bit or 16-bit RGB image: seamless (a tiled result equals the
 * untiled one within one level when the overlap covers the network's receptive field), batched,
 * bounded in memory (the output is written tile by tile into its 8-bit or 16-bit buffer, see
 * blend.ts), and resilient to running out of memory (a failing batch is retried smaller, then with
 * tiles of half the side).
 *
 * Float32 planar data exists only for the batch being run: tiles are converted from interleaved
 * uint8 (or uint16) just before the call and back just after it. The 16-bit path (upscaleRgb16)
 * never passes through 8 bits: 0..65535 maps onto the network's range and its float output is
 * quantised straight to 16 bits. Each depth has its own gather and quantise loops, so the 8-bit
 * path runs exactly the loops it ran before the 16-bit one existed.
 */
import { ProcessingError, errorMessage, isJobError } from '../errors.js';
import { type OutputMapping, TileCompositor } from './blend.js';
import type { Nchw, TensorRunner, WarnLogger } from './session.js';
import { type TilePlan, planTiles } from './tile-plan.js';

/** A super-resolution network: NCHW RGB in, NCHW RGB out, `scale` times larger on each axis. */
export interface SrModel extends TensorRunner {
  readonly scale: number;
  /** The values the network uses for black and white; default [0, 255]. */
  readonly range?: readonly [number, number];
}

export interface RgbImage {
  /** Interleaved 8-bit RGB, row-major, no padding between rows. */
  data: Uint8Array;
  width: number;
  height: number;
  channels: 3;
}

export interface RgbImage16 {
  /** Interleaved 16-bit RGB (0..65535), row-major, no padding between rows. */
  data: Uint16Array;
  width: number;
  height: number;
  channels: 3;
}

/** How a tiled upscale went, whatever the bit depth. */
export interface TilingStats {
  /** Tile side that finished the job (smaller than asked after running out of memory). */
  tile: number;
  /** The tile shape every call used, after fitting the tile to the image. */
  tileWidth: number;
  tileHeight: number;
  /** Batch size that finished the job. */
  batch: number;
  /** Tiles run in the final pass. */
  tiles: number;
  /** Times a batch was retried smaller after running out of memory. */
  retries: number;
}

export interface UpscaleResult extends RgbImage, TilingStats {}

export interface UpscaleResult16 extends RgbImage16, TilingStats {}

export interface UpscaleOptions {
  /** Tile side in input pixels; an image smaller than this on an axis is one tile on that axis. */
  tile: number;
  /**
   * Context pixels on each inner side of a tile, run but discarded; at least the network's
   * receptive radius for a result identical to an untiled run (measured per model: docs/benchmarks.md).
   */
  overlap: number;
  /** Band between neighbouring tiles' kept parts that is blended, input pixels. Default: min(overlap, 4). */
  feather?: number;
  /**
   * Shrink the tile to the fewest tiles that cover the image (one shape per image, a multiple of 8);
   * false keeps exactly `tile` on any axis longer than it. Default true.
   */
  fitTile?: boolean;
  /** Tiles per network call. Default 1. */
  batch?: number;
  /** Pad the last batch to the full batch size so the input shape never changes (TensorRT, CUDA graphs). */
  fixedBatch?: boolean;
  /** Smallest tile side an out-of-memory retry may go down to. Default 32. */
  minTile?: number;
  /** Checked before every batch; the rejection is the signal's reason (an AbortError by default). */
  signal?: AbortSignal;
  /**
   * Called with (0, total) when a pass starts and after every batch. After an out-of-memory retry
   * with a smaller tile a new pass starts: `tilesTotal` grows and `tilesDone` starts again from 0.
   */
  onProgress?: (tilesDone: number, tilesTotal: number) => void;
  logger?: WarnLogger;
}

/** A super-resolution model from a session and what its manifest says about it. */
export function srModel(runner: TensorRunner, scale: number, range?: readonly [number, number]): SrModel {
  return { scale, ...(range === undefined ? {} : { range }), run: (input, dims) => runner.run(input, dims) };
}

const OUT_OF_MEMORY = /bad_alloc|out of memory|failed to allocate/i;

/** True for ONNX Runtime's (and CUDA's) allocation failures, which retrying smaller can cure. */
export function isOutOfMemoryError(error: unknown): boolean {
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return OUT_OF_MEMORY.test(text);
}

/**
 * The feather used when none is given. With an overlap that covers the receptive field a hard cut
 * is already invisible; a few blended pixels cost little and spread what a too-small overlap leaves
 * over a band instead of a step along a line.
 */
export function defaultFeather(overlap: number): number {
  return Math.min(overlap, 4);
}

/** What differs between the 8-bit and the 16-bit path: the top value, the buffer and the gather loop. */
interface Depth<T extends Uint8Array | Uint16Array> {
  readonly max: number;
  readonly unit: string;
  allocate(length: number): T;
  gather: (
    src: T,
    srcWidth: number,
    x0: number,
    y0: number,
    tw: number,
    th: number,
    dst: Float32Array,
    offset: number,
    gain: number,
    bias: number,
  ) => void;
}

const DEPTH8: Depth<Uint8Array> = { max: 255, unit: 'bytes', allocate: (n) => new Uint8Array(n), gather: gatherTile };
const DEPTH16: Depth<Uint16Array> = {
  max: 65535,
  unit: '16-bit values',
  allocate: (n) => new Uint16Array(n),
  gather: gatherTile16,
};

/** Upscales interleaved 8-bit RGB; the result is 8-bit. */
export async function upscaleRgb(model: SrModel, image: RgbImage, options: UpscaleOptions): Promise<UpscaleResult> {
  return upscaleTiled(model, image, options, DEPTH8);
}

/**
 * Upscales interleaved 16-bit RGB (one HDR video frame, one 16-bit PNG): 0..65535 in, the network
 * in float, its output quantised to 0..65535. Same options and tiling as upscaleRgb.
 */
export async function upscaleRgb16(
  model: SrModel,
  image: RgbImage16,
  options: UpscaleOptions,
): Promise<UpscaleResult16> {
  return upscaleTiled(model, image, options, DEPTH16);
}

async function upscaleTiled<T extends Uint8Array | Uint16Array>(
  model: SrModel,
  image: { data: T; width: number; height: number; channels: 3 },
  options: UpscaleOptions,
  depth: Depth<T>,
): Promise<{ data: T; width: number; height: number; channels: 3 } & TilingStats> {
  const { width, height, data } = image;
  const scale = model.scale;
  requireInteger('scale', scale, 1);
  requireInteger('width', width, 1);
  requireInteger('height', height, 1);
  if (image.channels !== 3 || data.length !== width * height * 3) {
    throw new RangeError(
      `Expected image data to be ${width}x${height}x3 ${depth.unit} of interleaved RGB but received ${data.length} ${depth.unit} with ${String(image.channels)} channels`,
    );
  }
  const overlap = options.overlap;
  const feather = options.feather ?? defaultFeather(overlap);
  let tile = options.tile;
  let batch = options.batch ?? 1;
  requireInteger('batch', batch, 1);
  const minTile = options.minTile ?? 32;
  const [lo, hi] = model.range ?? [0, 255];
  if (!(hi > lo)) throw new RangeError(`Expected model range to be increasing but received [${lo}, ${hi}]`);
  const top = depth.max;
  const inGain = (hi - lo) / top;
  const mapping: OutputMapping = { gain: top / (hi - lo), offset: (-lo * top) / (hi - lo) };
  const gather = depth.gather;

  const output = depth.allocate(width * scale * height * scale * 3);
  let retries = 0;

  for (;;) {
    const plan = planTiles({ width, height, tile, overlap, feather, fit: options.fitTile ?? true });
    const outcome = await runPlan(plan);
    if (outcome === 'done') {
      return {
        data: output,
        width: width * scale,
        height: height * scale,
        channels: 3,
        tile,
        tileWidth: plan.tileWidth,
        tileHeight: plan.tileHeight,
        batch,
        tiles: plan.count,
        retries,
      };
    }
    // batch 1 ran out of memory: halve the tile and start over (tiles of the old shape cannot be reused).
    const next = Math.floor(Math.max(plan.tileWidth, plan.tileHeight) / 2);
    const smallest = Math.max(minTile, 2 * overlap + 3 * feather + 1);
    if (next < smallest) {
      throw new ProcessingError(
        `Out of memory even with one ${plan.tileWidth}x${plan.tileHeight} tile per call (smallest tile allowed: ${smallest})`,
        { retryable: true, cause: outcome.cause },
      );
    }
    options.logger?.warn(
      { tile: next, previousTile: tile, err: outcome.cause },
      `out of memory at tile ${tile}; retrying with tile ${next}`,
    );
    tile = next;
    retries += 1;
  }

  async function runPlan(plan: TilePlan): Promise<'done' | { cause: unknown }> {
    const compositor = new TileCompositor(plan, scale, output, mapping);
    const tw = plan.tileWidth;
    const th = plan.tileHeight;
    const tileValues = 3 * tw * th;
    const outValues = tileValues * scale * scale;
    let size = Math.min(batch, plan.count);
    const input = new Float32Array(size * tileValues);
    options.onProgress?.(0, plan.count);

    let k = 0;
    while (k < plan.count) {
      options.signal?.throwIfAborted();
      const n = Math.min(size, plan.count - k);
      const runN = options.fixedBatch ? size : n;
      for (let j = 0; j < n; j += 1) {
        const index = k + j;
        const col = plan.cols[index % plan.cols.length]!;
        const row = plan.rows[Math.floor(index / plan.cols.length)]!;
        gather(data, width, col.start, row.start, tw, th, input, j * tileValues, inGain, lo);
      }
      let result: { data: Float32Array; dims: readonly number[] };
      try {
        const dims: Nchw = [runN, 3, th, tw];
        result = await model.run(input.subarray(0, runN * tileValues), dims);
      } catch (error) {
        if (
          isJobError(error) ||
          error instanceof ProcessingError ||
          (error instanceof Error && error.name === 'AbortError')
        )
          throw error;
        if (!isOutOfMemoryError(error)) {
          throw new ProcessingError(
            `Super-resolution failed on tile ${k + 1} of ${plan.count}: ${errorMessage(error)}`,
            {
              cause: error,
            },
          );
        }
        if (size === 1) return { cause: error };
        retries += 1;
        const smaller = Math.floor(size / 2);
        options.logger?.warn(
          { batch: smaller, previousBatch: size, tile, err: error },
          `out of memory at batch ${size}; retrying with batch ${smaller}`,
        );
        size = smaller;
        batch = smaller;
        continue;
      }
      const [b, c, h, w] = result.dims;
      if (
        c !== 3 ||
        h !== th * scale ||
        w !== tw * scale ||
        b === undefined ||
        b < n ||
        result.data.length < n * outValues
      ) {
        throw new ProcessingError(
          `Expected the model to return [${runN}, 3, ${th * scale}, ${tw * scale}] for scale ${scale} but received [${result.dims.join(', ')}]`,
        );
      }
      for (let j = 0; j < n; j += 1) compositor.add(k + j, result.data, j * outValues);
      k += n;
      options.onProgress?.(k, plan.count);
    }
    return 'done';
  }
}

/** One tile of interleaved uint8 RGB into three float planes at `offset`: value * gain + bias. */
export function gatherTile(
  src: Uint8Array,
  srcWidth: number,
  x0: number,
  y0: number,
  tw: number,
  th: number,
  dst: Float32Array,
  offset: number,
  gain: number,
  bias: number,
): void {
  const plane = tw * th;
  let d = offset;
  for (let y = 0; y < th; y += 1) {
    let s = ((y0 + y) * srcWidth + x0) * 3;
    const end = d + tw;
    for (; d < end; d += 1, s += 3) {
      dst[d] = src[s]! * gain + bias;
      dst[d + plane] = src[s + 1]! * gain + bias;
      dst[d + 2 * plane] = src[s + 2]! * gain + bias;
    }
  }
}

/** gatherTile for interleaved uint16 RGB (a loop of its own, so each sees one array type). */
export function gatherTile16(
  src: Uint16Array,
  srcWidth: number,
  x0: number,
  y0: number,
  tw: number,
  th: number,
  dst: Float32Array,
  offset: number,
  gain: number,
  bias: number,
): void {
  const plane = tw * th;
  let d = offset;
  for (let y = 0; y < th; y += 1) {
    let s = ((y0 + y) * srcWidth + x0) * 3;
    const end = d + tw;
    for (; d < end; d += 1, s += 3) {
      dst[d] = src[s]! * gain + bias;
      dst[d + plane] = src[s + 1]! * gain + bias;
      dst[d + 2 * plane] = src[s + 2]! * gain + bias;
    }
  }
}

function requireInteger(name: string, value: number, min: number): void {
  if (!Number.isInteger(value) || value < min) {
    throw new RangeError(`Expected ${name} to be an integer of at least ${min} but received ${String(value)}`);
  }
}
