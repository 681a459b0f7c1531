/**
 * The tiling engine against a JavaScript stand-in network whose receptive field is known exactly
 * (tile-fixtures.ts): fast enough for many tile shapes, and a tiled run that covers the receptive
 * field must equal the untiled run byte for byte.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { JobError, ProcessingError } from '../../src/errors.js';
import type { Nchw } from '../../src/inference/session.js';
import { type RgbImage, type SrModel, isOutOfMemoryError, upscaleRgb } from '../../src/inference/tiling.js';
import { boxBlurModel, maxAbsDiff, photoCrop, warnRecorder } from './tile-fixtures.js';

const RADIUS = 3;
let image: RgbImage;
let reference: Uint8Array;

beforeAll(async () => {
  // 61 x 47: odd sizes that no tile below divides.
  image = await photoCrop('astronaut.png', 180, 90, 61, 47);
  reference = (await upscaleRgb(boxBlurModel(2, RADIUS), image, { tile: 1024, overlap: 0 })).data;
});

/** Wraps a model so that any call over `maxPixels` (batch x height x width) fails like ONNX Runtime does. */
function failingAbove(model: SrModel, maxPixels: number): SrModel & { calls: Nchw[] } {
  const calls: Nchw[] = [];
  return {
    scale: model.scale,
    calls,
    run(input, dims) {
      calls.push(dims);
      if (dims[0] * dims[2] * dims[3] > maxPixels) {
        return Promise.reject(
          new Error(
            '[ONNXRuntimeError] : 6 : RUNTIME_EXCEPTION : Failed to allocate memory for requested buffer of size 4194304',
          ),
        );
      }
      return model.run(input, dims);
    },
  };
}

describe('upscaleRgb with a stand-in network', () => {
  it('the untiled reference is really one call of the whole image', async () => {
    const model = boxBlurModel(2, RADIUS);
    const result = await upscaleRgb(model, image, { tile: 64, overlap: RADIUS });
    expect(model.calls).toEqual([[1, 3, 47, 61]]);
    expect([result.width, result.height, result.channels, result.tiles]).toEqual([122, 94, 3, 1]);
    expect([result.tile, result.tileWidth, result.tileHeight]).toEqual([64, 61, 47]);
    expect(result.data).toEqual(reference);
  });

  it.each([
    [16, 0],
    [16, 2],
    [20, 1],
    [25, 4],
    [32, 0],
    [33, 3],
    [47, 4],
  ])('tile %i with feather %i equals the untiled result byte for byte', async (tile, feather) => {
    const model = boxBlurModel(2, RADIUS);
    const result = await upscaleRgb(model, image, { tile, overlap: RADIUS, feather });
    expect(result.tiles).toBeGreaterThan(1);
    expect(maxAbsDiff(result.data, reference)).toBe(0);
    // One tile shape for every call, edge tiles included, never larger than asked.
    const shapes = new Set(model.calls.map((d) => `${d[1]}x${d[2]}x${d[3]}`));
    expect(shapes.size).toBe(1);
    expect(model.calls.every((d) => d[1] === 3 && d[2] <= tile && d[3] <= tile)).toBe(true);
  });

  it('shows seams when the overlap is smaller than the receptive field (the check can fail)', async () => {
    // Tile 16 without overlap: neighbours share a single pixel, so the blur sees tile edges.
    const result = await upscaleRgb(boxBlurModel(2, RADIUS), image, { tile: 16, overlap: 0, feather: 0 });
    expect(maxAbsDiff(result.data, reference)).toBeGreaterThan(1);
  });

  it('scale 4 and a 0..1 network range give the nearest-neighbour image for a radius-0 network', async () => {
    const result = await upscaleRgb(boxBlurModel(4, 0, [0, 1]), image, { tile: 24, overlap: 2 });
    let mismatches = 0;
    for (let y = 0; y < result.height; y += 1) {
      for (let x = 0; x < result.width; x += 1) {
        for (let c = 0; c < 3; c += 1) {
          const want = image.data[((y >> 2) * image.width + (x >> 2)) * 3 + c];
          if (result.data[(y * result.width + x) * 3 + c] !== want) mismatches += 1;
        }
      }
    }
    expect([result.width, result.height]).toEqual([244, 188]);
    expect(mismatches).toBe(0);
  });

  it.each([1, 3, 4])('batch %i gives the same bytes, one call per batch', async (batch) => {
    const model = boxBlurModel(2, RADIUS);
    const result = await upscaleRgb(model, image, { tile: 20, overlap: RADIUS, batch });
    expect(result.data).toEqual(reference);
    expect(model.calls.length).toBe(Math.ceil(result.tiles / batch));
    expect(model.calls.every((d) => d[0] <= batch)).toBe(true);
    expect(model.calls.slice(0, -1).every((d) => d[0] === batch)).toBe(true);
  });

  it('fixedBatch pads the last batch so the input shape never changes', async () => {
    const model = boxBlurModel(2, RADIUS);
    const result = await upscaleRgb(model, image, { tile: 20, overlap: RADIUS, batch: 3, fixedBatch: true });
    expect(result.tiles % 3).not.toBe(0);
    expect(new Set(model.calls.map((d) => d.join('x')))).toEqual(new Set(['3x3x20x20']));
    expect(result.data).toEqual(reference);
  });

  it('reports progress from 0 to every tile, once per batch', async () => {
    const seen: [number, number][] = [];
    const result = await upscaleRgb(boxBlurModel(2, RADIUS), image, {
      tile: 24,
      overlap: RADIUS,
      batch: 2,
      onProgress: (done, total) => seen.push([done, total]),
    });
    const total = result.tiles;
    expect(seen[0]).toEqual([0, total]);
    expect(seen[seen.length - 1]).toEqual([total, total]);
    expect(seen.length).toBe(1 + Math.ceil(total / 2));
    expect(seen.every(([done], i) => i === 0 || done > seen[i - 1]![0])).toBe(true);
  });
});

