/**
 * Pure builders for the two ffmpeg processes of a video upscale, and the decisions behind them
 * (which audio is copied, which encoder options a codec takes). Every number comes from
 * video-geometry.ts; every input goes through media/'s whitelisting builders.
 *
 * Decoder: the input file (its sniffed demuxer only, file protocol only) -> the first real video
 * stream, deinterlaced when interlaced, rotation applied, scaled to exactly the expected size (a
 * stream that changes resolution midway still yields frames of one size, never a misaligned pipe),
 * converted to RGB with the input's own YUV matrix (or tone-mapped) -> raw rgb24, or rgb48le for a
 * 16-bit plan, on stdout (colour.ts). `-xerror`: a damaged input stops the decoder with an error
 * instead of being concealed into glitched frames or silently cut short.
 *
 * Encoder: raw RGB on stdin at the network's output size and the input's rate, plus the input file
 * again for the streams the result keeps (stream-map.ts) -> factor "1" Lanczos downscale, YUV with the
 * plan's matrix (4:2:0, or 4:4:4 for an odd side) -> H.264 8-bit or HEVC Main10 with the plan's
 * colour tags, in MP4 (`+faststart` for progressive playback) or Matroska (result-container.ts).
 */
import {
  type ContainerKind,
  type Rational,
  fileInput,
  quietFfmpegArgs,
  rgbPipeInputArgs,
  rgbPipeOutputArgs,
  safeFileInputArgs,
} from '../media/index.js';
import type { VideoExtras } from './video-probe.js';
import {
  type ColourMatrix,
  type ColourPlan,
  type ColourSource,
  colourTagArgs,
  decodeColourFilters,
  encodeColourFilters,
  encodePixelFormat,
  pipePixelFormat,
  x265ColourParams,
} from './colour.js';
import { type StreamMap, metadataArgs, mp4Movflags, streamMapArgs } from './stream-map.js';
import { resultFormatOf } from './result-container.js';
import { type FrameTiming, type Size, type VideoGeometry, formatRate } from './video-geometry.js';
import { X264_PRESETS, type EncoderSettings, type VideoEncoderName, type X264Preset } from './settings.js';

export function isHardwareEncoder(codec: VideoEncoderName): boolean {
  return codec !== 'libx264';
}

/** The encoder's quality options. */
export function videoCodecArgs(settings: EncoderSettings): string[] {
  const { codec, crf, preset } = settings;
  if (!Number.isInteger(crf) || crf < 0 || crf > 51) {
    throw new RangeError(`Expected the encoder crf to be an integer from 0 to 51 but received ${String(crf)}`);
  }
  if (!(X264_PRESETS as readonly string[]).includes(preset)) {
    throw new RangeError(
      `Expected the encoder preset to be one of ${X264_PRESETS.join(', ')} but received ${JSON.stringify(preset)}`,
    );
  }
  const threads = settings.threads !== undefined && settings.threads > 0 ? ['-threads', String(settings.threads)] : [];
  switch (codec) {
    case 'libx264':
      return ['-c:v', 'libx264', '-preset', preset, '-crf', String(crf), ...threads];
    case 'h264_nvenc':
      // NVENC's p1 (fastest) .. p7 (best); constant quality through -cq with VBR and no bitrate cap.
      return [
        '-c:v',
        'h264_nvenc',
        '-preset',
        NVENC_PRESET[preset],
        '-rc',
        'vbr',
        '-cq',
        String(Math.max(1, crf)),
        '-b:v',
        '0',
      ];
    case 'h264_qsv':
      return ['-c:v', 'h264_qsv', '-preset', QSV_PRESET[preset], '-global_quality', String(Math.max(1, crf))];
  }
}

const NVENC_PRESET: Readonly<Record<X264Preset, string>> = {
  ultrafast: 'p1',
  superfast: 'p1',
  veryfast: 'p2',
  faster: 'p3',
  fast: 'p4',
  medium: 'p5',
  slow: 'p6',
  slower: 'p7',
  veryslow: 'p7',
};

const QSV_PRESET: Readonly<Record<X264Preset, string>> = {
  ultrafast: 'veryfast',
  superfast: 'veryfast',
  veryfast: 'veryfast',
  faster: 'faster',
  fast: 'fast',
  medium: 'medium',
  slow: 'slow',
  slower: 'slower',
  veryslow: 'veryslow',
};

/**
 * The matrix that turns the input's YUV into RGB: its own when tagged, otherwise what players
 * assume for an untagged picture of that size (BT.709 from 720 lines or 1280 columns, BT.601 below).
 */
export function inputMatrix(extras: Pick<VideoExtras, 'matrix'>, decoded: Size): ColourMatrix {
  if (extras.matrix !== undefined) return extras.matrix;
  return decoded.height >= 720 || decoded.width >= 1280 ? 'bt709' : 'bt601';
}

