/**
 * The EXIF an output image carries: the input's, edited in place so that it stays true of the
 * output (docs/contract.md, "Image fidelity"):
 *
 * - Orientation becomes 1: the worker has already turned the pixels upright;
 * - the GPS IFD is removed (its pointer taken out of IFD0, its bytes zeroed) unless asked to keep it:
 *   where a photo was taken is the field people least expect a service to pass on;
 * - IFD1 (the embedded thumbnail) is unlinked: it shows the input at another size and, for a
 *   rotated photo, sideways;
 * - PixelXDimension and PixelYDimension, where present, become the output's size.
 *
 * Everything else (Make, Model, DateTimeOriginal, Copyright, exposure, maker notes) is kept byte for
 * byte: nothing moves, so every offset inside the block stays valid. The block is untrusted: any
 * offset that points outside it makes the whole EXIF be dropped (null), never a crash.
 */

const TAG_ORIENTATION = 0x0112;
const TAG_EXIF_IFD = 0x8769;
const TAG_GPS_IFD = 0x8825;
const TAG_PIXEL_X = 0xa002;
const TAG_PIXEL_Y = 0xa003;
const TYPE_SHORT = 3;
const TYPE_LONG = 4;
const EXIF_PREFIX = 'Exif\0\0';
/** Bytes per value of each TIFF type (1 BYTE ... 12 DOUBLE, 13 IFD). */
const TYPE_SIZES = [0, 1, 1, 2, 4, 8, 1, 1, 2, 4, 8, 4, 8, 4];

export interface ExifCleaning {
  /** The output's size, written into PixelXDimension and PixelYDimension where the block has them. */
  width: number;
  height: number;
  /** Keep the GPS IFD (default false). */
  keepGps?: boolean;
}

class Tiff {
  readonly little: boolean;
  constructor(readonly buf: Buffer) {
    const order = buf.toString('latin1', 0, 2);
    if (order !== 'II' && order !== 'MM') throw new RangeError('byte order');
    this.little = order === 'II';
    if (this.u16(2) !== 42) throw new RangeError('magic');
  }
  check(offset: number, length: number): void {
    if (!Number.isInteger(offset) || offset < 0 || offset + length > this.buf.length)
      throw new RangeError('outside the block');
  }
  u16(offset: number): number {
    this.check(offset, 2);
    return this.little ? this.buf.readUInt16LE(offset) : this.buf.readUInt16BE(offset);
  }
  u32(offset: number): number {
    this.check(offset, 4);
    return this.little ? this.buf.readUInt32LE(offset) : this.buf.readUInt32BE(offset);
  }
  set16(offset: number, value: number): void {
    this.check(offset, 2);
    if (this.little) this.buf.writeUInt16LE(value, offset);
    else this.buf.writeUInt16BE(value, offset);
  }
  set32(offset: number, value: number): void {
    this.check(offset, 4);
    if (this.little) this.buf.writeUInt32LE(value, offset);
    else this.buf.writeUInt32BE(value, offset);
  }
  /** Entries of the IFD at `offset`: each entry's own offset and tag. */
  entries(offset: number): { at: number; tag: number }[] {
    const count = this.u16(offset);
    this.check(offset + 2, count * 12 + 4);
    return Array.from({ length: count }, (_, i) => ({ at: offset + 2 + i * 12, tag: this.u16(offset + 2 + i * 12) }));
  }
}

/** The TIFF structure of an EXIF block, with or without the `Exif\0\0` prefix JPEG's APP1 puts before it. */
export function exifTiff(exif: Buffer): Buffer {
  return exif.toString('latin1', 0, 6) === EXIF_PREFIX ? exif.subarray(6) : exif;
}

/** A cleaned copy of the block (TIFF structure, no prefix), or null when it does not parse. */
export function cleanExif(exif: Buffer, options: ExifCleaning): Buffer | null {
  const copy = Buffer.from(exifTiff(exif));
  try {
    const tiff = new Tiff(copy);
    const ifd0 = tiff.u32(4);
    for (const { at, tag } of tiff.entries(ifd0)) {
      if (tag === TAG_ORIENTATION && tiff.u16(at + 2) === TYPE_SHORT) tiff.set16(at + 8, 1);
      if (tag === TAG_EXIF_IFD) setPixelDimensions(tiff, tiff.u32(at + 8), options);
    }
    if (!(options.keepGps ?? false)) removeGps(tiff, ifd0);
    // Unlink IFD1: the next-IFD offset follows IFD0's (possibly shortened) entries.
    tiff.set32(ifd0 + 2 + tiff.u16(ifd0) * 12, 0);
    return copy;
  } catch (error) {
    if (error instanceof RangeError) return null;
    throw error;
  }
}

function setPixelDimensions(tiff: Tiff, ifd: number, size: ExifCleaning): void {
  for (const { at, tag } of tiff.entries(ifd)) {
    if (tag !== TAG_PIXEL_X && tag !== TAG_PIXEL_Y) continue;
    // A LONG holds any size inline; the count stays 1.
    tiff.set16(at + 2, TYPE_LONG);
    tiff.set32(at + 4, 1);
    tiff.set32(at + 8, tag === TAG_PIXEL_X ? size.width : size.height);
  }
}

/** Takes the GPS pointer out of IFD0 and zeroes the GPS IFD with every value it points to. */
function removeGps(tiff: Tiff, ifd0: number): void {
  const entries = tiff.entries(ifd0);
  const index = entries.findIndex((e) => e.tag === TAG_GPS_IFD);
  if (index < 0) return;
  const gps = tiff.u32((entries[index] as { at: number }).at + 8);
  try {
    for (const { at } of tiff.entries(gps)) {
      const type = tiff.u16(at + 2);
      const bytes = (TYPE_SIZES[type] ?? 1) * tiff.u32(at + 4);
      if (bytes > 4) {
        const value = tiff.u32(at + 8);
        tiff.check(value, bytes);
        tiff.buf.fill(0, value, value + bytes);
      }
    }
    const count = tiff.u16(gps);
    tiff.buf.fill(0, gps, gps + 2 + count * 12 + 4);
  } catch (error) {
    // A GPS IFD that does not parse is still unlinked below; its bytes are unreachable afterwards.
    if (!(error instanceof RangeError)) throw error;
  }
  // Shift the later entries and the next-IFD offset up by one entry; zero the freed last 12 bytes.
  const count = entries.length;
  const from = ifd0 + 2 + (index + 1) * 12;
  const end = ifd0 + 2 + count * 12 + 4;
  tiff.buf.copy(tiff.buf, from - 12, from, end);
  tiff.buf.fill(0, end - 12, end);
  tiff.set16(ifd0, count - 1);
}

/** The fields a test or a report wants to see, read from a block (TIFF, with or without prefix). */
export interface ExifSummary {
  orientation?: number;
  hasGps: boolean;
  hasThumbnail: boolean;
}

export function summariseExif(exif: Buffer): ExifSummary | null {
  try {
    const tiff = new Tiff(Buffer.from(exifTiff(exif)));
    const ifd0 = tiff.u32(4);
    const entries = tiff.entries(ifd0);
    const orientation = entries.find((e) => e.tag === TAG_ORIENTATION);
    return {
      ...(orientation === undefined ? {} : { orientation: tiff.u16(orientation.at + 8) }),
      hasGps: entries.some((e) => e.tag === TAG_GPS_IFD),
      hasThumbnail: tiff.u32(ifd0 + 2 + entries.length * 12) !== 0,
    };
  } catch (error) {
    if (error instanceof RangeError) return null;
    throw error;
  }
}
