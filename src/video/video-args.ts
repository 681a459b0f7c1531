/**
 * Pure builders for the two ffmpeg processes of a video upscale, and the decisions behind them
 * (which audio is copied, which encoder options a codec takes). Every number comes from
 * video-geometry.ts; every input goes through media/'s whitelisting builders.
 *
 * Decoder: the input file (its sniffed demuxer only, file protocol only) -> the first real video
 * stream, deinterlaced when interlaced, rotation applied, scaled to exactly the expected size (a
 * stream that changes resolution midway still yields frames of one size, never a misaligned pipe),
 * converted to RGB with the input's own YUV matrix -> raw rgb24 on stdout. `-xerror`: a damaged input
 * stops the decoder with an error instead of being concealed into glitched frames or silently cut
 * short.
 *
 * Encoder: raw rgb24 on stdin at the network's output size and the input's rate, plus the input file
 * again for its audio -> factor "1" Lanczos downscale, even-size padding, BT.709 YUV 4:2:0 ->
 * H.264 in MP4 with the audio copied or re-encoded to AAC, `+faststart` for progressive playback.
 */
import { type AudioStreamInfo, type ContainerKind, fileInput, quietFfmpegArgs, rgbPipeInputArgs, rgbPipeOutputArgs, safeFileInputArgs } from '../media/index.js';
import type { ColourMatrix, VideoExtras } from './video-probe.js';
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
    throw new RangeError(`Expected the encoder preset to be one of ${X264_PRESETS.join(', ')} but received ${JSON.stringify(preset)}`);
  }
  const threads = settings.threads !== undefined && settings.threads > 0 ? ['-threads', String(settings.threads)] : [];
  switch (codec) {
    case 'libx264':
      return ['-c:v', 'libx264', '-preset', preset, '-crf', String(crf), ...threads];
    case 'h264_nvenc':
      // NVENC's p1 (fastest) .. p7 (best); constant quality through -cq with VBR and no bitrate cap.
      return ['-c:v', 'h264_nvenc', '-preset', NVENC_PRESET[preset], '-rc', 'vbr', '-cq', String(Math.max(1, crf)), '-b:v', '0'];
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
 * Audio codecs copied into the MP4 unchanged. These have registered MP4 sample entries and play in
 * browsers, QuickTime and TVs alike. Left out on purpose: Opus and FLAC (the MP4 mappings exist,
 * but ffmpeg 5 marks FLAC-in-MP4 experimental and Apple's players only recently learned either),
 * Vorbis and PCM (no standard MP4 mapping); those are re-encoded to AAC.
 */
export const MP4_COPY_AUDIO_CODECS: readonly string[] = ['aac', 'mp3', 'ac3', 'eac3', 'alac'];

export type AudioPlan = { mode: 'none' } | { mode: 'copy'; codec: string } | { mode: 'aac'; bitrate: number; from: string };

export function audioPlan(audio: AudioStreamInfo | undefined): AudioPlan {
  if (audio === undefined) return { mode: 'none' };
  if (MP4_COPY_AUDIO_CODECS.includes(audio.codec)) return { mode: 'copy', codec: audio.codec };
  // 96 kb/s per channel up to stereo's 192, then 64 kb/s for each further channel.
  const channels = Math.max(1, audio.channels);
  const bitrate = channels <= 2 ? 96_000 * channels : 192_000 + 64_000 * (channels - 2);
  return { mode: 'aac', bitrate, from: audio.codec };
}

function audioCodecArgs(plan: AudioPlan): string[] {
  switch (plan.mode) {
    case 'none':
      return [];
    case 'copy':
      return ['-c:a', 'copy'];
    case 'aac':
      return ['-c:a', 'aac', '-b:a', String(plan.bitrate)];
  }
}

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
  /** Deinterlace first (one frame out per frame in, so the frame count stays). */
  interlaced?: boolean;
  /** Which real video stream (`0:V:n`); default the first. */
  videoIndex?: number;
  /** The backstop: the decoder stops after this many frames (what the quote allows), whatever the file holds. */
  maxFrames?: number;
}

/** Deinterlacing with one frame out per frame in, so the frame count stays. */
export const DEINTERLACE_FILTER = 'bwdif=mode=send_frame:parity=auto:deint=all';

/** Decoded video to rgb24 of exactly `size`, its YUV read with the input's own matrix. */
export function rgbFilters(size: Size, matrix: ColourMatrix): string[] {
  return [`scale=w=${size.width}:h=${size.height}:flags=bicubic+accurate_rnd+full_chroma_int:in_color_matrix=${matrix}`, 'format=rgb24'];
}

/**
 * rgb24 of `size` to what H.264 takes: an odd side made even by repeating the last column or row
 * (4:2:0 chroma needs even sides; nothing is lost or stretched), then BT.709 YUV 4:2:0, TV range.
 */
export function yuv420Filters(size: Size): string[] {
  const right = size.width % 2;
  const bottom = size.height % 2;
  const filters: string[] = [];
  if (right > 0 || bottom > 0) {
    // fillborders works on planar formats only; smear repeats the last real column/row.
    filters.push('format=gbrp', `pad=w=${size.width + right}:h=${size.height + bottom}:x=0:y=0`, `fillborders=right=${right}:bottom=${bottom}:mode=smear`);
  }
  filters.push('scale=out_color_matrix=bt709:out_range=tv:flags=bicubic+accurate_rnd', 'format=yuv420p');
  return filters;
}

export function decoderArgs(input: DecoderArgsInput): string[] {
  const filters = [...(input.interlaced === true ? [DEINTERLACE_FILTER] : []), ...rgbFilters(input.geometry.decoded, input.matrix)];
  const timing = input.timing.mode === 'cfr' ? ['-fps_mode', 'cfr', '-r', formatRate(input.timing.rate)] : ['-fps_mode', 'passthrough'];
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
    ...timing,
    ...(input.maxFrames === undefined ? [] : ['-frames:v', String(input.maxFrames)]),
    ...rgbPipeOutputArgs(),
  ];
}

