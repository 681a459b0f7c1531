/**
 * Lying files for the quote's tests and the input-measure benchmark: ffmpeg-made clips whose
 * headers are edited byte by byte to claim another duration, while their streams stay as they
 * were. Each edit finds its field by the format's own layout and fails loudly when the layout is
 * not the expected one.
 */
import { readFile, writeFile } from 'node:fs/promises';

function indexesOf(bytes: Buffer, tag: string): number[] {
  const found: number[] = [];
  for (let at = bytes.indexOf(tag, 0, 'latin1'); at >= 0; at = bytes.indexOf(tag, at + 1, 'latin1')) found.push(at);
  if (found.length === 0) throw new Error(`Expected a ${JSON.stringify(tag)} in the file but found none`);
  return found;
}

/** A full box's duration field, after version/flags, creation and modification times (and a track id for tkhd). */
function writeBoxDuration(bytes: Buffer, at: number, skip: number, value: number): void {
  const version = bytes[at + 4];
  const offset = at + 8 + (version === 1 ? 16 : 8) + skip;
  if (version === 1) bytes.writeBigUInt64BE(BigInt(value), offset);
  else bytes.writeUInt32BE(value, offset);
}

function timescaleOf(bytes: Buffer, at: number): number {
  return bytes.readUInt32BE(at + 8 + (bytes[at + 4] === 1 ? 16 : 8));
}

/** MP4/MOV/M4V/M4A: mvhd, every tkhd and every mdhd say `seconds`. */
export async function mp4HeadersSay(file: string, seconds: number): Promise<void> {
  const bytes = await readFile(file);
  const [mvhd] = indexesOf(bytes, 'mvhd');
  const movieScale = timescaleOf(bytes, mvhd as number);
  writeBoxDuration(bytes, mvhd as number, 4, Math.round(seconds * movieScale));
  for (const at of indexesOf(bytes, 'tkhd')) writeBoxDuration(bytes, at, 8, Math.round(seconds * movieScale));
  for (const at of indexesOf(bytes, 'mdhd'))
    writeBoxDuration(bytes, at, 4, Math.round(seconds * timescaleOf(bytes, at)));
  await writeFile(file, bytes);
}

/** Matroska/WebM: Segment Duration (ID 0x4489, in TimestampScale units: ms as ffmpeg writes) says `seconds`; DURATION tags renamed. */
export async function matroskaHeadersSay(file: string, seconds: number): Promise<void> {
  const bytes = await readFile(file);
  const at = bytes.indexOf(Buffer.from([0x44, 0x89]));
  const size = bytes[at + 2];
  if (size === 0x88) bytes.writeDoubleBE(seconds * 1000, at + 3);
  else if (size === 0x84) bytes.writeFloatBE(seconds * 1000, at + 3);
  else throw new Error(`Expected a 4- or 8-byte Segment Duration but found size byte ${String(size)}`);
  for (const tag of indexesOf(bytes, 'DURATION')) bytes.write('DURATIOX', tag, 'latin1');
  await writeFile(file, bytes);
}

/** MP3: the Xing/Info header's frame count divided by `by`. */
export async function mp3XingFramesDivided(file: string, by: number): Promise<void> {
  const bytes = await readFile(file);
  const at =
    bytes.indexOf('Xing', 0, 'latin1') >= 0
      ? bytes.indexOf('Xing', 0, 'latin1')
      : (indexesOf(bytes, 'Info')[0] as number);
  if ((bytes.readUInt32BE(at + 4) & 1) === 0) throw new Error('Expected the Xing header to carry a frame count');
  bytes.writeUInt32BE(Math.floor(bytes.readUInt32BE(at + 8) / by), at + 8);
  await writeFile(file, bytes);
}

/** Ogg's CRC-32 (polynomial 0x04c11db7, no reflection, zero start). */
function oggCrc(page: Buffer): number {
  let crc = 0;
  for (const byte of page) {
    crc ^= byte << 24;
    for (let bit = 0; bit < 8; bit += 1) crc = crc & 0x80000000 ? ((crc << 1) ^ 0x04c11db7) >>> 0 : (crc << 1) >>> 0;
  }
  return crc >>> 0;
}

/** Ogg: the last page's granule position (what ffprobe reads the duration from) says `samples`, its CRC made right. */
export async function oggLastGranuleSays(file: string, samples: number): Promise<void> {
  const bytes = await readFile(file);
  const last = indexesOf(bytes, 'OggS').at(-1) as number;
  bytes.writeBigInt64LE(BigInt(samples), last + 6);
  bytes.writeUInt32LE(0, last + 22);
  bytes.writeUInt32LE(oggCrc(bytes.subarray(last)), last + 22);
  await writeFile(file, bytes);
}
