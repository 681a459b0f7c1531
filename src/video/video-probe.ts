/**
 * The few facts about the video stream that the upscale needs and MediaInfo does not carry: pixel
 * aspect ratio, where the video starts relative to the file (so the audio stays in sync when the
 * frames cross a pipe without timestamps), the colour description (so YUV -> RGB -> YUV keeps the
 * colours) and whether the picture is interlaced. One short ffprobe call, with the same whitelists
 * and forced demuxer as every other read of the input; the JSON is validated with zod and reduced by
 * the pure `parseVideoExtras`.
 */
import { z } from 'zod';
import { JobError } from '../errors.js';
import {
  dolbyVisionFromSideData,
  isProcessError,
  resolveFfprobe,
  runProcess,
  safeFileInputArgs,
  type ContainerKind,
  ffmpegReason,
  type Rational,
} from '../media/index.js';
import { definedFields } from '../defined-fields.js';
import {
  type ColourMatrix,
  type ColourSource,
  type DolbyVision,
  contentLightFromSideData,
  isHdrTransfer,
  masteringFromSideData,
  pixelFormatBits,
} from './colour.js';
import { type SourceStream, sourceStream } from './stream-map.js';

export interface VideoExtras {
  /** Sample (pixel) aspect ratio of the coded picture; 1:1 when unknown. */
  sampleAspect: Rational;
  /** Seconds between the file's start and the first video frame (0 when the video starts first). */
  videoStartOffset: number;
  /** The input's YUV matrix when it says so. */
  matrix?: ColourMatrix;
  /** Primaries and transfer as ffmpeg names them, when known; they describe RGB, which the upscale keeps. */
  primaries?: string;
  transfer?: string;
  /** Interlaced (field-coded) picture: deinterlaced before the network, which expects whole frames. */
  interlaced?: boolean;
  /**
   * Which stream to read, as ffmpeg's relative indexes: the video among the real video streams
   * (`0:V:n`, cover art skipped) and the audio among the audio streams (`1:a:n`), chosen by the rule
   * probeMedia describes them with (the default stream, else the first), so the stream upscaled and
   * the audio copied are the ones MediaInfo was about.
   */
  videoIndex: number;
  audioIndex?: number;
  /** Bits per sample of the video's pixel format (8 when unknown). */
  bitDepth: number;
  /** HDR10 metadata, from the stream's side data or its first frame's (colour.ts). */
  mastering?: ColourSource['mastering'];
  contentLight?: ColourSource['contentLight'];
  dolbyVision?: DolbyVision;
  /** Every stream of the file, in order, for what the result keeps (stream-map.ts). */
  streams: SourceStream[];
  /** The file's global tags (title, creation time, ...). */
  tags: Record<string, string>;
}

/** The colour facts colourPlan takes. */
export function colourSource(extras: VideoExtras): ColourSource {
  return {
    bitDepth: extras.bitDepth,
    ...definedFields({
      matrix: extras.matrix,
      primaries: extras.primaries,
      transfer: extras.transfer,
      mastering: extras.mastering,
      contentLight: extras.contentLight,
      dolbyVision: extras.dolbyVision,
    }),
  };
}

const numeric = z.union([z.string(), z.number()]).optional();

const extrasSchema = z.object({
  streams: z
    .array(
      z.object({
        codec_type: z.string().optional(),
        disposition: z.record(z.string(), z.number()).optional(),
        sample_aspect_ratio: z.string().optional(),
        start_time: numeric,
        color_space: z.string().optional(),
        color_primaries: z.string().optional(),
        color_transfer: z.string().optional(),
        field_order: z.string().optional(),
        index: z.number().int().nonnegative().optional(),
        codec_name: z.string().optional(),
        pix_fmt: z.string().optional(),
        channels: z.number().optional(),
        tags: z.record(z.string(), z.string()).optional(),
        side_data_list: z.array(z.record(z.string(), z.unknown())).optional(),
      }),
    )
    .default([]),
  format: z.object({ start_time: numeric, tags: z.record(z.string(), z.string()).optional() }).optional(),
});

