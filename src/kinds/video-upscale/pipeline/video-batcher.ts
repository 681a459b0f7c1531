/**
 * Tile batching across frames. Several frames are upscaled at once, each by its own `upscaleRgb`
 * call; this wrapper is the network they all share. It runs one call at a time, and whatever
 * requests arrived while a call was running go into the next call together (same tile shape only),
 * up to `maxTiles` tiles.
 *
 * Nothing waits for a batch to fill: when the network is the bottleneck (a GPU fed small frames)
 * requests pile up during each call and batches grow to the number of frames in flight; when the
 * JavaScript around it is (gathering and blending tiles), each request runs as soon as it comes and
 * the frames simply take turns, one frame's tiles on the network while the next is being prepared.
 *
 * A combined call that fails is retried request by request, so an out-of-memory error caused by the
 * combination reaches no frame, and a frame's own failure reaches only that frame.
 */
import {
  type Nchw,
  type SrModel,
  type TensorOutput,
  type UpscaleOptions,
  upscaleRgb,
  upscaleRgb16,
} from '../../../inference/index.js';

/** An upscaled frame, interleaved RGB at the frames' depth (8 bits per sample, or 16). */
export interface UpscaledFrame {
  data: Uint8Array | Uint16Array;
}

/**
 * One frame from the decoder's pipe (rgb24, or rgb48le for a 16-bit plan) through the network,
 * returned in the same layout for the encoder's pipe. 16-bit frames go through the 16-bit tiling
 * path (the network in float, quantised straight to 16 bits): never through 8 bits. rgb48le is
 * little-endian, as a Uint16Array reads it on the x86 and ARM hosts the worker runs on.
 */
export async function upscaleFrame(
  model: SrModel,
  frame: Buffer,
  size: { width: number; height: number },
  depth: 8 | 16,
  options: UpscaleOptions,
): Promise<UpscaledFrame> {
  if (depth === 8) return upscaleRgb(model, { data: frame, ...size, channels: 3 }, options);
  // A Uint16Array view needs an even byte offset; a pipe's chunk may not give one.
  const data =
    frame.byteOffset % 2 === 0 ? new Uint16Array(frame.buffer, frame.byteOffset, frame.byteLength / 2) : copy16(frame);
  return upscaleRgb16(model, { data, ...size, channels: 3 }, options);
}

function copy16(frame: Buffer): Uint16Array {
  const data = new Uint16Array(frame.byteLength / 2);
  frame.copy(Buffer.from(data.buffer));
  return data;
}

interface Request {
  input: Float32Array;
  dims: Nchw;
  resolve: (output: TensorOutput) => void;
  reject: (error: unknown) => void;
}

export interface BatcherStats {
  /** Network calls made. */
  calls: number;
  /** Tiles run (sum of batch sizes). */
  tiles: number;
  /** Largest batch of one call. */
  largestBatch: number;
  /** Milliseconds spent inside the network's run. */
  runMs: number;
}

export class TileBatcher implements SrModel {
  readonly scale: number;
  readonly range?: readonly [number, number];
  readonly stats: BatcherStats = { calls: 0, tiles: 0, largestBatch: 0, runMs: 0 };
  readonly #inner: SrModel;
  readonly #maxTiles: number;
  readonly #pending: Request[] = [];
  #running = false;

  constructor(inner: SrModel, maxTiles: number) {
    if (!Number.isInteger(maxTiles) || maxTiles < 1) {
      throw new RangeError(`Expected the batch limit to be an integer of at least 1 but received ${String(maxTiles)}`);
    }
    this.#inner = inner;
    this.#maxTiles = maxTiles;
    this.scale = inner.scale;
    if (inner.range !== undefined) this.range = inner.range;
  }

  run(input: Float32Array, dims: Nchw): Promise<TensorOutput> {
    return new Promise<TensorOutput>((resolve, reject) => {
      this.#pending.push({ input, dims, resolve, reject });
      if (!this.#running) void this.#drain();
    });
  }

  async #drain(): Promise<void> {
    this.#running = true;
    try {
      for (let group = this.#take(); group.length > 0; group = this.#take()) {
        await this.#runGroup(group);
      }
    } finally {
      this.#running = false;
    }
  }

  /** The oldest request and the later ones of the same tile shape that fit in one call. */
  #take(): Request[] {
    const first = this.#pending[0];
    if (first === undefined) return [];
    const [, c, h, w] = first.dims;
    const group: Request[] = [];
    let tiles = 0;
    for (let i = 0; i < this.#pending.length;) {
      const request = this.#pending[i]!;
      const [n, rc, rh, rw] = request.dims;
      const fits = group.length === 0 || tiles + n <= this.#maxTiles;
      if (rc === c && rh === h && rw === w && fits) {
        group.push(request);
        tiles += n;
        this.#pending.splice(i, 1);
      } else {
        i += 1;
      }
    }
    return group;
  }

  async #runGroup(group: Request[]): Promise<void> {
    if (group.length === 1) {
      const only = group[0]!;
      await this.#call(only.input, only.dims).then(only.resolve, only.reject);
      return;
    }
    const [, c, h, w] = group[0]!.dims;
    const total = group.reduce((sum, r) => sum + r.dims[0], 0);
    const input = new Float32Array(group.reduce((sum, r) => sum + r.input.length, 0));
    let offset = 0;
    for (const request of group) {
      input.set(request.input, offset);
      offset += request.input.length;
    }
    let output: TensorOutput;
    try {
      output = await this.#call(input, [total, c, h, w]);
    } catch {
      for (const request of group) await this.#call(request.input, request.dims).then(request.resolve, request.reject);
      return;
    }
    const [outN, ...outRest] = output.dims;
    const perTile = outN !== undefined && outN > 0 ? output.data.length / outN : 0;
    let start = 0;
    for (const request of group) {
      const n = request.dims[0];
      // Each frame gets its own copy: the combined buffer would otherwise stay alive as long as any of them.
      const data = output.data.slice(start * perTile, (start + n) * perTile);
      request.resolve({ data, dims: [n, ...outRest] });
      start += n;
    }
  }

  async #call(input: Float32Array, dims: Nchw): Promise<TensorOutput> {
    const started = performance.now();
    try {
      return await this.#inner.run(input, dims);
    } finally {
      this.stats.calls += 1;
      this.stats.tiles += dims[0];
      this.stats.largestBatch = Math.max(this.stats.largestBatch, dims[0]);
      this.stats.runMs += performance.now() - started;
    }
  }
}
