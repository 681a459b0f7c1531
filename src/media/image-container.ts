/**
 * The chunk and segment level of PNG, WebP and JPEG files: what a file's layout says (animated,
 * lossless, alpha), and putting an ICC profile and EXIF block into an encoded file byte for byte.
 *
 * Why by hand: sharp (libvips) embeds a profile only by converting the pixels into it, and a
 * picture built from raw pixels carries no metadata to keep. Writing the chunks ourselves keeps the
 * pixel values exactly as the network produced them in the source's encoding, and the profile and
 * EXIF bytes exactly as they came (EXIF cleaned first: image-metadata.ts).
 *
 * Everything here reads untrusted bytes: every length is checked against the buffer before use, and
 * a layout that does not parse is reported as such, never thrown as a RangeError from a read.
 */
import { open } from 'node:fs/promises';
import { deflateSync } from 'node:zlib';
import type { ImageFormat } from './types.js';

// ---------------------------------------------------------------- reading a file's layout

export interface ImageLayout {
  /** More than one frame: an APNG (`acTL` before the image data) or an animated WebP (VP8X flag or `ANIM`). */
  animated: boolean;
  /** WebP only: the picture is VP8L (lossless) rather than VP8 (lossy). */
  lossless?: boolean;
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
/** Chunk headers read before giving up on finding the image data: a file of more is not a photo. */
const MAX_CHUNKS = 4096;

/** Reads only chunk headers (8 bytes each, seeking past the data), so a large file costs a few reads. */
export async function readImageLayout(path: string, format: ImageFormat): Promise<ImageLayout> {
  if (format === 'jpeg') return { animated: false };
  const handle = await open(path, 'r');
  try {
    const header = Buffer.alloc(12);
    const read = async (position: number, length: number): Promise<Buffer> => {
      const { bytesRead } = await handle.read(header, 0, length, position);
      return header.subarray(0, bytesRead);
    };
    return format === 'png' ? await pngLayout(read) : await webpLayout(read);
  } finally {
    await handle.close();
  }
}

type Reader = (position: number, length: number) => Promise<Buffer>;

async function pngLayout(read: Reader): Promise<ImageLayout> {
  let position = PNG_SIGNATURE.length;
  for (let i = 0; i < MAX_CHUNKS; i++) {
    const head = await read(position, 8);
    if (head.length < 8) break;
    const type = head.toString('latin1', 4, 8);
    if (type === 'acTL') return { animated: true };
    if (type === 'IDAT' || type === 'IEND') break;
    position += 12 + head.readUInt32BE(0);
  }
  return { animated: false };
}

const WEBP_ANIMATION_FLAG = 0x02;

async function webpLayout(read: Reader): Promise<ImageLayout> {
  let position = 12;
  let animated = false;
  for (let i = 0; i < MAX_CHUNKS; i++) {
    const head = await read(position, 9);
    if (head.length < 8) break;
    const type = head.toString('latin1', 0, 4);
    if (type === 'VP8X' && head.length === 9) animated = ((head[8] ?? 0) & WEBP_ANIMATION_FLAG) !== 0;
    if (type === 'ANIM' || type === 'ANMF') animated = true;
    if (type === 'VP8L') return { animated, lossless: true };
    if (type === 'VP8 ') return { animated, lossless: false };
    const size = head.readUInt32LE(4);
    position += 8 + size + (size % 2);
  }
  return { animated };
}

// ---------------------------------------------------------------- writing metadata into an encoded file

export interface EmbeddedMetadata {
  /** An ICC profile, embedded as it is. */
  icc?: Buffer;
  /** A TIFF-structured EXIF block (no `Exif\0\0` prefix), embedded as it is. */
  exif?: Buffer;
}

/**
 * The encoded file with `icc` and `exif` in the places each format keeps them; any profile or EXIF
 * the encoder wrote is replaced. `width` and `height` are the picture's (a WebP written in the simple
 * format needs them to become the extended format).
 */
export function embedMetadata(
  file: Buffer,
  format: ImageFormat,
  metadata: EmbeddedMetadata,
  size: { width: number; height: number },
): Buffer {
  if (metadata.icc === undefined && metadata.exif === undefined) return file;
  switch (format) {
    case 'png':
      return embedInPng(file, metadata);
    case 'jpeg':
      return embedInJpeg(file, metadata);
    case 'webp':
      return embedInWebp(file, metadata, size);
  }
}

// PNG: iCCP right after IHDR (it must precede PLTE and IDAT), eXIf after it.

const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

/** PNG's CRC-32 (zlib.crc32 exists only from Node 22.2). */
export function crc32(data: Buffer): number {
  let c = 0xffffffff;
  for (const byte of data) c = (CRC_TABLE[(c ^ byte) & 0xff] ?? 0) ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function pngChunk(type: string, data: Buffer): Buffer {
  const typed = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const out = Buffer.alloc(8 + data.length + 4);
  out.writeUInt32BE(data.length, 0);
  typed.copy(out, 4);
  out.writeUInt32BE(crc32(typed), 8 + data.length);
  return out;
}

function embedInPng(file: Buffer, metadata: EmbeddedMetadata): Buffer {
  if (file.length < 33 || !file.subarray(0, 8).equals(PNG_SIGNATURE) || file.toString('latin1', 12, 16) !== 'IHDR') {
    throw new Error('Expected an encoded PNG starting with IHDR');
  }
  const replaced = new Set<string>();
  if (metadata.icc !== undefined) replaced.add('iCCP').add('sRGB');
  if (metadata.exif !== undefined) replaced.add('eXIf');
  const parts: Buffer[] = [file.subarray(0, 33)];
  if (metadata.icc !== undefined) {
    // Profile name, NUL, compression method 0 (zlib), the compressed profile.
    parts.push(pngChunk('iCCP', Buffer.concat([Buffer.from('icc\0\0', 'latin1'), deflateSync(metadata.icc)])));
  }
  if (metadata.exif !== undefined) parts.push(pngChunk('eXIf', metadata.exif));
  let position = 33;
  while (position + 12 <= file.length) {
    const length = file.readUInt32BE(position);
    const end = position + 12 + length;
    if (end > file.length) throw new Error('Expected whole chunks in the encoded PNG');
    if (!replaced.has(file.toString('latin1', position + 4, position + 8))) parts.push(file.subarray(position, end));
    position = end;
  }
  return Buffer.concat(parts);
}

// JPEG: APP1 Exif and APP2 ICC_PROFILE after SOI and a JFIF APP0.

const JPEG_SEGMENT_MAX = 65533;
const ICC_MARKER = Buffer.from('ICC_PROFILE\0', 'latin1');
const EXIF_PREFIX = Buffer.from('Exif\0\0', 'latin1');
/** ICC bytes per APP2 segment: the segment's 65533 bytes less the marker name and two counters. */
const ICC_CHUNK = JPEG_SEGMENT_MAX - ICC_MARKER.length - 2;

function jpegSegment(marker: number, data: Buffer): Buffer {
  const head = Buffer.alloc(4);
  head[0] = 0xff;
  head[1] = marker;
  head.writeUInt16BE(data.length + 2, 2);
  return Buffer.concat([head, data]);
}

function embedInJpeg(file: Buffer, metadata: EmbeddedMetadata): Buffer {
  if (file.length < 4 || file[0] !== 0xff || file[1] !== 0xd8)
    throw new Error('Expected an encoded JPEG starting with SOI');
  const kept: Buffer[] = [];
  let jfif: Buffer | undefined;
  let position = 2;
  // Walk the APPn and COM segments before the frame; whatever follows is copied as it is.
  while (position + 4 <= file.length && file[position] === 0xff) {
    const marker = file[position + 1] ?? 0;
    if (!((marker >= 0xe0 && marker <= 0xef) || marker === 0xfe)) break;
    const end = position + 2 + file.readUInt16BE(position + 2);
    if (end > file.length) throw new Error('Expected whole segments in the encoded JPEG');
    const segment = file.subarray(position, end);
    const body = segment.subarray(4);
    const isExif = marker === 0xe1 && body.subarray(0, 6).equals(EXIF_PREFIX);
    const isIcc = marker === 0xe2 && body.subarray(0, ICC_MARKER.length).equals(ICC_MARKER);
    if (marker === 0xe0 && jfif === undefined && kept.length === 0) jfif = segment;
    else if (!(isExif && metadata.exif !== undefined) && !(isIcc && metadata.icc !== undefined)) kept.push(segment);
    position = end;
  }
  const added: Buffer[] = [];
  if (metadata.exif !== undefined) {
    const body = Buffer.concat([EXIF_PREFIX, metadata.exif]);
    if (body.length > JPEG_SEGMENT_MAX)
      throw new Error(`Expected EXIF of at most ${JPEG_SEGMENT_MAX} bytes for a JPEG but it has ${body.length}`);
    added.push(jpegSegment(0xe1, body));
  }
  if (metadata.icc !== undefined) {
    const count = Math.ceil(metadata.icc.length / ICC_CHUNK);
    if (count > 255)
      throw new Error(
        `Expected an ICC profile of at most ${255 * ICC_CHUNK} bytes for a JPEG but it has ${metadata.icc.length}`,
      );
    for (let i = 0; i < count; i++) {
      const chunk = metadata.icc.subarray(i * ICC_CHUNK, (i + 1) * ICC_CHUNK);
      added.push(jpegSegment(0xe2, Buffer.concat([ICC_MARKER, Buffer.from([i + 1, count]), chunk])));
    }
  }
  return Buffer.concat([
    file.subarray(0, 2),
    ...(jfif === undefined ? [] : [jfif]),
    ...added,
    ...kept,
    file.subarray(position),
  ]);
}

// WebP: the extended format (VP8X) with its ICC and EXIF flags, ICCP first and EXIF last.

const VP8X_ICC = 0x20;
const VP8X_ALPHA = 0x10;
const VP8X_EXIF = 0x08;

interface RiffChunk {
  type: string;
  data: Buffer;
}

function riffChunk({ type, data }: RiffChunk): Buffer {
  const head = Buffer.alloc(8);
  head.write(type, 0, 'latin1');
  head.writeUInt32LE(data.length, 4);
  return Buffer.concat([head, data, data.length % 2 === 1 ? Buffer.alloc(1) : Buffer.alloc(0)]);
}

function embedInWebp(file: Buffer, metadata: EmbeddedMetadata, size: { width: number; height: number }): Buffer {
  if (file.length < 12 || file.toString('latin1', 0, 4) !== 'RIFF' || file.toString('latin1', 8, 12) !== 'WEBP') {
    throw new Error('Expected an encoded WebP (RIFF WEBP)');
  }
  const chunks: RiffChunk[] = [];
  let position = 12;
  while (position + 8 <= file.length) {
    const type = file.toString('latin1', position, position + 4);
    const length = file.readUInt32LE(position + 4);
    if (position + 8 + length > file.length) throw new Error('Expected whole chunks in the encoded WebP');
    chunks.push({ type, data: file.subarray(position + 8, position + 8 + length) });
    position += 8 + length + (length % 2);
  }
  let vp8x = chunks[0]?.type === 'VP8X' ? Buffer.from(chunks[0].data) : undefined;
  if (vp8x === undefined) {
    vp8x = Buffer.alloc(10);
    vp8x.writeUIntLE(size.width - 1, 4, 3);
    vp8x.writeUIntLE(size.height - 1, 7, 3);
    const picture = chunks[0];
    // A simple lossless picture says in its header whether it uses alpha (bit 28 after the signature byte).
    if (picture?.type === 'VP8L' && picture.data.length >= 5 && ((picture.data.readUInt32LE(1) >>> 28) & 1) === 1)
      vp8x[0] = VP8X_ALPHA;
  }
  const body = chunks.filter(
    (c) => c.type !== 'VP8X' && !(c.type === 'ICCP' && metadata.icc) && !(c.type === 'EXIF' && metadata.exif),
  );
  if (metadata.icc !== undefined) vp8x[0] = (vp8x[0] ?? 0) | VP8X_ICC;
  if (metadata.exif !== undefined) vp8x[0] = (vp8x[0] ?? 0) | VP8X_EXIF;
  const ordered: RiffChunk[] = [
    { type: 'VP8X', data: vp8x },
    ...(metadata.icc === undefined ? [] : [{ type: 'ICCP', data: metadata.icc }]),
    ...body,
    ...(metadata.exif === undefined ? [] : [{ type: 'EXIF', data: metadata.exif }]),
  ];
  const payload = Buffer.concat(ordered.map(riffChunk));
  const head = Buffer.alloc(12);
  head.write('RIFF', 0, 'latin1');
  head.writeUInt32LE(payload.length + 4, 4);
  head.write('WEBP', 8, 'latin1');
  return Buffer.concat([head, payload]);
}
