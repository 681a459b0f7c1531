/**
 * The float16 variants of the Real-ESRGAN graphs against the float32 ones, on this machine's CPU.
 * ONNX Runtime's CPU provider has no float16 convolution on x86: its InsertCastTransformer runs
 * each float16 node in float32 (casts inserted, then cancelled in pairs and folded into the
 * initializers), so here the check covers the converted graph and its float16 weights, biases and
 * scale constants, not float16 arithmetic (which the GPU providers do, as ncnn does on Vulkan).
 * Tolerance: at least 55 dB PSNR and at most 2 levels of 8 bits anywhere (measured: x4fast
 * 76.6 dB, x4plus 64.1 dB, both at most 1 level).
 */
import path from 'node:path';
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import {
  ensureModelFile,
  float16Bits,
  getManifest,
  openSession,
  srModel,
  upscaleRgb,
  type RgbImage,
} from '../../../src/inference/index.js';
import { BUNDLED_PHOTOS_DIR, PACKAGE_ROOT } from '../../../src/paths.js';

const registry = { modelsDir: path.join(PACKAGE_ROOT, 'models') };

async function crop(width: number, height: number): Promise<RgbImage> {
  const { data, info } = await sharp(path.join(BUNDLED_PHOTOS_DIR, 'chelsea.png'))
    .extract({ left: 100, top: 60, width, height })
    .raw()
    .toBuffer({ resolveWithObject: true });
  return { data: new Uint8Array(data), width: info.width, height: info.height, channels: 3 };
}

async function upscaleWith(name: string, image: RgbImage): Promise<Uint8Array> {
  const file = await ensureModelFile(name, registry);
  const session = await openSession(file.path, { executionProviders: ['cpu'] });
  try {
    return (
      await upscaleRgb(srModel(session, file.manifest.task === 'super-resolution' ? file.manifest.scale : 4), image, {
        tile: 512,
        overlap: 0,
      })
    ).data;
  } finally {
    await session.release();
  }
}

function compare(a: Uint8Array, b: Uint8Array): { psnr: number; max: number } {
  let squares = 0;
  let max = 0;
  for (let i = 0; i < a.length; i += 1) {
    const d = Math.abs((a[i] as number) - (b[i] as number));
    squares += d * d;
    max = Math.max(max, d);
  }
  return { psnr: squares === 0 ? Infinity : 10 * Math.log10((255 * 255 * a.length) / squares), max };
}

describe('float16 bits', () => {
  it('rounds to nearest even, saturates to infinity, keeps subnormals', () => {
    expect([1, -2, 0.5, 65504, 0.1, 0].map(float16Bits)).toEqual([0x3c00, 0xc000, 0x3800, 0x7bff, 0x2e66, 0]);
    expect(float16Bits(65520)).toBe(0x7c00); // halfway past the largest: rounds up to infinity
    expect(float16Bits(2 ** -24)).toBe(1); // the smallest subnormal
    expect(float16Bits(1 + 2 ** -11)).toBe(0x3c00); // a tie rounds to the even mantissa
    expect(float16Bits(1 + 3 * 2 ** -11)).toBe(0x3c02);
    expect(float16Bits(Number.NaN) & 0x7c00).toBe(0x7c00);
  });
});

describe.each([
  ['realesrgan-x4fast', 96, 72],
  ['realesrgan-x4plus', 48, 36],
] as const)('%s in float16', (name, width, height) => {
  it('is named by the float32 manifest, made by the registry from the float32 file, and pinned by its checksum', async () => {
    const manifest = await getManifest(name, registry);
    expect(manifest.task === 'super-resolution' && manifest.halfPrecision).toBe(`${name}-fp16`);
    const half = await ensureModelFile(`${name}-fp16`, registry);
    expect(half.manifest.source).toEqual({ kind: 'float16', of: name });
  });

  it('matches the float32 graph within 55 dB PSNR and 2 levels on a photo crop', async () => {
    const image = await crop(width, height);
    const { psnr, max } = compare(await upscaleWith(name, image), await upscaleWith(`${name}-fp16`, image));
    expect(psnr).toBeGreaterThanOrEqual(55);
    expect(max).toBeLessThanOrEqual(2);
  });
});
