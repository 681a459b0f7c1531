/**
 * Decides what a file is from its first bytes, never from its name. Only the formats this worker
 * accepts are recognised; anything else (text, an `#EXTM3U` playlist, an `ffconcat` script, HTML
 * error pages, archives) is `null`, so it is refused with PROBE_FAILED before ffprobe or a decoder
 * ever parses it.
 */
import { open } from 'node:fs/promises';
import type { ContainerKind, ImageFormat } from './types.js';

export type SniffedFormat = ImageFormat | ContainerKind;

/** Bytes read from the start of a file; enough for every signature below and a couple of audio frames. */
export const SNIFF_HEAD_BYTES = 64 * 1024;

const IMAGE_FORMATS: readonly string[] = ['jpeg', 'png', 'webp'] satisfies ImageFormat[];

export function isImageFormat(format: SniffedFormat | null): format is ImageFormat {
  return format !== null && IMAGE_FORMATS.includes(format);
}

function ascii(buf: Buffer, start: number, end: number): string {
  return buf.length >= end ? buf.toString('latin1', start, end) : '';
}

// ---------------------------------------------------------------- ISO base media (MP4, MOV, M4V, M4A)

/** Brands of still-image files that share the ISO box structure (HEIF, AVIF) or raw camera files. */
const IMAGE_BRANDS = new Set([
  'avif',
  'avis',
  'heic',
  'heix',
  'heim',
  'heis',
  'hevc',
  'hevx',
  'hevm',
  'hevs',
  'mif1',
  'mif2',
  'msf1',
  'crx ',
]);
/** Top-level atoms a classic QuickTime file may start with when it has no `ftyp`. */
const QUICKTIME_FIRST_ATOMS = new Set(['moov', 'mdat', 'wide', 'free', 'skip', 'pnot']);

function sniffIsoBmff(buf: Buffer): ContainerKind | null | undefined {
  if (buf.length < 12) return undefined;
  const size = buf.readUInt32BE(0);
  const type = ascii(buf, 4, 8);
  if (type === 'ftyp') {
    if (size < 16 || size % 4 !== 0) return null;
    const major = ascii(buf, 8, 12);
    if (IMAGE_BRANDS.has(major)) return null;
    if (major === 'qt  ') return 'mov';
    if (major.startsWith('M4V')) return 'm4v';
    if (major === 'M4A ' || major === 'M4B ') return 'm4a';
    return 'mp4';
  }
  // size 0 means "to the end of the file", 1 means a 64-bit size follows.
  if (QUICKTIME_FIRST_ATOMS.has(type) && (size === 0 || size === 1 || size >= 8)) return 'mov';
  return undefined;
}

// ---------------------------------------------------------------- EBML (Matroska, WebM)

interface Vint {
  value: number;
  length: number;
}

/** An EBML variable-length integer; `keepMarker` for element IDs, which keep their length bits. */
function readVint(buf: Buffer, offset: number, keepMarker: boolean): Vint | undefined {
  const first = buf[offset];
  if (first === undefined || first === 0) return undefined;
  const length = Math.clz32(first) - 23; // leading zeros within the byte, plus one
  if (length > 8 || offset + length > buf.length) return undefined;
  let value = keepMarker ? first : first & (0xff >> length);
  for (let i = 1; i < length; i++) value = value * 256 + (buf[offset + i] ?? 0);
  return { value, length };
}

const EBML_MAGIC = 0x1a45dfa3;
const EBML_DOCTYPE = 0x4282;

function sniffEbml(buf: Buffer): ContainerKind | null | undefined {
  if (buf.length < 4 || buf.readUInt32BE(0) !== EBML_MAGIC) return undefined;
  const headerSize = readVint(buf, 4, false);
  if (headerSize === undefined) return null;
  let offset = 4 + headerSize.length;
  const end = Math.min(buf.length, offset + headerSize.value);
  let docType = 'matroska'; // the EBML default when the element is absent
  while (offset < end) {
    const id = readVint(buf, offset, true);
    if (id === undefined) return null;
    const size = readVint(buf, offset + id.length, false);
    if (size === undefined) return null;
    const dataStart = offset + id.length + size.length;
    if (dataStart + size.value > end) return null;
    if (id.value === EBML_DOCTYPE)
      docType = buf.toString('latin1', dataStart, dataStart + size.value).replace(/\0+$/, '');
    offset = dataStart + size.value;
  }
  if (docType === 'webm') return 'webm';
  if (docType === 'matroska') return 'mkv';
  return null;
}

// ---------------------------------------------------------------- MPEG audio (MP3) and ADTS (AAC)

const MPEG1_LAYER3_KBPS = [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320];
const MPEG2_LAYER3_KBPS = [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160];
const SAMPLE_RATES: Record<number, readonly number[]> = {
  3: [44100, 48000, 32000], // MPEG-1
  2: [22050, 24000, 16000], // MPEG-2
  0: [11025, 12000, 8000], // MPEG-2.5
};