export interface DecoderArgsInput {
  inputPath: string;
  container: ContainerKind;
  geometry: Pick<VideoGeometry, 'decoded'>;
  timing: FrameTiming;
  matrix: ColourMatrix;
  /** Depth, tone mapping and the matrix to read with (colour.ts); default 8-bit SDR read with `matrix`. */
  colour?: ColourPlan;
  /** The input's transfer and primaries, for tone mapping. */
  colourSource?: Pick<ColourSource, 'transfer' | 'primaries'>;
  /** Deinterlace first (one frame out per frame in, so the frame count stays). */
  interlaced?: boolean;
  /** Which real video stream (`0:V:n`); default the first. */
  videoIndex?: number;
  /** The backstop: the decoder stops after this many frames (what the quote allows), whatever the file holds. */
  maxFrames?: number;
}

/** Deinterlacing with one frame out per frame in, so the frame count stays. */
export const DEINTERLACE_FILTER = 'bwdif=mode=send_frame:parity=auto:deint=all';

/** Decoded video to rgb24 of exactly `size`, its YUV read with the input's own matrix (the 8-bit SDR plan of colour.ts). */
export function rgbFilters(size: Size, matrix: ColourMatrix): string[] {
  return decodeColourFilters(sdrPlan(matrix), {}, size);
}

/** The plan of 8-bit SDR frames read with `matrix` and written BT.709 (the mouth synchronisation's lossless test path and the old callers). */
function sdrPlan(matrix: ColourMatrix): ColourPlan {
  return {
    depth: 8,
    toneMap: false,
    inputMatrix: matrix,
    output: { codec: 'h264', bits: 8, matrix: 'bt709', matrixTag: 'bt709' },
  };
}

/** RGB of `size` to what the encoder takes (colour.ts): YUV with the plan's matrix, 4:2:0, or 4:4:4 where a side is odd. */
export function yuvFilters(size: Size, plan: Pick<ColourPlan, 'output'>): string[] {
  return encodeColourFilters(plan, size);
}

export function decoderArgs(input: DecoderArgsInput): string[] {
  const colour = input.colour ?? sdrPlan(input.matrix);
  const filters = [
    ...(input.interlaced === true ? [DEINTERLACE_FILTER] : []),
    // Constant rate by the fps filter: each output time shows the frame on screen then (a frame's
    // time rounded to the nearest output frame); ffmpeg's output-side cfr may show a frame up to one
    // frame early.
    ...(input.timing.mode === 'cfr' ? [`fps=${formatRate(input.timing.rate)}`] : []),
    ...decodeColourFilters(colour, input.colourSource ?? {}, input.geometry.decoded),
  ];
  return [
    ...quietFfmpegArgs(),
    '-xerror',
    ...safeFileInputArgs(input.inputPath, input.container),
    '-map',
    `0:V:${input.videoIndex ?? 0}`,
    '-an',
    '-sn',
    '-dn',
    '-vf',
    filters.join(','),
    '-fps_mode',
    'passthrough',
    ...(input.maxFrames === undefined ? [] : ['-frames:v', String(input.maxFrames)]),
    ...rgbPipeOutputArgs(pipePixelFormat(colour.depth)),
  ];
}

export interface EncoderArgsInput {
  geometry: VideoGeometry;
  timing: FrameTiming;
  encoder: EncoderSettings;
  extras: VideoExtras;
  /** Bit depth, codec and colour of the result (colour.ts). */
  colour: ColourPlan;
  /** The original file, read again for the streams the result keeps. */
  source: { path: string; container: ContainerKind };
  /** The streams kept besides the picture, and the container they go in (stream-map.ts). */
  streams: StreamMap;
  /** Matroska covers taken out of the source (coversToExtract), by stream index. */
  coverFiles?: ReadonlyMap<number, string>;
  /** Where ffmpeg writes the result (absolute). */
  outputPath: string;
}

/** The encoder's filter chain, from network-size RGB to output-size YUV. */
export function encoderFilters(
  geometry: VideoGeometry,
  extras: Pick<VideoExtras, 'sampleAspect'>,
  colour: Pick<ColourPlan, 'output'> = sdrPlan('bt709'),
): string {
  const filters: string[] = [];
  const { network, target } = geometry;
  if (network.width !== target.width || network.height !== target.height) {
    filters.push(`scale=w=${target.width}:h=${target.height}:flags=lanczos+accurate_rnd`);
  }
  filters.push(...yuvFilters(target, colour));
  // The upscale keeps the picture's shape: a non-square pixel stays non-square (a quarter turn swaps it).
  filters.push(`setsar=${extras.sampleAspect.num}/${extras.sampleAspect.den}`);
  return filters.join(',');
}

/** HEVC's constant quality for an x264 CRF: x265's scale sits about 5 higher for the same look (28 ~ x264's 23); 0 stays lossless. */
export const X265_CRF_OFFSET = 5;

/**
 * The video codec options of a plan: the configured H.264 encoder for 8-bit results; libx265 Main10
 * (hardware HEVC encoders are not used) for 10-bit ones, with its VUI and HDR10 SEI from the plan and
 * the `hvc1` tag Apple's players need.
 */
