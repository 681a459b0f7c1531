/**
 * The image pipeline on real photos with the real converted ESRGAN weights: formats, alpha, EXIF
 * orientation, grey, 16-bit and ICC inputs, and exact output sizes (test/kinds/image-upscale/pipeline/image-pipeline.fidelity.test.ts
 * holds the fidelity corpus).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SessionCache, createSrModelLoader } from '../../../../src/inference/index.js';
import type { UpscaleFactor } from '../../../../src/jobs/index.js';
import { probeImage } from '../../../../src/media/index.js';
import { BUNDLED_PHOTOS_DIR } from '../../../../src/paths.js';
import { upscaleImageFile } from '../../../../src/kinds/image-upscale/pipeline/image-pipeline.js';
import { countingLoader } from '../../../../bench/video/network-work.js';

const sessions = new SessionCache({ executionProviders: ['cpu'] });
const loadModel = createSrModelLoader({ sessions });
let dir: string;
const at = (name: string) => path.join(dir, name);
const photo = (name: string) => path.join(BUNDLED_PHOTOS_DIR, name);

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'media-worker-image-'));
});
afterAll(async () => {
  await sessions.release();
  await rm(dir, { recursive: true, force: true });
});

async function upscale(input: string, factor: UpscaleFactor, out: string) {
  const info = await probeImage(input);
  const outcome = await upscaleImageFile({ inputPath: input, outputPath: out, factor, info }, loadModel);
  return { info, outcome, meta: await sharp(out).metadata() };
}

/** PSNR in dB between two same-sized 8-bit buffers. */
function psnr(a: Buffer, b: Buffer): number {
  let se = 0;
  for (let i = 0; i < a.length; i++) se += ((a[i] ?? 0) - (b[i] ?? 0)) ** 2;
  return 10 * Math.log10((255 * 255) / (se / a.length));
}

