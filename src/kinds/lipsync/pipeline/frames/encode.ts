/**
 * The lip-sync result's encoder: raw rgb24 frames (rgb48le for a 16-bit colour plan) on stdin at
 * the source's size and rate, plus the job's audio file -> MP4 (H.264 8-bit or HEVC Main10, + AAC).
 * Pure argument builders here, and the two pipe helpers (write with backpressure, from media/, and
 * end) the pipeline drives the encoder with.
 *
 * Video: YUV with the colour plan's matrix, codec and tags (video/colour.ts, the upscale's rule: HDR
 * and deeper SDR kept as 10-bit HEVC with the HDR10 metadata, or tone-mapped to 8-bit BT.709),
 * 4:2:0, or 4:4:4 where a side is odd so the result keeps the source's exact size (the same rule as
 * the upscale pipeline), with the source's pixel aspect. Quality: constant quality (CRF, the
 * config's encoder settings) by default; `bitrate` (vendor-lipsync-2-pro: "preserves source
 * bitrate") encodes at constant bitrate, the source's, instead (x264's CBR, or x265's VBV capped at
 * it for HEVC). `lossless` (libx264rgb, -qp 0, 8-bit RGB kept) exists so that tests can compare
 * pixels exactly; the result is valid MP4 but few players show it.
 *
 * Audio: the job's audio file, padded with silence or cut to exactly the timeline's duration
 * (audio.ts audioFitFilter), AAC. The video has exactly the timeline's frame count, so both streams
 * end within one AAC frame (21 ms at 48 kHz) of the planned duration.
 */
import {
  fileInput,
  quietFfmpegArgs,
  rgbPipeInputArgs,
  safeFileInputArgs,
  type ContainerKind,
  type Rational,
} from '../../../../media/index.js';
import {
  type ColourPlan,
  type EncoderSettings,
  colourTagArgs,
  encodePixelFormat,
  globalTagArgs,
  mp4Movflags,
  pipePixelFormat,
  planCodecArgs,
  videoCodecArgs,
  x265ColourParams,
  yuvFilters,
  type Size,
  formatRate,
} from '../../../../video/index.js';
import { audioFitFilter } from '../audio/index.js';

export const AAC_BITRATE = 128_000;

const BT709: Pick<ColourPlan, 'output' | 'depth'> = {
  depth: 8,
  output: { codec: 'h264', bits: 8, matrix: 'bt709', matrixTag: 'bt709' },
};

/** How the video stream is compressed. */
export type VideoQuality =
  | { mode: 'crf'; encoder: EncoderSettings }
  | { mode: 'bitrate'; encoder: EncoderSettings; bitsPerSecond: number }
  | { mode: 'lossless' };

export interface LipsyncEncoderInput {
  size: Size;
  rate: Rational;
  /** Pixel aspect of the source (1:1 when unknown). */
  sampleAspect?: Rational;
  quality: VideoQuality;
  /** The source's colour plan (video/colour.ts colourPlan): the frames' depth, the codec and tags; default 8-bit BT.709. */
  colour?: Pick<ColourPlan, 'output' | 'depth'>;
  audio: { path: string; container: ContainerKind };
  /** The source video and its global tags: its title, creation time and other tags are kept, location removed. */
  metadataSource?: { path: string; container: ContainerKind; tags: Readonly<Record<string, string>> };
  /** The timeline's duration: the audio is fitted to it. */
  durationSeconds: number;
  /** Where ffmpeg writes the MP4 (absolute). */
  outputPath: string;
}