export interface EncoderArgsInput {
  geometry: VideoGeometry;
  timing: FrameTiming;
  encoder: EncoderSettings;
  extras: VideoExtras;
  /** The original file, read again for its audio when the plan keeps audio. */
  audioSource: { path: string; container: ContainerKind };
  audio: AudioPlan;
  /** Where ffmpeg writes the MP4 (absolute). */
  outputPath: string;
}

/** The encoder's filter chain, from network-size RGB to output-size YUV 4:2:0. */
export function encoderFilters(geometry: VideoGeometry, extras: Pick<VideoExtras, 'sampleAspect'>): string {
  const filters: string[] = [];
  const { network, target } = geometry;
  if (network.width !== target.width || network.height !== target.height) {
    filters.push(`scale=w=${target.width}:h=${target.height}:flags=lanczos+accurate_rnd`);
  }
  // Padded to geometry.output: the same even sides, by the same rule.
  filters.push(...yuv420Filters(target));
  // The upscale keeps the picture's shape: a non-square pixel stays non-square (a quarter turn swaps it).
  filters.push(`setsar=${extras.sampleAspect.num}/${extras.sampleAspect.den}`);
  return filters.join(',');
}

export function encoderArgs(input: EncoderArgsInput): string[] {
  const { geometry, timing, extras, audio } = input;
  const rate = formatRate(timing.rate);
  const rawInput = rgbPipeInputArgs(
    geometry.network,
    rate,
    // The pipe carries no timestamps: put the first frame where the input's video started.
    extras.videoStartOffset > 0 ? ['-itsoffset', String(extras.videoStartOffset)] : [],
  );
  const audioInput = audio.mode === 'none' ? [] : safeFileInputArgs(input.audioSource.path, input.audioSource.container);
  const colourTags = ['-colorspace', 'bt709', '-color_range', 'tv'];
  if (extras.primaries !== undefined) colourTags.push('-color_primaries', extras.primaries);
  if (extras.transfer !== undefined) colourTags.push('-color_trc', extras.transfer);
  return [
    ...quietFfmpegArgs(),
    ...rawInput,
    ...audioInput,
    '-map',
    '0:v:0',
    ...(audio.mode === 'none' ? [] : ['-map', `1:a:${extras.audioIndex ?? 0}`, '-map_metadata:s:a:0', `1:s:a:${extras.audioIndex ?? 0}`]),
    // No global metadata or chapters: phone clips carry GPS positions and device names in them.
    '-map_metadata',
    '-1',
    '-map_chapters',
    '-1',
    '-vf',
    encoderFilters(geometry, extras),
    ...videoCodecArgs(input.encoder),
    '-pix_fmt',
    'yuv420p',
    ...colourTags,
    // Exactly the frames sent, at their pipe times: ffmpeg's default for MP4 (cfr) would duplicate the
    // first frame to fill the gap before a video that starts after the audio.
    '-fps_mode',
    'passthrough',
    '-r',
    rate,
    ...audioCodecArgs(audio),
    '-movflags',
    '+faststart',
    '-f',
    'mp4',
    fileInput(input.outputPath),
  ];
}
