/**
 * Tiling with the real converted ESRGAN networks on crops of real photos: a tiled upscale equals
 * the untiled one within 1/255 on every pixel, at tile sizes that do not divide the image.
 * Crops stay small: these run the real networks on a 2-core CI machine.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SuperResolutionManifest } from '../../src/inference/manifest.js';
import { ensureModelFile } from '../../src/inference/model-registry.js';
import { SessionCache } from '../../src/inference/session.js';
import { type RgbImage, type SrModel, upscaleRgb } from '../../src/inference/tiling.js';
import { maxAbsDiff, photoCrop } from './tile-fixtures.js';

const sessions = new SessionCache();

async function loadModel(name: string): Promise<SrModel & { calls: number }> {
  const { manifest, path } = await ensureModelFile(name);
  if (manifest.task !== 'super-resolution') throw new Error(`Expected ${name} to be a super-resolution model`);
  const sr = manifest as SuperResolutionManifest;
  const session = await sessions.get(path);
  const model = {
    scale: sr.scale,
    range: sr.input.range,
    calls: 0,
    run: (input: Float32Array, dims: readonly [number, number, number, number]) => {
      model.calls += 1;
      return session.run(input, dims);
    },
  };
  return model;
}

const PHOTOS: [string, number, number, number, number][] = [
  // file, left, top, width, height: odd sizes, textured regions (hair, fabric, beans, fur)
  ['astronaut.png', 150, 40, 83, 71],
  ['coffee.png', 260, 120, 77, 64],
  ['chelsea.png', 130, 60, 90, 67],
];

let crops: RgbImage[];

beforeAll(async () => {
  crops = await Promise.all(PHOTOS.map(([file, left, top, w, h]) => photoCrop(file, left, top, w, h)));
});

afterAll(async () => {
  await sessions.release();
});

describe.each([
  ['esrgan-slim-x2', 8],
  ['esrgan-slim-x4', 8],
])('%s, overlap %i', (name, overlap) => {
  let model: SrModel;
  const untiled: Uint8Array[] = [];

  beforeAll(async () => {
    model = await loadModel(name);
    for (const image of crops) untiled.push((await upscaleRgb(model, image, { tile: 1024, overlap })).data);
  });

  it.each([32, 48, 50])('tile %i equals the untiled result within 1 on every pixel of every photo', async (tile) => {
    for (const [i, image] of crops.entries()) {
      const result = await upscaleRgb(model, image, { tile, overlap });
      expect(result.tiles, PHOTOS[i]![0]).toBeGreaterThan(1);
      expect([result.width, result.height]).toEqual([image.width * model.scale, image.height * model.scale]);
      expect(maxAbsDiff(result.data, untiled[i]!), `${PHOTOS[i]![0]} at tile ${tile}`).toBeLessThanOrEqual(1);
    }
  });

  it('a hard cut without overlap does leave seams (so the comparison above can fail)', async () => {
    const result = await upscaleRgb(model, crops[0]!, { tile: 32, overlap: 0, feather: 0 });
    expect(maxAbsDiff(result.data, untiled[0]!)).toBeGreaterThan(1);
  });
});

describe('esrgan-medium-x4', () => {
  it('tile 40 with overlap 12 equals the untiled result within 1', async () => {
    const model = await loadModel('esrgan-medium-x4');
    const image = crops[1]!;
    const untiled = await upscaleRgb(model, image, { tile: 1024, overlap: 12 });
    const tiled = await upscaleRgb(model, image, { tile: 40, overlap: 12 });
    expect(tiled.tiles).toBeGreaterThan(1);
    expect(maxAbsDiff(tiled.data, untiled.data)).toBeLessThanOrEqual(1);
  });
});

describe('batches, memory retries and cancellation with esrgan-slim-x2', () => {
  let model: SrModel & { calls: number };
  let image: RgbImage;
  let reference: Uint8Array;

  beforeAll(async () => {
    model = await loadModel('esrgan-slim-x2');
    image = crops[2]!;
    reference = (await upscaleRgb(model, image, { tile: 40, overlap: 8, batch: 1 })).data;
  });

  it('batch 4 gives the same bytes as batch 1, in a quarter of the calls', async () => {
    const before = model.calls;
    const result = await upscaleRgb(model, image, { tile: 40, overlap: 8, batch: 4 });
    expect(result.data).toEqual(reference);
    expect(model.calls - before).toBe(Math.ceil(result.tiles / 4));
  });

  it('retries a batch that runs out of memory smaller, then with half the tile, and still gets it right', async () => {
    const calls: string[] = [];
    const tight: SrModel = {
      scale: model.scale,
      run(input, dims) {
        calls.push(dims.join('x'));
        // Fails as ONNX Runtime's CPU allocator does past a budget of 45 x 45 pixels per call.
        if (dims[0] * dims[2] * dims[3] > 45 * 45) {
          return Promise.reject(new Error('Failed to allocate memory for requested buffer of size 20971520'));
        }
        return model.run(input, dims);
      },
    };
    // 90 x 67 fits one tile of 96; halving gives tile 45, then batch 4 -> 2 -> 1.
    const result = await upscaleRgb(tight, image, { tile: 96, overlap: 8, batch: 4 });
    expect(calls.slice(0, 5)).toEqual(['1x3x67x90', '4x3x45x45', '2x3x45x45', '1x3x45x45', '1x3x45x45']);
    expect([result.tile, result.batch, result.retries]).toEqual([45, 1, 3]);
    const untiled = await upscaleRgb(model, image, { tile: 1024, overlap: 8 });
    expect(maxAbsDiff(result.data, untiled.data)).toBeLessThanOrEqual(1);
  });

  it('stops at the next batch when aborted', async () => {
    const controller = new AbortController();
    const before = model.calls;
    const run = upscaleRgb(model, image, {
      tile: 32,
      overlap: 8,
      batch: 2,
      signal: controller.signal,
      onProgress: (done) => {
        if (done >= 2) controller.abort();
      },
    });
    await expect(run).rejects.toMatchObject({ name: 'AbortError' });
    expect(model.calls - before).toBe(1);
  });
});

describe('realesrgan-x4fast at its manifest overlap', () => {
  it('tile 64 equals the untiled result within 1 on every pixel of every photo, and overlap 4 does not', async () => {
    const { manifest } = await ensureModelFile('realesrgan-x4fast');
    const overlap = (manifest as SuperResolutionManifest).tile.overlap;
    expect(overlap).toBe(24);
    const model = await loadModel('realesrgan-x4fast');
    let shortContext = 0;
    for (const [i, image] of crops.entries()) {
      const untiledResult = (await upscaleRgb(model, image, { tile: 1024, overlap })).data;
      const tiled = await upscaleRgb(model, image, { tile: 64, overlap });
      expect(tiled.tiles, PHOTOS[i]![0]).toBeGreaterThan(1);
      expect(maxAbsDiff(tiled.data, untiledResult), PHOTOS[i]![0]).toBeLessThanOrEqual(1);
      shortContext = Math.max(
        shortContext,
        maxAbsDiff((await upscaleRgb(model, image, { tile: 64, overlap: 4, feather: 0 })).data, untiledResult),
      );
    }
    expect(shortContext).toBeGreaterThan(4);
  });
});
