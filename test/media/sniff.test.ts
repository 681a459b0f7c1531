import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { id3TagEnd, isImageFormat, sniffBuffer, sniffFile, type SniffedFormat } from '../../src/media/sniff.js';
import { PHOTOS, makeClip, makeTempDir, makeTone } from './helpers.js';

let dir: string;
let cleanup: () => Promise<void>;
const files = new Map<string, string>();

beforeAll(async () => {
  ({ dir, cleanup } = await makeTempDir('sniff'));
  const p = (name: string): string => join(dir, name);
  const photo = join(PHOTOS, 'astronaut.png');
  const x264 = ['-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p'];
  // Names deliberately say nothing true about the content: only bytes count.
  const jobs: Array<[SniffedFormat, Promise<unknown>]> = [
    ['jpeg', sharp(photo).resize(32).jpeg().toFile(p('jpeg.bin'))],
    ['png', sharp(photo).resize(32).png().toFile(p('png.bin'))],
    ['webp', sharp(photo).resize(32).webp().toFile(p('webp.bin'))],
    ['gif', makeClip(p('gif.gif'), { seconds: 0.3, rate: 10, codec: [] })],
    ['mp4', makeClip(p('mp4.mp4'), { seconds: 0.2, codec: x264 })],
    ['mov', makeClip(p('mov.mov'), { seconds: 0.2, codec: x264 })],
    ['m4v', makeClip(p('m4v.m4v'), { seconds: 0.2, codec: x264 })],
    ['mkv', makeClip(p('mkv.mkv'), { seconds: 0.2, codec: x264 })],
    ['webm', makeClip(p('webm.webm'), { seconds: 0.2, codec: ['-c:v', 'libvpx', '-b:v', '100k'] })],
    ['mp3', makeTone(p('mp3.mp3'))],
    ['wav', makeTone(p('wav.wav'))],
    ['aac', makeTone(p('aac.aac'), ['-c:a', 'aac'])],
    ['ogg', makeTone(p('ogg.ogg'), ['-c:a', 'libopus'])],
    ['m4a', makeTone(p('m4a.m4a'), ['-c:a', 'aac'])],
    ['flac', makeTone(p('flac.flac'), ['-c:a', 'flac'])],
  ];
  await Promise.all(jobs.map(([, job]) => job));
  const names: Record<SniffedFormat, string> = {
    jpeg: 'jpeg.bin',
    png: 'png.bin',
    webp: 'webp.bin',
    gif: 'gif.gif',
    mp4: 'mp4.mp4',
    mov: 'mov.mov',
    m4v: 'm4v.m4v',
    mkv: 'mkv.mkv',
    webm: 'webm.webm',
    mp3: 'mp3.mp3',
    wav: 'wav.wav',
    aac: 'aac.aac',
    ogg: 'ogg.ogg',
    m4a: 'm4a.m4a',
    flac: 'flac.flac',
  };
  for (const [format] of jobs) files.set(format, p(names[format]));
});

afterAll(async () => {
  await cleanup();
});

describe('sniffFile on real files written by ffmpeg and sharp', () => {
  const formats: SniffedFormat[] = [
    'jpeg',
    'png',
    'webp',
    'gif',
    'mp4',
    'mov',
    'm4v',
    'mkv',
    'webm',
    'mp3',
    'wav',
    'aac',
    'ogg',
    'm4a',
    'flac',
  ];
  it.each(formats)('recognises %s', async (format) => {
    const path = files.get(format);
    expect(path).toBeDefined();
    expect(await sniffFile(path ?? '')).toBe(format);
  });

  it('does not care about the file name: an MP4 renamed to .mp3 is still an MP4', async () => {
    const renamed = join(dir, 'lies.mp3');
    await writeFile(renamed, await readFile(files.get('mp4') ?? ''));
    expect(await sniffFile(renamed)).toBe('mp4');
  });
});

