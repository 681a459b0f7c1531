/**
 * The video half of the fidelity corpus: short, small clips made with ffmpeg to look like what
 * people upload (a phone's HDR10 and HLG HEVC, a variable-frame-rate recording, a Matroska file
 * with several tracks, an odd size). Used by test/video/fidelity.test.ts and bench/fidelity/fidelity-video.ts,
 * so the test and the benchmark measure the same files. Each clip is a second or two of a few
 * dozen pixels: the suite stays fast.
 */
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { resolveFfmpeg } from '../../src/media/index.js';
import { pgsSubtitles } from './pgs-subtitle.js';

const run = promisify(execFile);

async function ffmpeg(args: string[]): Promise<void> {
  await run(resolveFfmpeg({ ffmpegPath: process.env['FFMPEG_PATH'] ?? '' }), [
    '-hide_banner',
    '-v',
    'error',
    '-y',
    ...args,
  ]);
}

/** HDR10's mastering display (a P3-D65 grading monitor, 1000 / 0.0001 cd/m²) and content light, in x265's units. */
export const HDR10_MASTER_DISPLAY = 'G(13250,34500)B(7500,3000)R(34000,16000)WP(15635,16450)L(10000000,1)';
export const HDR10_MAX_CLL = '1000,400';

/** Side of one flat patch of the chart, pixels. */
export const PATCH = 8;

/**
 * A colour patch chart: flat 8x8 patches, 8 levels of red across, 8 of green down, 4 of blue
 * diagonally, so CIEDE2000 has flat colours to measure away from the edges (bench/fidelity/fidelity-video.ts).
 */
const chart = (size: string, rate: number, seconds: number): string[] => [
  '-f',
  'lavfi',
  '-i',
  `color=c=black:size=${size}:rate=${rate}:duration=${seconds},format=gbrp,` +
    `geq=r='16+28*mod(trunc(X/${PATCH})\\,8)':g='16+28*mod(trunc(Y/${PATCH})\\,8)':b='16+56*mod(trunc(X/${PATCH})+trunc(Y/${PATCH})\\,4)'`,
];
const tone = (seconds: number, frequency = 440): string[] => [
  '-f',
  'lavfi',
  '-i',
  `sine=frequency=${frequency}:sample_rate=48000:duration=${seconds}`,
];

function x265(transfer: 'smpte2084' | 'arib-std-b67', hdr10: boolean, lossless = false): string[] {
  const params = [
    'log-level=error',
    'colorprim=bt2020',
    `transfer=${transfer}`,
    'colormatrix=bt2020nc',
    ...(lossless ? ['lossless=1'] : []),
  ];
  if (hdr10) params.push(`master-display=${HDR10_MASTER_DISPLAY}`, `max-cll=${HDR10_MAX_CLL}`);
  return [
    '-c:v',
    'libx265',
    '-preset',
    'ultrafast',
    '-pix_fmt',
    'yuv420p10le',
    '-x265-params',
    params.join(':'),
    '-color_primaries',
    'bt2020',
    '-color_trc',
    transfer,
    '-colorspace',
    'bt2020nc',
    '-tag:v',
    'hvc1',
  ];
}

export interface VideoCorpus {
  /** HDR10 HEVC 10-bit PQ, mastering display + MaxCLL, stored 64x48 and rotated 90° (displayed 48x64), AAC. */
  hdr10: string;
  /** HLG HEVC 10-bit, 64x48, AAC. */
  hlg: string;
  /** 1 s at 30 fps then 1 s at 15 fps, 48x32, with a 2 s tone. */
  vfr: string;
  /** Matroska: H.264, 2 audio tracks (eng "Main", fra "Commentaire"), SRT subtitles, 2 chapters, a title, a creation time, a location. */
  tracks: string;
  /** 321x181 (odd sides), 4:4:4 H.264, AAC, a 32x32 PNG cover, a timecode track (01:02:03:04): upscaled at factor 1. */
  odd: string;
  /** A shallow 10-bit PQ ramp, 320x16, lossless HEVC: 41 grey levels across, a new one every 8 pixels (8 bits would step every 32). */
  ramp10: string;
  /**
   * Matroska with what MP4 cannot carry: HDR10 HEVC 64x48 (1 s); Opus (eng "Main", with a location
   * tag of its own) and FLAC (fra); Blu-ray PGS (eng "Signs", forced), DVB (deu) and SubRip (fra)
   * subtitles; a font attachment; a PNG cover (an image attachment); 2 chapters, a title and a location.
   */
  bitmaps: string;
}

