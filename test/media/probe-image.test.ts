import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { probeImage } from '../../src/media/probe-image.js';
import { failure, makeTempDir, PHOTOS } from './helpers.js';
import { crc32, pngWithDeclaredSize } from './png-crafting.js';

let dir: string;
let cleanup: () => Promise<void>;
const at = (name: string): string => join(dir, name);

beforeAll(async () => {
  ({ dir, cleanup } = await makeTempDir('image'));
  const coffee = join(PHOTOS, 'coffee.png'); // 600x400
  await Promise.all([
    ...[1, 2, 3, 4, 5, 6, 7, 8].map((orientation) =>
      sharp(coffee)
        .resize(120, 80)
        .jpeg()
        .withMetadata({ orientation })
        .toFile(at(`orient-${orientation}.jpg`)),
    ),
    sharp(coffee).resize(60, 40).toColourspace('rgb16').png().toFile(at('deep.png')),
    sharp(coffee).resize(90, 60).webp().toFile(at('photo.webp')),
    sharp(coffee).resize(90, 60).jpeg().withIccProfile('p3').toFile(at('p3.jpg')),
    sharp(coffee).jpeg().toFile(at('full.jpg')),
    sharp(coffee).gif().toFile(at('photo.gif')),
    writeFile(at('notes.png'), 'this is a text file with an image name\n'),
    writeFile(at('huge.png'), pngWithDeclaredSize(100_000, 100_000)),
  ]);
  const jpeg = await readFile(at('full.jpg'));
  await writeFile(at('truncated.jpg'), jpeg.subarray(0, Math.floor(jpeg.length / 2)));
  const png = await readFile(join(PHOTOS, 'astronaut.png'));
  await writeFile(at('truncated.png'), png.subarray(0, Math.floor(png.length / 2)));
});

afterAll(async () => {
  await cleanup();
});

describe('probeImage on real photos', () => {
  it('reads a PNG photo', async () => {
    expect(await probeImage(join(PHOTOS, 'astronaut.png'))).toEqual({
      format: 'png',
      width: 512,
      height: 512,
      channels: 3,
      hasAlpha: false,
      bitDepth: 8,
      orientation: 1,
      hasIccProfile: true, // the file carries an iCCP chunk
    });
    expect(await probeImage(join(PHOTOS, 'coffee.png'))).toMatchObject({ hasIccProfile: false });
  });

  it('reports alpha', async () => {
    const rgba = at('rgba.png');
    await sharp(join(PHOTOS, 'chelsea.png')).ensureAlpha(0.5).png().toFile(rgba);
    expect(await probeImage(rgba)).toMatchObject({
      format: 'png',
      width: 451,
      height: 300,
      channels: 4,
      hasAlpha: true,
    });
  });

  it('reports a 16-bit PNG', async () => {
    expect(await probeImage(at('deep.png'))).toMatchObject({ format: 'png', width: 60, height: 40, bitDepth: 16 });
  });

  it('reads WebP', async () => {
    expect(await probeImage(at('photo.webp'))).toMatchObject({ format: 'webp', width: 90, height: 60, bitDepth: 8 });
  });

  it('reports an embedded ICC profile', async () => {
    expect(await probeImage(at('p3.jpg'))).toMatchObject({ format: 'jpeg', hasIccProfile: true });
  });

  // Orientations 5 to 8 turn the picture a quarter, so a stored 120x80 is displayed 80x120.
  it.each([
    [1, 120, 80],
    [2, 120, 80],
    [3, 120, 80],
    [4, 120, 80],
    [5, 80, 120],
    [6, 80, 120],
    [7, 80, 120],
    [8, 80, 120],
  ])('EXIF orientation %i is displayed %ix%i', async (orientation, width, height) => {
    expect(await probeImage(at(`orient-${orientation}.jpg`))).toMatchObject({
      format: 'jpeg',
      orientation,
      width,
      height,
    });
  });
});

describe('probeImage refuses bad input', () => {
  it('refuses a text file named .png', async () => {
    const err = await failure(probeImage(at('notes.png')));
    expect(err.code).toBe('PROBE_FAILED');
    expect(err.message).toBe('Expected a JPEG, PNG or WebP image but received content in no supported format');
  });

  it('refuses a GIF (not an accepted image format)', async () => {
    const err = await failure(probeImage(at('photo.gif')));
    expect(err.code).toBe('PROBE_FAILED');
    expect(err.message).toBe('Expected a JPEG, PNG or WebP image but received a GIF');
  });

  it.each(['truncated.jpg', 'truncated.png'])('refuses %s, whose header is intact', async (name) => {
    const err = await failure(probeImage(at(name)));
    expect(err.code).toBe('PROBE_FAILED');
    expect(err.message).toMatch(/image data is truncated or corrupt/);
    // The same file passes when only the header is looked at: the decode check is what catches it.
    await expect(probeImage(at(name), { verifyDecode: false })).resolves.toMatchObject({ width: expect.any(Number) });
  });

  it('refuses a PNG declaring 100000x100000 from its header alone', async () => {
    const bytes = await readFile(at('huge.png'));
    // The header is genuine: a correct CRC over IHDR.
    expect(bytes.readUInt32BE(29)).toBe(crc32(bytes.subarray(12, 29)));
    const started = performance.now();
    const err = await failure(probeImage(at('huge.png')));
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(err.code).toBe('OUTPUT_TOO_LARGE');
    expect(err.status).toBe(422);
    expect(err.message).toBe(
      'Expected an image of at most 96 MP and 20000 px on its longest side but received 100000×100000 (10000 MP); it was refused from its header without being decoded',
    );
  });

  it.each([
    [{ maxPixels: 600 * 400 }, true],
    [{ maxPixels: 600 * 400 - 1 }, false],
    [{ maxSide: 600 }, true],
    [{ maxSide: 599 }, false],
  ])('applies the limits inclusively: %o -> accepted %s', async (limits, accepted) => {
    const result = probeImage(join(PHOTOS, 'coffee.png'), limits);
    if (accepted) await expect(result).resolves.toMatchObject({ width: 600, height: 400 });
    else await expect(result).rejects.toMatchObject({ code: 'OUTPUT_TOO_LARGE' });
  });
});