describe('upscaleImageFile', () => {
  it.each([
    ['jpeg', '2', 'jpg'],
    ['png', '4', 'png'],
    ['webp', '2', 'webp'],
    ['png', '1', 'png'],
  ] as const)('keeps the %s format and makes exactly input x %s', async (format, factor, ext) => {
    const input = at(`chelsea-in.${ext}`);
    await sharp(photo('chelsea.png'))
      .extract({ left: 150, top: 60, width: 75, height: 53 })
      .toFormat(format)
      .toFile(input);
    const { meta, outcome } = await upscale(input, factor, at(`chelsea-out-${factor}.${ext}`));
    expect(meta.format).toBe(format);
    expect([meta.width, meta.height]).toEqual([75 * Number(factor), 53 * Number(factor)]);
    // The default x4 network serves every factor; "2" and "1" are its output brought down by Lanczos.
    expect(outcome.model).toBe('realesrgan-x4plus');
  });

  it('adds detail a bicubic resize does not: x2 of a downscaled photo is closer to the original than bicubic', async () => {
    const original = sharp(photo('astronaut.png')).extract({ left: 160, top: 80, width: 128, height: 128 });
    const originalRaw = await original.clone().raw().toBuffer();
    const small = at('astronaut-small.png');
    await original.clone().resize(64, 64, { kernel: 'cubic' }).png().toFile(small);
    await upscale(small, '2', at('astronaut-sr.png'));
    const sr = await sharp(at('astronaut-sr.png')).removeAlpha().raw().toBuffer();
    const bicubic = await sharp(small).resize(128, 128, { kernel: 'cubic' }).raw().toBuffer();
    expect(psnr(sr, originalRaw)).toBeGreaterThan(psnr(bicubic, originalRaw) + 0.3);
  });

  it('upscales alpha instead of dropping it', async () => {
    const width = 60;
    const height = 40;
    // Left half opaque, right half transparent.
    const alpha = Buffer.alloc(width * height);
    for (let y = 0; y < height; y++) for (let x = 0; x < width / 2; x++) alpha[y * width + x] = 255;
    const input = at('alpha.png');
    // Built from raw pixels: sharp drops a joined channel after a resize in one file-to-file pipeline.
    const rgb = await sharp(photo('coffee.png')).resize(width, height).raw().toBuffer();
    await sharp(rgb, { raw: { width, height, channels: 3 } })
      .joinChannel(alpha, { raw: { width, height, channels: 1 } })
      .png()
      .toFile(input);
    expect((await probeImage(input)).hasAlpha).toBe(true);
    const { meta } = await upscale(input, '2', at('alpha-x2.png'));
    expect([meta.channels, meta.hasAlpha, meta.width, meta.height]).toEqual([4, true, 120, 80]);
    const outAlpha = await sharp(at('alpha-x2.png')).extractChannel(3).raw().toBuffer();
    expect(outAlpha[40 * 120 + 10]).toBe(255);
    expect(outAlpha[40 * 120 + 110]).toBe(0);
  });

  it('applies EXIF orientation: a rotated phone photo comes out upright at its displayed size', async () => {
    const input = at('rotated.jpg');
    // Stored 80x50 with orientation 6 (rotate 90° clockwise to display): displayed 50x80.
    await sharp(photo('coffee.png')).resize(80, 50).jpeg().withMetadata({ orientation: 6 }).toFile(input);
    const { info, meta } = await upscale(input, '2', at('rotated-x2.jpg'));
    expect([info.width, info.height]).toEqual([50, 80]);
    expect([meta.width, meta.height]).toEqual([100, 160]);
    expect(meta.orientation ?? 1).toBe(1);
  });

  it('handles grey and 16-bit PNGs', async () => {
    const grey = at('grey.png');
    const rgb = await sharp(photo('coffee.png')).resize(48, 32).raw().toBuffer();
    await sharp(rgb, { raw: { width: 48, height: 32, channels: 3 } })
      .toColourspace('b-w')
      .png()
      .toFile(grey);
    expect((await probeImage(grey)).channels).toBe(1);
    const g = await upscale(grey, '2', at('grey-x2.png'));
    expect([g.meta.channels, g.meta.width, g.meta.height]).toEqual([1, 96, 64]);

    const deep = at('deep.png');
    await sharp(photo('coffee.png')).resize(48, 32).toColourspace('rgb16').png().toFile(deep);
    const d = await upscale(deep, '2', at('deep-x2.png'));
    expect(d.info.bitDepth).toBe(16);
    expect([d.meta.width, d.meta.height]).toEqual([96, 64]);
  });

  it('keeps an embedded ICC profile: the output carries it and its values stay in its encoding', async () => {
    const p3 = at('p3.jpg');
    await sharp(photo('coffee.png')).resize(48, 32).jpeg({ quality: 95 }).withIccProfile('p3').toFile(p3);
    await upscale(p3, '1', at('p3-x1.jpg'));
    expect(Buffer.compare((await sharp(at('p3-x1.jpg')).metadata()).icc!, (await sharp(p3).metadata()).icc!)).toBe(0);
    // Stored values: the output's match the input's, not the input's converted to sRGB.
    const stored = await sharp(p3, { ignoreIcc: true }).raw().toBuffer();
    const converted = await sharp(p3).toColourspace('srgb').raw().toBuffer();
    const actual = await sharp(at('p3-x1.jpg'), { ignoreIcc: true }).raw().toBuffer();
    expect(psnr(actual, stored)).toBeGreaterThan(psnr(actual, converted) + 1);
  });

  it('refuses a truncated file with PROBE_FAILED before the network runs', async () => {
    const full = await sharp(photo('coffee.png')).resize(60, 40).jpeg().toBuffer();
    const truncated = at('truncated.jpg');
    await sharp(full).toFile(truncated);
    const { writeFile } = await import('node:fs/promises');
    await writeFile(truncated, full.subarray(0, full.length / 2));
    await expect(probeImage(truncated)).rejects.toMatchObject({ code: 'PROBE_FAILED' });
  });

  it('refuses an image replaced by a larger one after its quote, before the network runs (the backstop)', async () => {
    const file = at('grown.png');
    await sharp(photo('coffee.png')).resize(40, 30).png().toFile(file);
    const info = await probeImage(file);
    await sharp(photo('coffee.png')).resize(400, 300).png().toFile(file);
    const counting = countingLoader(loadModel);
    await expect(
      upscaleImageFile({ inputPath: file, outputPath: at('grown-x2.png'), factor: '2', info }, counting.load),
    ).rejects.toMatchObject({
      code: 'PROBE_FAILED',
      message: expect.stringMatching(/^The image could not be decoded as quoted: .*pixel limit/),
    });
    expect(counting.tiles()).toBe(0);
  });

  it('refuses an image of the same pixels in another shape than quoted', async () => {
    const file = at('reshaped.png');
    await sharp(photo('coffee.png')).resize(40, 30).png().toFile(file);
    const info = await probeImage(file);
    await sharp(photo('coffee.png')).resize(30, 40).png().toFile(file);
    const counting = countingLoader(loadModel);
    await expect(
      upscaleImageFile({ inputPath: file, outputPath: at('reshaped-x2.png'), factor: '2', info }, counting.load),
    ).rejects.toMatchObject({
      code: 'PROBE_FAILED',
      message: 'Expected the decoded image to be 40×30 but it is 30×40',
    });
    expect(counting.tiles()).toBe(0);
  });
});
