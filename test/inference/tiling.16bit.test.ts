/**
 * The 16-bit tiling path: 16-bit RGB in, the network in float, 16-bit out with nothing passing
 * through 8 bits; and the 8-bit path untouched by it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TileCompositor } from '../../src/inference/blend.js';
import type { SuperResolutionManifest } from '../../src/inference/manifest.js';
import { ensureModelFile } from '../../src/inference/model-registry.js';
import { SessionCache } from '../../src/inference/session.js';
import { planTiles } from '../../src/inference/tile-plan.js';
import { type RgbImage, type RgbImage16, type SrModel, upscaleRgb, upscaleRgb16 } from '../../src/inference/tiling.js';
import { boxBlurModel, photoCrop } from './tile-fixtures.js';

const sessions = new SessionCache({ thread: false });

async function slimX2(): Promise<SrModel> {
  const { manifest, path } = await ensureModelFile('esrgan-slim-x2');
  const sr = manifest as SuperResolutionManifest;
  const session = await sessions.get(path);
  return { scale: sr.scale, range: sr.input.range, run: (input, dims) => session.run(input, dims) };
}

afterAll(async () => {
  await sessions.release();
});

/** A smooth horizontal ramp over `levels` 16-bit values starting at `from`, the same on every row and channel. */
function ramp16(width: number, height: number, from: number, levels: number): RgbImage16 {
  const data = new Uint16Array(width * height * 3);
  for (let y = 0; y < height; y += 1) {
    for (let x = 0; x < width; x += 1) {
      const v = Math.round(from + (levels * x) / (width - 1));
      data.fill(v, (y * width + x) * 3, (y * width + x + 1) * 3);
    }
  }
  return { data, width, height, channels: 3 };
}

function distinct(values: ArrayLike<number>): number {
  return new Set(Array.from(values)).size;
}

/** The green channel of one row. */
function greenRow(data: Uint8Array | Uint16Array, width: number, y: number): number[] {
  return Array.from({ length: width }, (_, x) => data[(y * width + x) * 3 + 1]!);
}

describe('upscaleRgb16 with a stand-in network', () => {
  it('tiles seamlessly and keeps the values between 8-bit levels', async () => {
    // 12 x 256 16-bit levels over 97 pixels: most neighbouring pixels fall within one 8-bit level.
    const image = ramp16(97, 41, 20000, 3072);
    const model = boxBlurModel(2, 2, [0, 1]);
    const untiled = await upscaleRgb16(model, image, { tile: 1024, overlap: 0 });
    const tiled = await upscaleRgb16(model, image, { tile: 24, overlap: 2 });
    expect(tiled.data).toBeInstanceOf(Uint16Array);
    expect([tiled.width, tiled.height, tiled.tiles > 1]).toEqual([194, 82, true]);
    let worst = 0;
    for (let i = 0; i < untiled.data.length; i += 1)
      worst = Math.max(worst, Math.abs(tiled.data[i]! - untiled.data[i]!));
    expect(worst).toBeLessThanOrEqual(1);
    // Away from the zero-padded border a box blur of a linear ramp is the ramp itself.
    const row = greenRow(tiled.data, 194, 40);
    for (let x = 20; x < 170; x += 2)
      expect(Math.abs(row[x]! - Math.round(20000 + (3072 * Math.floor(x / 2)) / 96))).toBeLessThanOrEqual(1);
    expect(distinct(row.slice(20, 170))).toBeGreaterThan(60);
  });

  it('clamps and rounds to 0..65535 and says what it expected', async () => {
    const plan = planTiles({ width: 2, height: 1, tile: 8, overlap: 0, feather: 0 });
    const out = new Uint16Array(2 * 3);
    const data = new Float32Array([-20, 70000, 12.6, 65534.4, 0.5, 1e9]);
    new TileCompositor(plan, 1, out, { gain: 1, offset: 0 }).add(0, data, 0);
    expect([...out]).toEqual([0, 13, 1, 65535, 65534, 65535]);
    expect(() => new TileCompositor(plan, 2, new Uint16Array(6), { gain: 1, offset: 0 })).toThrow(
      'Expected output to hold 4x2x3 16-bit values but received 6',
    );
    const bad = { ...ramp16(5, 5, 0, 10), data: new Uint16Array(74) };
    await expect(upscaleRgb16(boxBlurModel(2, 0), bad, { tile: 20, overlap: 0 })).rejects.toThrow(
      'Expected image data to be 5x5x3 16-bit values of interleaved RGB but received 74 16-bit values with 3 channels',
    );
  });
});

describe('16-bit through a real network (esrgan-slim-x2)', () => {
  let model: SrModel;
  beforeAll(async () => {
    model = await slimX2();
  });

  it('keeps more than 8 bits of levels in a smooth gradient', async () => {
    // 0..65535 over 600 pixels: an 8-bit result can hold at most 256 levels across the row.
    const image = ramp16(600, 12, 0, 65535);
    const result = await upscaleRgb16(model, image, { tile: 128, overlap: 8 });
    expect([result.width, result.height]).toEqual([1200, 24]);
    const row = greenRow(result.data, 1200, 12);
    expect(distinct(row)).toBeGreaterThan(600);
    // The picture is still the ramp: it rises from dark to light, and agrees with the 8-bit path.
    expect(row[10]!).toBeLessThan(2000);
    expect(row[1190]!).toBeGreaterThan(63000);
    const eight: RgbImage = {
      data: Uint8Array.from(image.data, (v) => Math.round(v / 257)),
      width: 600,
      height: 12,
      channels: 3,
    };
    const reference = await upscaleRgb(model, eight, { tile: 128, overlap: 8 });
    let worst = 0;
    for (let i = 0; i < reference.data.length; i += 1)
      worst = Math.max(worst, Math.abs(result.data[i]! / 257 - reference.data[i]!));
    expect(worst).toBeLessThan(3);
  });

  it('leaves the 8-bit path as it was: the same photo as 16-bit gives the 8-bit result within one level', async () => {
    const photo = await photoCrop('coffee.png', 260, 120, 77, 64);
    const eight = await upscaleRgb(model, photo, { tile: 40, overlap: 8 });
    expect(eight.data).toBeInstanceOf(Uint8Array);
    const sixteen = await upscaleRgb16(
      model,
      { data: Uint16Array.from(photo.data, (v) => v * 257), width: 77, height: 64, channels: 3 },
      { tile: 40, overlap: 8 },
    );
    let worst = 0;
    for (let i = 0; i < eight.data.length; i += 1)
      worst = Math.max(worst, Math.abs(sixteen.data[i]! / 257 - eight.data[i]!));
    expect(worst).toBeLessThanOrEqual(0.51);
  });
});
