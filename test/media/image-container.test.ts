/**
 * Writing an ICC profile and EXIF into encoded PNG, JPEG and WebP files by hand: sharp (libvips)
 * must read back exactly what was written, with the pixels untouched; and reading a file's layout
 * (animation, WebP coding) from its chunk headers.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adobeRgbProfile, displayP3Profile } from '../../bench/fidelity/fidelity-corpus-images.js';
import {
  type ImageFormat,
  cleanExif,
  embedMetadata,
  iccDescription,
  readImageLayout,
  summariseExif,
} from '../../src/media/index.js';

let dir: string;
let p3: Buffer;
let exif: Buffer;
const size = { width: 24, height: 16 };

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'media-worker-image-container-'));
  p3 = await displayP3Profile();
  const tagged = await sharp({ create: { ...size, channels: 3, background: '#336699' } })
    .withExif({ IFD0: { Make: 'MakeCo', Copyright: 'Jane Doe' } })
    .withMetadata({ orientation: 3 })
    .jpeg()
    .toBuffer();
  exif = cleanExif((await sharp(tagged).metadata()).exif!, size)!;
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function picture(channels: 3 | 4): Buffer {
  const data = Buffer.alloc(size.width * size.height * channels);
  for (let i = 0; i < data.length; i++) data[i] = (i * 37) % 251;
  return data;
}

async function encodings(): Promise<[string, ImageFormat, Buffer, 3 | 4][]> {
  const raw = (channels: 3 | 4) => sharp(picture(channels), { raw: { ...size, channels } });
  return [
    ['png rgb', 'png', await raw(3).png().toBuffer(), 3],
    ['png rgba', 'png', await raw(4).png().toBuffer(), 4],
    ['jpeg', 'jpeg', await raw(3).jpeg({ quality: 90 }).toBuffer(), 3],
    ['webp lossy (VP8)', 'webp', await raw(3).webp({ quality: 90 }).toBuffer(), 3],
    ['webp lossy with alpha (VP8X + ALPH)', 'webp', await raw(4).webp({ quality: 90 }).toBuffer(), 4],
    ['webp lossless (VP8L)', 'webp', await raw(3).webp({ lossless: true }).toBuffer(), 3],
    ['webp lossless with alpha (VP8L)', 'webp', await raw(4).webp({ lossless: true }).toBuffer(), 4],
  ];
}

describe('embedMetadata', () => {
  it('writes the profile and EXIF so that libvips reads them back exactly, pixels untouched', async () => {
    for (const [name, format, encoded, channels] of await encodings()) {
      const embedded = embedMetadata(encoded, format, { icc: p3, exif }, size);
      const meta = await sharp(embedded).metadata();
      expect([name, meta.format, meta.width, meta.height, meta.hasAlpha]).toEqual([
        name,
        format,
        size.width,
        size.height,
        channels === 4,
      ]);
      expect(Buffer.compare(meta.icc!, p3), name).toBe(0);
      expect(summariseExif(meta.exif!), name).toEqual({ orientation: 1, hasGps: false, hasThumbnail: false });
      expect(meta.exif!.toString('latin1'), name).toContain('Jane Doe');
      const before = await sharp(encoded, { ignoreIcc: true }).raw().toBuffer();
      const after = await sharp(embedded, { ignoreIcc: true }).raw().toBuffer();
      expect(Buffer.compare(after, before), name).toBe(0);
      await writeFile(path.join(dir, `embedded-${name.replaceAll(' ', '-')}.${format}`), embedded);
    }
  });

  it('replaces what the encoder wrote instead of adding a second profile', async () => {
    const srgbTagged = await sharp(picture(3), { raw: { ...size, channels: 3 } })
      .withIccProfile('srgb')
      .png()
      .toBuffer();
    const embedded = embedMetadata(srgbTagged, 'png', { icc: p3 }, size);
    expect(embedded.toString('latin1').split('iCCP').length - 1).toBe(1);
    expect(iccDescription((await sharp(embedded).metadata()).icc!)).toMatch(/P3/);
  });

  it('splits a profile too large for one JPEG segment over several, which libvips joins again', async () => {
    const large = (
      await sharp(
        await sharp({ create: { width: 2, height: 2, channels: 3, background: '#fff' } })
          .withIccProfile('cmyk')
          .jpeg()
          .toBuffer(),
      ).metadata()
    ).icc!;
    expect(large.length).toBeGreaterThan(65_519 * 3);
    const jpeg = await sharp(picture(3), { raw: { ...size, channels: 3 } })
      .jpeg()
      .toBuffer();
    const embedded = embedMetadata(jpeg, 'jpeg', { icc: large }, size);
    expect(Buffer.compare((await sharp(embedded).metadata()).icc!, large)).toBe(0);
  });

  it('names the profiles the corpus uses', async () => {
    expect(iccDescription(p3)).toMatch(/Display P3|P3/);
    expect(iccDescription(adobeRgbProfile())).toMatch(/^Adobe RGB \(1998\)/);
  });

  it('refuses bytes that are not the format it was told', () => {
    expect(() => embedMetadata(Buffer.from('GIF89a....'), 'png', { icc: p3 }, size)).toThrow('Expected an encoded PNG');
    expect(() => embedMetadata(Buffer.from('RIFF\0\0\0\0WEBP'), 'jpeg', { exif }, size)).toThrow(
      'Expected an encoded JPEG',
    );
    expect(() => embedMetadata(Buffer.alloc(40), 'webp', { exif }, size)).toThrow('Expected an encoded WebP');
  });
});

describe('readImageLayout', () => {
  it('tells lossless from lossy WebP and finds animation in WebP and APNG', async () => {
    const files = await encodings();
    const at = async (name: string, bytes: Buffer, format: ImageFormat) => {
      const file = path.join(dir, name);
      await writeFile(file, bytes);
      return readImageLayout(file, format);
    };
    expect(await at('lossy.webp', files[3]![2], 'webp')).toEqual({ animated: false, lossless: false });
    expect(await at('lossy-alpha.webp', files[4]![2], 'webp')).toEqual({ animated: false, lossless: false });
    expect(await at('lossless.webp', files[6]![2], 'webp')).toEqual({ animated: false, lossless: true });
    expect(await at('still.png', files[0]![2], 'png')).toEqual({ animated: false });
    const frames = await Promise.all(
      ['#f00', '#00f'].map((c) =>
        sharp({ create: { width: 4, height: 4, channels: 3, background: c } })
          .png()
          .toBuffer(),
      ),
    );
    const animated = await sharp(frames, { join: { animated: true } })
      .webp()
      .toBuffer();
    expect((await at('animated.webp', animated, 'webp')).animated).toBe(true);
  });
});
