/**
 * The service's default image path on a real photo, judged the way users judge it: exact size, no
 * grid at the input's pixel boundaries (the UpscalerJS slim network draws one) and sharpness well
 * above bicubic. The photo is downscaled x4 from a crop of the bundled cat (smooth fur, an eye,
 * whiskers), so the original is the reference.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { blockiness, lumaBt601, sharpnessRatio, type Plane } from '../../../../bench/metrics.js';
import { SessionCache, createSrModelLoader } from '../../../../src/inference/index.js';
import { probeImage } from '../../../../src/media/index.js';
import { BUNDLED_PHOTOS_DIR } from '../../../../src/paths.js';
import { upscaleImageFile } from '../../../../src/kinds/image-upscale/pipeline/image-pipeline.js';

const sessions = new SessionCache({ executionProviders: ['cpu'] });
const loadModel = createSrModelLoader({ sessions });
const SIDE = 256;
let dir: string;
let reference: Plane;
let small: string;

async function luma(file: string): Promise<Plane> {
  const { data, info } = await sharp(file).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  return lumaBt601(new Uint8Array(data.buffer, data.byteOffset, data.length), info.width, info.height);
}

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'media-worker-realesrgan-'));
  const crop = sharp(path.join(BUNDLED_PHOTOS_DIR, 'chelsea.png')).extract({
    left: 0,
    top: 0,
    width: SIDE,
    height: SIDE,
  });
  const hr = path.join(dir, 'hr.png');
  await crop.clone().png().toFile(hr);
  reference = await luma(hr);
  small = path.join(dir, 'small.png');
  await crop
    .clone()
    .resize(SIDE / 4, SIDE / 4, { kernel: 'cubic' })
    .png()
    .toFile(small);
});

afterAll(async () => {
  await sessions.release();
  await rm(dir, { recursive: true, force: true });
});

async function upscale(
  factor: '1' | '2' | '4',
  modelName?: string,
): Promise<{ file: string; model: string; width: number; height: number }> {
  const out = path.join(dir, `out-${factor}-${modelName ?? 'default'}.png`);
  const outcome = await upscaleImageFile(
    {
      inputPath: small,
      outputPath: out,
      factor,
      info: await probeImage(small),
      ...(modelName === undefined ? {} : { modelName }),
    },
    loadModel,
  );
  return { file: out, model: outcome.model, width: outcome.width, height: outcome.height };
}

describe('default image upscale (Real-ESRGAN x4plus)', () => {
  it('x4 of a real photo: exact size, no pixel grid, far sharper than bicubic', async () => {
    const ours = await upscale('4');
    expect(ours.model).toBe('realesrgan-x4plus');
    expect([ours.width, ours.height]).toEqual([SIDE, SIDE]);
    const y = await luma(ours.file);
    const bicubic = await luma(
      await sharp(small)
        .resize(SIDE, SIDE, { kernel: 'cubic' })
        .png()
        .toFile(path.join(dir, 'bicubic.png'))
        .then(() => path.join(dir, 'bicubic.png')),
    );
    // Measured on this crop: x4plus blockiness 1.02, sharpness 0.72; bicubic 1.16 and 0.36.
    expect(blockiness(y, 4)).toBeLessThanOrEqual(1.1);
    expect(sharpnessRatio(y, reference)).toBeGreaterThan(0.6);
    expect(sharpnessRatio(y, reference)).toBeGreaterThan(1.5 * sharpnessRatio(bicubic, reference));
  });

  it('the metric sees the grid the UpscalerJS slim network draws on the same photo', async () => {
    const slim = await upscale('4', 'esrgan-slim-x4');
    expect(blockiness(await luma(slim.file), 4)).toBeGreaterThan(1.3);
  });

  it('factors "2" and "1" are the x4 output brought down to exactly the target size', async () => {
    const two = await upscale('2');
    const one = await upscale('1');
    expect([two.model, one.model]).toEqual(['realesrgan-x4plus', 'realesrgan-x4plus']);
    expect([two.width, two.height, one.width, one.height]).toEqual([SIDE / 2, SIDE / 2, SIDE / 4, SIDE / 4]);
    const meta = await sharp(two.file).metadata();
    expect([meta.width, meta.height]).toEqual([SIDE / 2, SIDE / 2]);
    // Sharper than the x2 reference picture resized by bicubic from the small one.
    const half = await luma(
      await sharp(path.join(dir, 'hr.png'))
        .resize(SIDE / 2, SIDE / 2, { kernel: 'lanczos3' })
        .png()
        .toFile(path.join(dir, 'half.png'))
        .then(() => path.join(dir, 'half.png')),
    );
    const bicubicTwo = await luma(
      await sharp(small)
        .resize(SIDE / 2, SIDE / 2, { kernel: 'cubic' })
        .png()
        .toFile(path.join(dir, 'b2.png'))
        .then(() => path.join(dir, 'b2.png')),
    );
    expect(sharpnessRatio(await luma(two.file), half)).toBeGreaterThan(sharpnessRatio(bicubicTwo, half) + 0.2);
  });
});