/** Length in bytes of the MPEG-1/2/2.5 Layer III frame whose header is at `offset`, or undefined. */
function mp3FrameLength(buf: Buffer, offset: number): number | undefined {
  if (offset + 4 > buf.length) return undefined;
  const b1 = buf[offset + 1] ?? 0;
  const b2 = buf[offset + 2] ?? 0;
  if (buf[offset] !== 0xff || (b1 & 0xe0) !== 0xe0) return undefined;
  const version = (b1 >> 3) & 3;
  const layer = (b1 >> 1) & 3;
  if (version === 1 || layer !== 1) return undefined; // reserved version; only Layer III is MP3
  const bitrateIndex = b2 >> 4;
  const rate = SAMPLE_RATES[version]?.[(b2 >> 2) & 3];
  if (bitrateIndex === 0 || bitrateIndex === 15 || rate === undefined) return undefined;
  const kbps = (version === 3 ? MPEG1_LAYER3_KBPS : MPEG2_LAYER3_KBPS)[bitrateIndex] ?? 0;
  const padding = (b2 >> 1) & 1;
  return Math.floor(((version === 3 ? 144 : 72) * kbps * 1000) / rate) + padding;
}

/** Length in bytes of the ADTS frame whose header is at `offset`, or undefined. */
function adtsFrameLength(buf: Buffer, offset: number): number | undefined {
  if (offset + 7 > buf.length) return undefined;
  const b1 = buf[offset + 1] ?? 0;
  const b2 = buf[offset + 2] ?? 0;
  if (buf[offset] !== 0xff || (b1 & 0xf6) !== 0xf0) return undefined; // 12-bit sync, layer 00
  if (((b2 >> 2) & 0xf) > 12) return undefined; // sampling frequency index
  const length = (((buf[offset + 3] ?? 0) & 3) << 11) | ((buf[offset + 4] ?? 0) << 3) | ((buf[offset + 5] ?? 0) >> 5);
  const headerLength = (b1 & 1) === 1 ? 7 : 9; // protection_absent = 1 means no CRC
  return length >= headerLength ? length : undefined;
}

/**
 * MP3 or AAC when a frame header sits at `offset` and, if the buffer reaches that far, a second one
 * follows it: a lone sync word is common in arbitrary binary data, two chained headers are not.
 * Zero padding before the first frame (common after an ID3 tag) is skipped.
 */
export function sniffAudioFrames(buf: Buffer, offset = 0): 'mp3' | 'aac' | null {
  let start = offset;
  while (start < buf.length && buf[start] === 0 && start - offset < 4096) start++;
  for (const [kind, frameLength] of [
    ['mp3', mp3FrameLength],
    ['aac', adtsFrameLength],
  ] as const) {
    const first = frameLength(buf, start);
    if (first === undefined) continue;
    const next = start + first;
    if (next + 4 > buf.length) return buf.length >= next ? kind : null;
    if (frameLength(buf, next) !== undefined) return kind;
  }
  return null;
}

/** The byte offset just past the ID3v2 tag at the start of `buf`, or undefined when there is none. */
export function id3TagEnd(buf: Buffer): number | undefined {
  if (ascii(buf, 0, 3) !== 'ID3' || buf.length < 10) return undefined;
  const major = buf[3] ?? 0;
  if (major < 2 || major > 4) return undefined;
  let size = 0;
  for (let i = 6; i < 10; i++) {
    const byte = buf[i] ?? 0xff;
    if (byte >= 0x80) return undefined; // sizes are "syncsafe": 7 bits per byte
    size = size * 128 + byte;
  }
  const footer = ((buf[5] ?? 0) & 0x10) !== 0 ? 10 : 0;
  return 10 + size + footer;
}

// ---------------------------------------------------------------- still images outside the contract

/** Brands that say which still-image format an ISO box file holds (major or compatible). */
const STILL_BRANDS: readonly [string, string][] = [
  ['avif', 'an AVIF image'],
  ['avis', 'an AVIF image sequence'],
  ['heic', 'a HEIC image'],
  ['heix', 'a HEIC image'],
  ['heim', 'a HEIC image'],
  ['heis', 'a HEIC image'],
  ['hevc', 'a HEIC image sequence'],
  ['hevx', 'a HEIC image sequence'],
  ['crx ', 'a Canon raw (CR3) file'],
  ['mif1', 'a HEIF image'],
  ['msf1', 'a HEIF image sequence'],
];

/** The sizes a BMP's DIB header comes in (BITMAPCOREHEADER 12 ... BITMAPV5HEADER 124). */
const BMP_HEADER_SIZES = new Set([12, 16, 40, 52, 56, 64, 108, 124]);