describe('out of memory', () => {
  it.each([
    ['bad_alloc', 'std::bad_alloc', true],
    ['CUDA', 'CUDA failure 2: out of memory ; GPU=0', true],
    ['ORT allocator', 'Failed to allocate memory for requested buffer of size 42', true],
    ['anything else', 'Invalid input shape: {1,3,0,4}', false],
    ['a room', 'no room for doubt', false],
  ])('recognises %s', (_name, text, expected) => {
    expect(isOutOfMemoryError(new Error(text))).toBe(expected);
  });

  it('halves the batch and keeps the smaller batch for the rest of the image', async () => {
    const logger = warnRecorder();
    const model = failingAbove(boxBlurModel(2, RADIUS), 2 * 20 * 20);
    const result = await upscaleRgb(model, image, { tile: 20, overlap: RADIUS, batch: 4, logger });
    expect(result.data).toEqual(reference);
    expect([result.batch, result.tile, result.retries]).toEqual([2, 20, 1]);
    expect(model.calls[0]![0]).toBe(4);
    expect(model.calls.slice(1).every((d) => d[0] <= 2)).toBe(true);
    expect(logger.lines.map((l) => l.msg)).toEqual(['out of memory at batch 4; retrying with batch 2']);
  });

  it('halves the tile when one tile per call is still too much, and the result stays exact', async () => {
    const logger = warnRecorder();
    const model = failingAbove(boxBlurModel(2, RADIUS), 24 * 24);
    const result = await upscaleRgb(model, image, { tile: 48, overlap: RADIUS, batch: 2, minTile: 16, logger });
    expect(result.data).toEqual(reference);
    // The image fitted tile 48 as 40 x 47: halving starts from the larger side.
    expect(model.calls[0]).toEqual([2, 3, 47, 40]);
    expect([result.batch, result.tile, result.retries]).toEqual([1, 23, 2]);
    expect(logger.lines.map((l) => l.msg)).toEqual([
      'out of memory at batch 2; retrying with batch 1',
      'out of memory at tile 48; retrying with tile 23',
    ]);
  });

  it('fails with a retryable processing error once the tile cannot shrink further', async () => {
    const model = failingAbove(boxBlurModel(2, RADIUS), 10);
    const error = await upscaleRgb(model, image, { tile: 40, overlap: RADIUS, minTile: 16 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProcessingError);
    expect(error).toMatchObject({ retryable: true });
    expect((error as ProcessingError).message).toBe(
      'Out of memory even with one 20x20 tile per call (smallest tile allowed: 16)',
    );
    // 40 -> 20 -> (10 is below the minimum): two tile widths tried.
    expect(new Set(model.calls.map((d) => d[3]))).toEqual(new Set([40, 20]));
  });

  it('does not retry other failures', async () => {
    const model: SrModel = { scale: 2, run: () => Promise.reject(new Error('Invalid rank for input')) };
    const error = await upscaleRgb(model, image, { tile: 20, overlap: RADIUS }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProcessingError);
    expect(error).toMatchObject({ retryable: false });
    expect((error as ProcessingError).message).toMatch(
      /^Super-resolution failed on tile 1 of \d+: Invalid rank for input$/,
    );
  });
});

describe('errors from the network', () => {
  it.each([
    ['a JobError', new JobError('INTERNAL_ERROR', 'session released')],
    ['an AbortError', new DOMException('stopped', 'AbortError')],
  ])('passes %s through unchanged', async (_name, thrown) => {
    const model: SrModel = { scale: 2, run: () => Promise.reject(thrown) };
    await expect(upscaleRgb(model, image, { tile: 20, overlap: RADIUS })).rejects.toBe(thrown);
  });
});

describe('cancellation and bad input', () => {
  it('stops between batches when the signal aborts', async () => {
    const controller = new AbortController();
    const model = boxBlurModel(2, RADIUS);
    const run = upscaleRgb(model, image, {
      tile: 20,
      overlap: RADIUS,
      signal: controller.signal,
      onProgress: (done) => {
        if (done === 1) controller.abort();
      },
    });
    await expect(run).rejects.toMatchObject({ name: 'AbortError' });
    expect(model.calls.length).toBe(1);
  });

  it('does not start when the signal is already aborted', async () => {
    const model = boxBlurModel(2, RADIUS);
    const reason = new Error('job cancelled');
    await expect(
      upscaleRgb(model, image, { tile: 20, overlap: RADIUS, signal: AbortSignal.abort(reason) }),
    ).rejects.toBe(reason);
    expect(model.calls.length).toBe(0);
  });

  it('rejects pixel data that does not match the size', async () => {
    const bad = { ...image, data: image.data.subarray(1) };
    await expect(upscaleRgb(boxBlurModel(2, 0), bad, { tile: 20, overlap: 0 })).rejects.toThrow(
      `Expected image data to be 61x47x3 bytes of interleaved RGB but received ${image.data.length - 1} bytes with 3 channels`,
    );
  });

  it('rejects a model whose output is not scale times the tile', async () => {
    const model = { ...boxBlurModel(4, 0), scale: 2 };
    await expect(upscaleRgb(model, image, { tile: 20, overlap: 0 })).rejects.toThrow(
      'Expected the model to return [1, 3, 32, 32] for scale 2 but received [1, 3, 64, 64]',
    );
  });
});
