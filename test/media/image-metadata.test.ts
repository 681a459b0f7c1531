/**
 * EXIF cleaning on blocks written by libvips (little-endian) and by hand (big-endian), and on
 * hostile ones: a block that does not parse is dropped, never a crash.
 */
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { cleanExif, exifTiff, summariseExif } from '../../src/media/index.js';
import { seededRandom } from '../../src/seeded-random.js';

async function cameraExif(): Promise<Buffer> {
  const jpeg = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#808080' } })
    .withExif({
      IFD0: { Make: 'MakeCo', Model: 'ModelX', Copyright: 'Jane Doe' },
      IFD2: { DateTimeOriginal: '2024:05:06 07:08:09' },
      IFD3: { GPSLatitudeRef: 'N', GPSLatitude: '48/1 51/1 2406/100' },
    })
    .withMetadata({ orientation: 6 })
    .jpeg()
    .toBuffer();
  const { exif } = await sharp(jpeg).metadata();
  if (exif === undefined) throw new Error('Expected sharp to write EXIF');
  return exif;
}

/** A big-endian TIFF: IFD0 (Orientation 8, Exif pointer, GPS pointer), an Exif IFD (PixelXDimension SHORT), a GPS IFD (one RATIONAL). */
function bigEndianExif(gpsOffset?: number): Buffer {
  const b = Buffer.alloc(120);
  b.write('MM', 0, 'latin1');
  b.writeUInt16BE(42, 2);
  b.writeUInt32BE(8, 4);
  // IFD0 at 8: 3 entries, next IFD = 100 (a "thumbnail").
  b.writeUInt16BE(3, 8);
  const entry = (at: number, tag: number, type: number, count: number, value: number, short = false): void => {
    b.writeUInt16BE(tag, at);
    b.writeUInt16BE(type, at + 2);
    b.writeUInt32BE(count, at + 4);
    if (short) b.writeUInt16BE(value, at + 8);
    else b.writeUInt32BE(value, at + 8);
  };
  entry(10, 0x0112, 3, 1, 8, true);
  entry(22, 0x8769, 4, 1, 50);
  entry(34, 0x8825, 4, 1, gpsOffset ?? 70);
  b.writeUInt32BE(100, 46);
  // Exif IFD at 50: PixelXDimension SHORT 640.
  b.writeUInt16BE(1, 50);
  entry(52, 0xa002, 3, 1, 640, true);
  // GPS IFD at 70: GPSLatitude, 1 RATIONAL at 90.
  b.writeUInt16BE(1, 70);
  entry(72, 0x0002, 5, 1, 90);
  b.writeUInt32BE(0x11223344, 90);
  b.writeUInt32BE(0x55667788, 94);
  return b;
}

describe('cleanExif', () => {
  it('keeps the camera fields and resets orientation, removing GPS and the thumbnail link (libvips, little-endian)', async () => {
    const exif = await cameraExif();
    expect(summariseExif(exif)).toMatchObject({ orientation: 6, hasGps: true });
    const clean = cleanExif(exif, { width: 16, height: 16 })!;
    expect(clean.toString('latin1', 0, 2)).toBe('II');
    expect(summariseExif(clean)).toEqual({ orientation: 1, hasGps: false, hasThumbnail: false });
    for (const field of ['MakeCo', 'ModelX', 'Jane Doe', '2024:05:06 07:08:09'])
      expect(clean.toString('latin1')).toContain(field);
    const rational = Buffer.alloc(8);
    rational.writeUInt32LE(2406, 0);
    rational.writeUInt32LE(100, 4);
    expect(exif.includes(rational)).toBe(true);
    expect(clean.includes(rational)).toBe(false);
    // The input block is not touched.
    expect(summariseExif(exif)).toMatchObject({ orientation: 6, hasGps: true });
  });

  it('keeps GPS when asked', async () => {
    expect(summariseExif(cleanExif(await cameraExif(), { width: 1, height: 1, keepGps: true })!)).toMatchObject({
      hasGps: true,
      orientation: 1,
    });
  });

  it('edits a big-endian block in place: orientation, pixel dimensions as LONG, GPS values zeroed', () => {
    const clean = cleanExif(bigEndianExif(), { width: 70000, height: 3 })!;
    expect(summariseExif(clean)).toEqual({ orientation: 1, hasGps: false, hasThumbnail: false });
    expect(clean.readUInt16BE(8)).toBe(2);
    expect([clean.readUInt16BE(54), clean.readUInt32BE(56), clean.readUInt32BE(60)]).toEqual([4, 1, 70000]);
    expect(clean.subarray(70, 98).every((byte) => byte === 0)).toBe(true);
  });

  it('accepts the JPEG prefix and strips it', async () => {
    const exif = await cameraExif();
    const prefixed = Buffer.concat([Buffer.from('Exif\0\0', 'latin1'), exifTiff(exif)]);
    expect(cleanExif(prefixed, { width: 1, height: 1 })!.toString('latin1', 0, 2)).toBe('II');
  });

  it('drops a block that does not parse, and still unlinks a GPS IFD that points outside the block', () => {
    expect(cleanExif(Buffer.from('not exif at all'), { width: 1, height: 1 })).toBeNull();
    const outside = bigEndianExif();
    outside.writeUInt32BE(5000, 4);
    expect(cleanExif(outside, { width: 1, height: 1 })).toBeNull();
    expect(summariseExif(cleanExif(bigEndianExif(60_000), { width: 1, height: 1 })!)).toMatchObject({ hasGps: false });
  });

  it('never throws on mutated blocks', async () => {
    const exif = exifTiff(await cameraExif());
    const random = seededRandom(30);
    for (let i = 0; i < 500; i++) {
      const mutated = Buffer.from(exif);
      for (let k = 0; k < 4; k++) mutated[Math.floor(random() * mutated.length)] = Math.floor(random() * 256);
      const cut = mutated.subarray(0, Math.floor(random() * mutated.length) + 1);
      const clean = cleanExif(random() < 0.5 ? cut : mutated, { width: 1, height: 1 });
      if (clean !== null) expect(summariseExif(clean)?.hasGps ?? false).toBe(false);
    }
  });
});