const framesSchema = z.object({
  frames: z.array(z.object({ side_data_list: z.array(z.record(z.string(), z.unknown())).optional() })).default([]),
});

const MATRIX_BY_COLOUR_SPACE: Readonly<Record<string, ColourMatrix>> = {
  bt709: 'bt709',
  smpte170m: 'smpte170m',
  bt470bg: 'bt470',
  fcc: 'fcc',
  smpte240m: 'smpte240m',
  bt2020nc: 'bt2020',
  bt2020c: 'bt2020',
};

const UNKNOWN = new Set(['unknown', 'unspecified', 'reserved', '']);

/** ffprobe's field orders of interlaced video (top or bottom field first, coded and displayed). */
const INTERLACED = new Set(['tt', 'bb', 'tb', 'bt']);

function seconds(value: string | number | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = typeof value === 'number' ? value : Number.parseFloat(value);
  return Number.isFinite(n) ? n : undefined;
}

/** "4:3" as a fraction; 1:1 for "0:1", "N/A" and anything malformed. */
export function parseAspect(text: string | undefined): Rational {
  const match = /^(\d+):(\d+)$/.exec(text ?? '');
  const num = Number(match?.[1]);
  const den = Number(match?.[2]);
  return num > 0 && den > 0 ? reduce({ num, den }) : { num: 1, den: 1 };
}

function reduce({ num, den }: Rational): Rational {
  let a = num;
  let b = den;
  while (b !== 0) [a, b] = [b, a % b];
  return { num: num / a, den: den / a };
}

type ProbedStream = z.infer<typeof extrasSchema>['streams'][number];

/** The default stream among `candidates`, else the first, as an index into `candidates`. */
function pick(candidates: ProbedStream[]): number | undefined {
  if (candidates.length === 0) return undefined;
  const preferred = candidates.findIndex((s) => s.disposition?.['default'] === 1);
  return preferred === -1 ? 0 : preferred;
}

export function parseVideoExtras(json: unknown): VideoExtras {
  const parsed = extrasSchema.safeParse(json);
  const streams = parsed.success ? parsed.data.streams : [];
  const videos = streams.filter((s) => s.codec_type === 'video' && s.disposition?.['attached_pic'] !== 1);
  const videoIndex = pick(videos);
  const stream = videoIndex === undefined ? undefined : videos[videoIndex];
  if (videoIndex === undefined || stream === undefined)
    throw new JobError('PROBE_FAILED', 'The file contains no video stream that can be upscaled');
  const fileStart = seconds(parsed.data?.format?.start_time) ?? 0;
  const videoStart = seconds(stream.start_time) ?? fileStart;
  const extras: VideoExtras = {
    sampleAspect: parseAspect(stream.sample_aspect_ratio),
    videoStartOffset: Math.max(0, Math.round((videoStart - fileStart) * 1e6) / 1e6),
    videoIndex,
    bitDepth: pixelFormatBits(stream.pix_fmt),
    streams: streams.map((s, i) => sourceStream(s, i)),
    tags: parsed.data?.format?.tags ?? {},
  };
  addSideData(extras, stream.side_data_list ?? []);
  const audioIndex = pick(streams.filter((s) => s.codec_type === 'audio'));
  if (audioIndex !== undefined) extras.audioIndex = audioIndex;
  const matrix = MATRIX_BY_COLOUR_SPACE[stream.color_space ?? ''];
  if (matrix !== undefined) extras.matrix = matrix;
  if (stream.color_primaries !== undefined && !UNKNOWN.has(stream.color_primaries))
    extras.primaries = stream.color_primaries;
  if (stream.color_transfer !== undefined && !UNKNOWN.has(stream.color_transfer))
    extras.transfer = stream.color_transfer;
  if (INTERLACED.has(stream.field_order ?? '')) extras.interlaced = true;
  return extras;
}