/** The font attached to the `bitmaps` clip: any bytes do, the test checks they come back unchanged. */
export const CORPUS_FONT = {
  name: 'CorpusSans.ttf',
  mimetype: 'application/x-truetype-font',
  bytes: Buffer.from('corpus font bytes, not a real font\n'.repeat(8)),
};

const SRT = '1\n00:00:00,000 --> 00:00:00,400\nHello\n\n2\n00:00:00,500 --> 00:00:00,900\nWorld\n';
const CHAPTERS = [
  ';FFMETADATA1',
  'title=Fidelity corpus',
  'creation_time=2024-05-01T10:20:30.000000Z',
  'location=+48.8584+002.2945/',
  '[CHAPTER]',
  'TIMEBASE=1/1000',
  'START=0',
  'END=500',
  'title=Opening',
  '[CHAPTER]',
  'TIMEBASE=1/1000',
  'START=500',
  'END=1000',
  'title=Ending',
  '',
].join('\n');

/** Makes every clip of the corpus in `dir` (in parallel) and returns their paths. */
export async function makeVideoCorpus(dir: string): Promise<VideoCorpus> {
  const at = (name: string): string => join(dir, name);
  await writeFile(at('subs.srt'), SRT);
  await writeFile(
    at('subs.sup'),
    pgsSubtitles({ width: 64, height: 48, box: { x: 16, y: 36, width: 32, height: 8 } }, [
      { start: 0, end: 0.4 },
      { start: 0.5, end: 0.9 },
    ]),
  );
  await writeFile(at(CORPUS_FONT.name), CORPUS_FONT.bytes);
  await writeFile(at('meta.txt'), CHAPTERS);
  const x264 = ['-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p'];
  await Promise.all([
    ffmpeg([
      ...chart('64x48', 24, 0.5),
      ...tone(0.5),
      ...x265('smpte2084', true),
      '-c:a',
      'aac',
      at('hdr10-upright.mp4'),
    ]),
    ffmpeg([
      ...chart('64x48', 24, 0.5),
      ...tone(0.5),
      ...x265('arib-std-b67', false),
      '-c:a',
      'aac',
      // A phone's QuickTime metadata keys (reverse-DNS names), its location among them.
      '-movflags',
      'use_metadata_tags',
      '-metadata',
      'com.apple.quicktime.make=Apple',
      '-metadata',
      'com.apple.quicktime.creationdate=2024-05-01T10:20:30+0200',
      '-metadata',
      'com.apple.quicktime.location.ISO6709=+48.8584+002.2945+035.000/',
      at('hlg.mp4'),
    ]),
    ffmpeg([
      ...chart('48x32', 30, 2),
      ...tone(2),
      // A colour of its own per frame (so each output frame can be traced to its input frame), then
      // every frame of the first second and every other one of the second: 30 fps, then 15 fps.
      '-vf',
      "format=gbrp,geq=r='4*N':g='255-4*N':b='mod(97*N\\,256)',select='lt(n\\,30)+not(mod(n\\,2))'",
      '-fps_mode',
      'vfr',
      ...x264,
      '-c:a',
      'aac',
      at('vfr.mp4'),
    ]),
    ffmpeg([
      ...chart('64x48', 25, 1),
      ...tone(1),
      ...tone(1, 880),
      '-i',
      at('subs.srt'),
      '-i',
      at('meta.txt'),
      '-map',
      '0:v',
      '-map',
      '1:a',
      '-map',
      '2:a',
      '-map',
      '3:s',
      '-map_metadata',
      '4',
      '-map_chapters',
      '4',
      ...x264,
      '-c:a:0',
      'aac',
      '-c:a:1',
      'libopus',
      '-c:s',
      'subrip',
      '-metadata:s:a:0',
      'language=eng',
      '-metadata:s:a:0',
      'title=Main',
      '-metadata:s:a:1',
      'language=fra',
      '-metadata:s:a:1',
      'title=Commentaire',
      '-metadata:s:s:0',
      'language=eng',
      '-disposition:a:0',
      'default',
      '-disposition:a:1',
      '0',
      at('tracks.mkv'),
    ]),
    ffmpeg([
      // The chart is made at even sizes: cropped to the odd one. A 32x32 PNG cover, as music videos carry.
      ...chart('322x182', 25, 0.12),
      ...tone(0.12),
      '-f',
      'lavfi',
      '-i',
      'color=c=orange:size=32x32:duration=0.04',
      '-map',
      '0:v',
      '-map',
      '1:a',
      '-map',
      '2:v',
      '-filter:v:0',
      'format=yuv444p,crop=321:181:0:0',
      '-c:v:0',
      'libx264',
      '-preset',
      'ultrafast',
      '-pix_fmt:v:0',
      'yuv444p',
      '-c:a',
      'aac',
      '-c:v:1',
      'png',
      '-disposition:v:1',
      'attached_pic',
      '-metadata:s:v:0',
      'timecode=01:02:03:04',
      at('odd.mp4'),
    ]),
    ffmpeg([
      '-f',
      'lavfi',
      '-i',
      'nullsrc=size=320x16:rate=24:duration=0.09',
      '-vf',
      "format=yuv420p10le,geq=lum='400+X*40/319':cb=512:cr=512",
      ...x265('smpte2084', false, true),
      at('ramp10.mp4'),
    ]),
  ]);
  await ffmpeg(['-f', 'lavfi', '-i', 'color=c=orange:size=32x32', '-frames:v', '1', at('cover.png')]);
  await ffmpeg([
    // The DVB track is encoded from the PGS one (ffmpeg encodes bitmap subtitles from bitmaps only);
    // -fix_sub_duration ends each cue where the next begins, not at the end of time.
    ...chart('64x48', 24, 1),
    ...tone(1),
    ...tone(1, 660),
    '-fix_sub_duration',
    '-i',
    at('subs.sup'),
    '-i',
    at('subs.srt'),
    '-i',
    at('meta.txt'),
    '-map',
    '0:v',
    '-map',
    '1:a',
    '-map',
    '2:a',
    '-map',
    '3:s',
    '-map',
    '3:s',
    '-map',
    '4:s',
    '-map_metadata',
    '5',
    '-map_chapters',
    '5',
    // Matroska has no codec tags (no hvc1).
    ...x265('smpte2084', true).slice(0, -2),
    '-c:a:0',
    'libopus',
    '-c:a:1',
    'flac',
    '-c:s:0',
    'copy',
    '-c:s:1',
    'dvbsub',
    '-c:s:2',
    'subrip',
    '-metadata:s:a:0',
    'language=eng',
    '-metadata:s:a:0',
    'title=Main',
    '-metadata:s:a:0',
    'location=+48.8584+002.2945/',
    '-metadata:s:a:1',
    'language=fra',
    '-metadata:s:s:0',
    'language=eng',
    '-metadata:s:s:0',
    'title=Signs',
    '-disposition:s:0',
    'forced',
    '-metadata:s:s:1',
    'language=deu',
    '-metadata:s:s:2',
    'language=fra',
    // Matroska keeps a cover as an image attachment (ffmpeg reads it back as an attached picture).
    '-attach',
    at(CORPUS_FONT.name),
    '-metadata:s:t:0',
    `mimetype=${CORPUS_FONT.mimetype}`,
    '-attach',
    at('cover.png'),
    '-metadata:s:t:1',
    'mimetype=image/png',
    at('bitmaps.mkv'),
  ]);
  // A phone holds the sensor landscape and says how to turn it.
  await ffmpeg([
    '-i',
    at('hdr10-upright.mp4'),
    '-map',
    '0',
    '-c',
    'copy',
    '-metadata:s:v:0',
    'rotate=90',
    at('hdr10.mp4'),
  ]);
  return {
    hdr10: at('hdr10.mp4'),
    hlg: at('hlg.mp4'),
    vfr: at('vfr.mp4'),
    tracks: at('tracks.mkv'),
    odd: at('odd.mp4'),
    ramp10: at('ramp10.mp4'),
    bitmaps: at('bitmaps.mkv'),
  };
}