/** The video codec options for a quality choice and the plan's codec (H.264 8-bit, or HEVC Main10 with its colour and HDR10 parameters). */
export function qualityArgs(quality: VideoQuality, colour: Pick<ColourPlan, 'output'> = BT709): string[] {
  switch (quality.mode) {
    case 'lossless':
      if (colour.output.codec !== 'h264')
        throw new RangeError('Expected an 8-bit colour plan for a lossless result (libx264rgb)');
      return ['-c:v', 'libx264rgb', '-preset', 'ultrafast', '-qp', '0'];
    case 'crf':
      return colour.output.codec === 'h264' ? videoCodecArgs(quality.encoder) : planCodecArgs(quality.encoder, colour);
    case 'bitrate': {
      const rate = quality.bitsPerSecond;
      if (!(Number.isInteger(rate) && rate > 0))
        throw new RangeError(`Expected the video bitrate to be a positive integer but received ${String(rate)}`);
      if (colour.output.codec === 'hevc') {
        // x265 has no strict CBR mode: its VBV capped at the source's bitrate with a one-second buffer (kb/s).
        const kbps = String(Math.max(1, Math.round(rate / 1000)));
        const params = ['log-level=error', `vbv-maxrate=${kbps}`, `vbv-bufsize=${kbps}`, ...x265ColourParams(colour)];
        return [
          '-c:v',
          'libx265',
          '-preset',
          quality.encoder.preset,
          '-b:v',
          String(rate),
          '-x265-params',
          params.join(':'),
          '-tag:v',
          'hvc1',
        ];
      }
      // Constant bitrate, not an average target: on easy content x264's ABR mode lands 15-40 % under
      // its target on short clips, and the promise is the source's bitrate. A one-second buffer.
      const b = String(rate);
      const { codec, preset } = quality.encoder;
      switch (codec) {
        case 'libx264':
          return [
            '-c:v',
            'libx264',
            '-preset',
            preset,
            '-b:v',
            b,
            '-minrate',
            b,
            '-maxrate',
            b,
            '-bufsize',
            b,
            '-x264-params',
            'nal-hrd=cbr',
          ];
        case 'h264_nvenc':
          return ['-c:v', 'h264_nvenc', '-rc', 'cbr', '-b:v', b, '-maxrate', b, '-bufsize', b];
        case 'h264_qsv':
          return ['-c:v', 'h264_qsv', '-b:v', b, '-maxrate', b, '-bufsize', b];
      }
    }
  }
}

/** The filter chain from the pipe's RGB to what the encoder takes. */
export function lipsyncVideoFilters(
  size: Size,
  quality: VideoQuality,
  sampleAspect: Rational = { num: 1, den: 1 },
  colour: Pick<ColourPlan, 'output'> = BT709,
): string {
  const filters = quality.mode === 'lossless' ? [] : yuvFilters(size, colour);
  filters.push(`setsar=${sampleAspect.num}/${sampleAspect.den}`);
  return filters.join(',');
}

/** Metadata from input 2 (the source video) without its location tags, or none at all. */
function metadataInput(source: LipsyncEncoderInput['metadataSource']): string[] {
  if (source === undefined) return ['-map_metadata', '-1'];
  return globalTagArgs(source.tags, 2);
}

export function lipsyncEncoderArgs(input: LipsyncEncoderInput): string[] {
  const { size, quality } = input;
  const rate = formatRate(input.rate);
  const plan = input.colour ?? BT709;
  const colour =
    quality.mode === 'lossless'
      ? ['-pix_fmt', 'rgb24']
      : ['-pix_fmt', encodePixelFormat(plan, size), ...colourTagArgs(plan)];
  return [
    ...quietFfmpegArgs(),
    ...rgbPipeInputArgs(size, rate, [], pipePixelFormat(plan.depth)),
    ...safeFileInputArgs(input.audio.path, input.audio.container),
    ...(input.metadataSource === undefined
      ? []
      : safeFileInputArgs(input.metadataSource.path, input.metadataSource.container)),
    '-map',
    '0:v:0',
    '-map',
    '1:a:0',
    // The source video's global tags (title, creation time), location removed (video/stream-map.ts);
    // never the audio file's. No chapters: the timeline moves the source's frames.
    ...metadataInput(input.metadataSource),
    '-map_chapters',
    '-1',
    '-vf',
    lipsyncVideoFilters(size, quality, input.sampleAspect, plan),
    ...qualityArgs(quality, plan),
    ...colour,
    // Exactly the frames sent, at their pipe times.
    '-fps_mode',
    'passthrough',
    '-r',
    rate,
    '-af',
    audioFitFilter(input.durationSeconds),
    '-c:a',
    'aac',
    '-b:a',
    String(AAC_BITRATE),
    '-movflags',
    mp4Movflags(input.metadataSource?.tags ?? {}),
    '-f',
    'mp4',
    fileInput(input.outputPath),
  ];
}