/** HDR10 and Dolby Vision facts from side data (the stream's, or its first frame's), where not already known. */
export function addSideData(extras: VideoExtras, sideData: readonly Record<string, unknown>[]): void {
  for (const side of sideData) {
    const type = side['side_data_type'];
    if (type === 'Mastering display metadata' && extras.mastering === undefined) {
      const mastering = masteringFromSideData(side);
      if (mastering !== undefined) extras.mastering = mastering;
    } else if (type === 'Content light level metadata' && extras.contentLight === undefined) {
      const light = contentLightFromSideData(side);
      if (light !== undefined) extras.contentLight = light;
    } else if (extras.dolbyVision === undefined) {
      const dolbyVision = dolbyVisionFromSideData(side);
      if (dolbyVision !== undefined) extras.dolbyVision = dolbyVision;
    }
  }
}

/** ffprobe's arguments for the side data of the chosen video stream's first frame (HDR10 SEI in HEVC and AV1). */
export function firstFrameArgs(path: string, container: ContainerKind, videoIndex: number): string[] {
  return [
    '-hide_banner',
    '-v',
    'error',
    ...safeFileInputArgs(path, container),
    '-select_streams',
    `V:${videoIndex}`,
    '-read_intervals',
    '%+#1',
    '-show_entries',
    'frame_side_data_list',
    '-print_format',
    'json',
  ];
}

export function parseFirstFrame(json: unknown): Record<string, unknown>[] {
  const parsed = framesSchema.safeParse(json);
  return parsed.success ? (parsed.data.frames[0]?.side_data_list ?? []) : [];
}

/** ffprobe's arguments: every stream's type and disposition, the video's details and the file's start. */
export function videoExtrasArgs(path: string, container: ContainerKind): string[] {
  return [
    '-hide_banner',
    '-v',
    'error',
    ...safeFileInputArgs(path, container),
    '-show_entries',
    [
      'stream=index,codec_type,codec_name,pix_fmt,channels,sample_aspect_ratio,start_time,color_space,color_primaries,color_transfer,field_order',
      'stream_disposition',
      'stream_tags',
      'stream_side_data_list',
      'format=start_time',
      'format_tags',
    ].join(':'),
    '-print_format',
    'json',
  ];
}

export interface ProbeVideoExtrasOptions {
  ffprobePath?: string;
  signal?: AbortSignal;
  timeoutMs?: number;
}

export async function probeVideoExtras(
  path: string,
  container: ContainerKind,
  opts: ProbeVideoExtrasOptions = {},
): Promise<VideoExtras> {
  const ffprobe = resolveFfprobe(definedFields({ ffprobePath: opts.ffprobePath }));
  let stdout: Buffer;
  try {
    ({ stdout } = await runProcess(ffprobe, videoExtrasArgs(path, container), {
      timeoutMs: opts.timeoutMs ?? 30_000,
      maxStdoutBytes: 1024 * 1024,
      ...definedFields({ signal: opts.signal }),
    }));
  } catch (err) {
    if (!isProcessError(err) || err.reason === 'spawn') throw err;
    throw new JobError(
      'PROBE_FAILED',
      `The video could not be read: ${ffmpegReason(err.stderrTail, [[path, 'input']])}`,
      { cause: err },
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(stdout.toString('utf8'));
  } catch (err) {
    throw new JobError('PROBE_FAILED', 'ffprobe returned no usable description of the video stream', { cause: err });
  }
  const extras = parseVideoExtras(json);
  // HEVC and AV1 carry HDR10's metadata in the first frame (SEI / OBU), not the container: one frame more, HDR only.
  if (isHdrTransfer(extras.transfer) && (extras.mastering === undefined || extras.contentLight === undefined)) {
    try {
      const first = await runProcess(ffprobe, firstFrameArgs(path, container, extras.videoIndex), {
        timeoutMs: opts.timeoutMs ?? 30_000,
        maxStdoutBytes: 1024 * 1024,
        ...definedFields({ signal: opts.signal }),
      });
      addSideData(extras, parseFirstFrame(JSON.parse(first.stdout.toString('utf8'))));
    } catch (err) {
      if (isProcessError(err) && err.reason === 'spawn') throw err;
      // Without its metadata the stream is still HDR: it is kept as HDR, without the SEI.
    }
  }
  return extras;
}