export function planCodecArgs(settings: EncoderSettings, colour: Pick<ColourPlan, 'output'>): string[] {
  if (colour.output.codec === 'h264') return videoCodecArgs(settings);
  videoCodecArgs({ ...settings, codec: 'libx264' }); // the same checks of crf and preset
  const params = ['log-level=error', ...x265ColourParams(colour)];
  if (settings.threads !== undefined && settings.threads > 0) params.push(`pools=${settings.threads}`);
  // CRF 0 means lossless on the x264 scale; x265's CRF 0 is not, its lossless mode is.
  if (settings.crf === 0) params.push('lossless=1');
  return [
    '-c:v',
    'libx265',
    '-preset',
    settings.preset,
    '-crf',
    String(settings.crf === 0 ? 0 : Math.min(51, settings.crf + X265_CRF_OFFSET)),
    '-x265-params',
    params.join(':'),
    '-tag:v',
    'hvc1',
  ];
}

/**
 * The time base a delayed video start is kept in: about 90 kHz (MPEG's clock), a whole multiple of
 * the rate's numerator so every frame still lands on a whole tick (23.976 = 2997/125 fps: 89,910).
 */
export function fineTimescale(rate: Rational): number {
  return rate.num >= 90_000 ? rate.num : rate.num * Math.max(1, Math.round(90_000 / rate.num));
}

/** Filters that move every frame `seconds` later, to the tick of `timescale`. */
export function startOffsetFilters(seconds: number, timescale: number): string[] {
  return [`settb=1/${timescale}`, `setpts=PTS+${Math.round(seconds * timescale)}`];
}

/** Codec options aimed at the picture (output video 0) only, so they never reach copied cover art; no codec tag in Matroska (it has none). */
function pictureOnly(args: string[], container: StreamMap['container']): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i += 1) {
    const arg = args[i]!;
    if (arg === '-tag:v' && container !== 'mp4') i += 1;
    else out.push(arg === '-c:v' ? '-c:v:0' : arg === '-tag:v' ? '-tag:v:0' : arg);
  }
  return out;
}

/**
 * The muxer's options: MP4's index first (`+faststart`), QuickTime keys where the source has them
 * (stream-map.ts `mp4Movflags`) and, for a delayed start, its track time base; Matroska's
 * dispositions as the input had them (its default would mark the first track of each type default
 * where none is).
 */
function muxerArgs(
  container: StreamMap['container'],
  fineTimescale: number | undefined,
  tags: Readonly<Record<string, string>>,
): string[] {
  const format = resultFormatOf(container);
  if (format.muxer !== 'mp4') return ['-default_mode', 'passthrough', '-f', format.muxer];
  return [
    ...(fineTimescale === undefined ? [] : ['-video_track_timescale', String(fineTimescale)]),
    '-movflags',
    mp4Movflags(tags),
    '-f',
    format.muxer,
  ];
}

export function encoderArgs(input: EncoderArgsInput): string[] {
  const { geometry, timing, extras, colour } = input;
  const { container } = input.streams;
  const rate = formatRate(timing.rate);
  const rawInput = rgbPipeInputArgs(geometry.network, rate, [], pipePixelFormat(colour.depth));
  // The pipe carries no timestamps: the first frame goes where the input's video started, in a
  // time base of about 1/90000 s (the pipe's own, 1/rate, would round the start to a whole frame;
  // Matroska stores milliseconds whatever it is given).
  const timescale = fineTimescale(timing.rate);
  const offset = extras.videoStartOffset > 0 ? startOffsetFilters(extras.videoStartOffset, timescale) : [];
  const fineTime = offset.length > 0 ? ['-enc_time_base:v:0', `1/${timescale}`] : [];
  return [
    ...quietFfmpegArgs(),
    ...rawInput,
    ...safeFileInputArgs(input.source.path, input.source.container),
    '-map',
    '0:v:0',
    // The picture is the default video. Naming one disposition keeps every copied stream's as the
    // input had it: without any, ffmpeg marks the first track of each type default where none is.
    '-disposition:v:0',
    'default',
    ...streamMapArgs(input.streams, 1, input.coverFiles),
    ...metadataArgs(extras.tags, 1),
    // The picture is output video 0; cover art, copied, is video 1: its options name it.
    '-filter:v:0',
    [...offset, encoderFilters(geometry, extras, colour)].join(','),
    ...pictureOnly(planCodecArgs(input.encoder, colour), container),
    '-pix_fmt:v:0',
    encodePixelFormat(colour, geometry.output),
    ...colourTagArgs(colour),
    // Exactly the frames sent, at their pipe times: ffmpeg's default for MP4 (cfr) would duplicate the
    // first frame to fill the gap before a video that starts after the audio.
    '-fps_mode',
    'passthrough',
    '-r',
    rate,
    ...fineTime,
    ...muxerArgs(container, offset.length > 0 ? timescale : undefined, extras.tags),
    fileInput(input.outputPath),
  ];
}