/**
 * What a file this worker does not accept is, when its first bytes say so: "an AVIF image", "a HEIC
 * image", "a TIFF image"... so that a refusal names what it received instead of "content in no
 * supported format". Only descriptive: these formats are refused whatever this says.
 */
export function describeUnsupportedImage(buf: Buffer): string | undefined {
  if (buf.length >= 16 && ascii(buf, 4, 8) === 'ftyp') {
    const size = Math.min(buf.readUInt32BE(0), buf.length);
    const brands = [ascii(buf, 8, 12)];
    for (let at = 16; at + 4 <= size; at += 4) brands.push(ascii(buf, at, at + 4));
    // The most specific brand wins: a HEIF file (mif1) that lists avif is AVIF.
    for (const [brand, description] of STILL_BRANDS) if (brands.includes(brand)) return description;
    return undefined;
  }
  const four = ascii(buf, 0, 4);
  if (four === 'II*\0' || four === 'MM\0*') return 'a TIFF image';
  if (ascii(buf, 0, 2) === 'BM' && buf.length >= 26 && BMP_HEADER_SIZES.has(buf.readUInt32LE(14))) return 'a BMP image';
  if (buf.length >= 2 && buf[0] === 0xff && buf[1] === 0x0a) return 'a JPEG XL image';
  if (buf.length >= 12 && buf.readUInt32BE(0) === 12 && ascii(buf, 4, 8) === 'JXL ') return 'a JPEG XL image';
  if (four === '8BPS') return 'a Photoshop (PSD) file';
  return undefined;
}

/** describeUnsupportedImage of a file's first bytes. */
export async function describeUnsupportedImageFile(path: string): Promise<string | undefined> {
  const handle = await open(path, 'r');
  try {
    const head = Buffer.alloc(256);
    const { bytesRead } = await handle.read(head, 0, head.length, 0);
    return describeUnsupportedImage(head.subarray(0, bytesRead));
  } finally {
    await handle.close();
  }
}

// ---------------------------------------------------------------- the dispatcher

/**
 * The format of a file from its first bytes (see SNIFF_HEAD_BYTES). An MP3 or AAC file whose ID3 tag
 * is longer than `buf` cannot be decided here; `sniffFile` reads past the tag for that case.
 */
export function sniffBuffer(buf: Buffer): SniffedFormat | null {
  if (buf.length >= 3 && buf[0] === 0xff && buf[1] === 0xd8 && buf[2] === 0xff) return 'jpeg';
  if (buf.length >= 8 && buf.readUInt32BE(0) === 0x89504e47 && buf.readUInt32BE(4) === 0x0d0a1a0a) return 'png';
  const gif = ascii(buf, 0, 6);
  if (gif === 'GIF87a' || gif === 'GIF89a') return 'gif';
  const riff = ascii(buf, 0, 4);
  if (riff === 'RIFF' || riff === 'RF64') {
    const form = ascii(buf, 8, 12);
    if (form === 'WAVE') return 'wav';
    if (form === 'WEBP' && riff === 'RIFF') return 'webp';
    return null;
  }
  if (riff === 'OggS' && buf[4] === 0) return 'ogg';
  if (riff === 'fLaC') return 'flac';

  const iso = sniffIsoBmff(buf);
  if (iso !== undefined) return iso;
  const ebml = sniffEbml(buf);
  if (ebml !== undefined) return ebml;

  const tagEnd = id3TagEnd(buf);
  // Some taggers put an ID3v2 tag before a FLAC stream too; ffmpeg's flac demuxer skips it.
  if (tagEnd !== undefined && ascii(buf, tagEnd, tagEnd + 4) === 'fLaC') return 'flac';
  if (tagEnd !== undefined) return sniffAudioFrames(buf, tagEnd);
  return sniffAudioFrames(buf, 0);
}

/** Reads the start of a file (and the bytes after a long ID3 tag) and sniffs its format. */
export async function sniffFile(path: string): Promise<SniffedFormat | null> {
  const handle = await open(path, 'r');
  try {
    const head = Buffer.alloc(SNIFF_HEAD_BYTES);
    const { bytesRead } = await handle.read(head, 0, head.length, 0);
    const buf = head.subarray(0, bytesRead);
    const tagEnd = id3TagEnd(buf);
    const wholeFile = bytesRead < head.length;
    if (tagEnd === undefined || wholeFile || tagEnd + 8 * 1024 <= bytesRead) return sniffBuffer(buf);
    // A long ID3 tag (cover art) pushes the first audio frame past the head.
    const window = Buffer.alloc(8 * 1024);
    const after = await handle.read(window, 0, window.length, tagEnd);
    return sniffAudioFrames(window.subarray(0, after.bytesRead), 0);
  } finally {
    await handle.close();
  }
}