describe('sniffBuffer refuses everything else', () => {
  const text = (s: string): Buffer => Buffer.from(s, 'utf8');
  const ftyp = (brand: string): Buffer => {
    const b = Buffer.alloc(24);
    b.writeUInt32BE(24, 0);
    b.write('ftyp', 4, 'latin1');
    b.write(brand, 8, 'latin1');
    b.write(brand, 16, 'latin1');
    return b;
  };
  it.each([
    ['an HLS playlist', text('#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1.0,\nseg.ts\n#EXT-X-ENDLIST\n')],
    ['an ffconcat script', text('ffconcat version 1.0\nfile /etc/passwd\n')],
    ['plain text', text('hello, this is not a video at all\n')],
    ['an HTML error page', text('<!DOCTYPE html><html><body>404</body></html>')],
    ['an empty file', Buffer.alloc(0)],
    ['zeros', Buffer.alloc(4096)],
    ['a HEIC still image', ftyp('heic')],
    ['an AVIF still image', ftyp('avif')],
    [
      'a lone MP3 sync word followed by junk',
      Buffer.concat([Buffer.from([0xff, 0xfb, 0x90, 0x64]), Buffer.alloc(2000, 0x41)]),
    ],
    ['a RIFF file that is neither WAVE nor WebP', Buffer.concat([text('RIFF'), Buffer.alloc(4), text('AVI LIST')])],
    [
      'a Matroska header with an unknown DocType',
      Buffer.from([0x1a, 0x45, 0xdf, 0xa3, 0x87, 0x42, 0x82, 0x84, 0x61, 0x62, 0x63, 0x64]),
    ],
  ])('%s -> null', (_name, buf) => {
    expect(sniffBuffer(buf)).toBeNull();
  });

  it('reads ISO brands: qt -> mov, M4V -> m4v, M4A -> m4a, anything else -> mp4', () => {
    expect(sniffBuffer(ftyp('qt  '))).toBe('mov');
    expect(sniffBuffer(ftyp('M4V '))).toBe('m4v');
    expect(sniffBuffer(ftyp('M4A '))).toBe('m4a');
    expect(sniffBuffer(ftyp('isom'))).toBe('mp4');
    expect(sniffBuffer(ftyp('3gp4'))).toBe('mp4');
  });

  it('reads the Matroska DocType (webm vs matroska)', () => {
    const ebml = (doc: string): Buffer =>
      Buffer.concat([
        Buffer.from([0x1a, 0x45, 0xdf, 0xa3, 0x80 | (3 + doc.length), 0x42, 0x82, 0x80 | doc.length]),
        text(doc),
      ]);
    expect(sniffBuffer(ebml('webm'))).toBe('webm');
    expect(sniffBuffer(ebml('matroska'))).toBe('mkv');
  });

  it('classifies image formats', () => {
    expect(isImageFormat('png')).toBe(true);
    expect(isImageFormat('gif')).toBe(false);
    expect(isImageFormat(null)).toBe(false);
  });
});

describe('MP3 and AAC behind ID3 tags', () => {
  function id3(payloadBytes: number): Buffer {
    const header = Buffer.from([0x49, 0x44, 0x33, 4, 0, 0, 0, 0, 0, 0]);
    let size = payloadBytes;
    for (let i = 9; i >= 6; i--) {
      header[i] = size & 0x7f;
      size >>= 7;
    }
    return Buffer.concat([header, Buffer.alloc(payloadBytes)]);
  }

  it('computes the syncsafe tag size', () => {
    expect(id3TagEnd(id3(300))).toBe(310);
    expect(id3TagEnd(Buffer.from('not a tag'))).toBeUndefined();
  });

  it('recognises bare MP3 frames without any tag', async () => {
    const mp3 = await readFile(files.get('mp3') ?? '');
    const bare = mp3.subarray(id3TagEnd(mp3) ?? 0);
    expect(bare[0]).toBe(0xff);
    expect(sniffBuffer(bare)).toBe('mp3');
  });

  it('finds a FLAC stream after an ID3 tag', async () => {
    const flac = await readFile(files.get('flac') ?? '');
    expect(sniffBuffer(Buffer.concat([id3(500), flac]))).toBe('flac');
  });

  it('finds AAC frames after an ID3 tag', async () => {
    const aac = await readFile(files.get('aac') ?? '');
    expect(sniffBuffer(Buffer.concat([id3(500), aac]))).toBe('aac');
  });

  it('reads past a tag longer than the sniffed head (cover art) to find the MP3 frames', async () => {
    const mp3 = await readFile(files.get('mp3') ?? '');
    const tagged = Buffer.concat([id3(200 * 1024), mp3.subarray(id3TagEnd(mp3) ?? 0)]);
    const path = join(dir, 'cover-art.bin');
    await writeFile(path, tagged);
    expect(sniffBuffer(tagged.subarray(0, 64 * 1024))).toBeNull();
    expect(await sniffFile(path)).toBe('mp3');
  });
});
