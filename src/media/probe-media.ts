/**
 * Video and audio probing with ffprobe. The container is sniffed from the content first; anything
 * that is not one of the accepted containers (a text file, an HLS playlist or ffconcat script named
 * `.mp4`) is refused before ffprobe runs. ffprobe then reads the file with the demuxer forced to the
 * sniffed one and the protocol/format whitelists of ffmpeg-args.ts, and its JSON is validated with
 * zod and reduced to MediaInfo by the pure `parseFfprobeOutput`.
 *
 * The same ffprobe call lists every packet: durations, frame counts and frame rates are measured
 * from them (stream-measure.ts), so what prices and bounds a job is what the decoders will read,
 * not what a header claims. The headers' duration is kept only to say where it disagrees.
 */
import { resolve as resolvePath } from 'node:path';
import { z } from 'zod';
import { JobError } from '../errors.js';
import { resolveFfprobe } from './binaries.js';
import { describeFormat } from './describe.js';
import { dolbyVisionFromSideData } from './dolby-vision.js';
import { ffprobeArgs } from './ffmpeg-args.js';
import { ffmpegReason, isProcessError, runProcess } from './process.js';
import { isImageFormat, sniffFile } from './sniff.js';
import {
  fileSeconds,
  highestFrameRate,
  measureStream,
  packetSchema,
  packetTimes,
  type Packet,
  type StreamMeasurement,
} from './stream-measure.js';
import type { AudioStreamInfo, ContainerKind, MediaInfo, Rational, VideoStreamInfo } from './types.js';
import { definedFields } from '../defined-fields.js';

export const DEFAULT_PROBE_TIMEOUT_MS = 30_000;
/**
 * ffprobe's JSON with every packet listed (about 110 bytes each): room for some 300,000 packets,
 * over an hour of 60 fps video with its audio. More is refused, not read further.
 */
const MAX_PROBE_OUTPUT_BYTES = 32 * 1024 * 1024;

export interface ProbeMediaOptions {
  /** An explicit ffprobe executable; by default resolveFfprobe() decides. */
  ffprobePath?: string;
  signal?: AbortSignal;
  timeoutMs?: number;
  /** When given, other sniffed containers are refused (PROBE_FAILED) before ffprobe runs. */
  accept?: readonly ContainerKind[];
}

// ffprobe prints numbers as strings ("15.040000", "N/A") and omits what it does not know.
const numeric = z.union([z.string(), z.number()]).optional();

const streamSchema = z.object({
  index: z.number().optional(),
  codec_type: z.string().optional(),
  codec_name: z.string().optional(),
  width: z.number().optional(),
  height: z.number().optional(),
  r_frame_rate: z.string().optional(),
  avg_frame_rate: z.string().optional(),
  duration: numeric,
  nb_frames: numeric,
  bit_rate: numeric,
  pix_fmt: z.string().optional(),
  sample_rate: numeric,
  channels: z.number().optional(),
  disposition: z.record(z.string(), z.number()).optional(),
  tags: z.record(z.string(), z.string()).optional(),
  side_data_list: z
    .array(z.object({ side_data_type: z.string().optional(), rotation: z.number().optional() }).loose())
    .optional(),
});

const ffprobeSchema = z.object({
  streams: z.array(streamSchema).default([]),
  packets: z.array(packetSchema).default([]),
  format: z.object({
    format_name: z.string(),
    duration: numeric,
    bit_rate: numeric,
  }),
});

type FfprobeStream = z.infer<typeof streamSchema>;

function positiveNumber(value: string | number | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = typeof value === 'number' ? value : Number.parseFloat(value);
  return Number.isFinite(n) && n > 0 ? n : undefined;
}

function positiveInteger(value: string | number | undefined): number | undefined {
  const n = positiveNumber(value);
  return n !== undefined && Number.isInteger(n) ? n : undefined;
}

/** "30000/1001" as a fraction; undefined for "0/0" and anything malformed. */
export function parseFraction(text: string | undefined): Rational | undefined {
  const match = /^(\d+)\/(\d+)$/.exec(text ?? '');
  if (match === null) return undefined;
  const num = Number(match[1]);
  const den = Number(match[2]);
  return num > 0 && den > 0 ? { num, den } : undefined;
}

/** Any angle as the clockwise display rotation 0, 90, 180 or 270 (rounded to the nearest quarter turn). */
export function normaliseRotation(degrees: number): number {
  if (!Number.isFinite(degrees)) return 0;
  const quarter = Math.round(degrees / 90) * 90;
  return ((quarter % 360) + 360) % 360;
}

/**
 * The clockwise rotation a player applies to show the coded picture upright (the convention of the
 * legacy `rotate` tag). ffprobe reports a display matrix's `rotation` counter-clockwise, hence the sign.
 */
export function streamRotation(stream: FfprobeStream): number {
  const matrix = stream.side_data_list?.find((s) => s.side_data_type === 'Display Matrix' && s.rotation !== undefined);
  if (matrix?.rotation !== undefined) return normaliseRotation(-matrix.rotation);
  const tag = stream.tags?.['rotate'];
  if (tag !== undefined && tag.trim() !== '') return normaliseRotation(Number.parseFloat(tag));
  return 0;
}

/** A chosen stream as MediaInfo shows it, and its measurement (which fileSeconds combines). */
interface Measured<T> {
  info: T;
  measured: StreamMeasurement | undefined;
}

function videoInfo(stream: FfprobeStream, packets: readonly Packet[], index: number): Measured<VideoStreamInfo> {
  const width = positiveInteger(stream.width);
  const height = positiveInteger(stream.height);
  if (width === undefined || height === undefined) {
    throw new JobError('PROBE_FAILED', 'The video stream declares no valid picture size');
  }
  const avg = parseFraction(stream.avg_frame_rate);
  const real = parseFraction(stream.r_frame_rate);
  // ffprobe derives both rates from the packets' timestamps (the sample table, the first frames),
  // not from the duration fields a writer can edit.
  const fps = avg ?? real;
  if (fps === undefined) throw new JobError('PROBE_FAILED', 'The video frame rate could not be read');
  const measured = measureStream(packets, index, fps.den / fps.num);
  if (measured === undefined) throw new JobError('PROBE_FAILED', 'The video stream holds no timed frames');
  const info: VideoStreamInfo = {
    codec: stream.codec_name ?? 'unknown',
    width,
    height,
    rotation: streamRotation(stream),
    fps,
    variableFrameRate: avg !== undefined && real !== undefined && avg.num * real.den !== real.num * avg.den,
    frameCount: measured.packets,
    seconds: measured.seconds,
  };
  if (info.variableFrameRate) {
    // The rate a variable-frame-rate video is processed (and billed) at: its highest (video-geometry.ts).
    const highest = highestFrameRate(packetTimes(packets, index));
    if (highest !== undefined && highest.num * fps.den > fps.num * highest.den) info.cfrRate = highest;
  }
  const bitRate = positiveInteger(stream.bit_rate);
  if (bitRate !== undefined) info.bitRate = bitRate;
  if (stream.pix_fmt !== undefined) info.pixelFormat = stream.pix_fmt;
  const dolbyVision = (stream.side_data_list ?? []).map(dolbyVisionFromSideData).find((dv) => dv !== undefined);
  if (dolbyVision !== undefined) info.dolbyVision = dolbyVision;
  return { info, measured };
}

function audioInfo(stream: FfprobeStream, packets: readonly Packet[], index: number): Measured<AudioStreamInfo> {
  const info: AudioStreamInfo = {
    codec: stream.codec_name ?? 'unknown',
    sampleRate: positiveInteger(stream.sample_rate) ?? 0,
    channels: positiveInteger(stream.channels) ?? 0,
  };
  const measured = measureStream(packets, index);
  if (measured !== undefined) info.seconds = measured.seconds;
  return { info, measured };
}

/** The default stream of a type, else its first, with its index; cover art in audio files is not a video stream. */
function pickStream(
  streams: FfprobeStream[],
  type: 'video' | 'audio',
): { stream: FfprobeStream; index: number } | undefined {
  const candidates = streams
    .map((stream, position) => ({ stream, index: stream.index ?? position }))
    .filter(({ stream }) => stream.codec_type === type && stream.disposition?.['attached_pic'] !== 1);
  return candidates.find(({ stream }) => stream.disposition?.['default'] === 1) ?? candidates[0];
}

/** The headers' duration: the container's, else the longest stream's. */
function declaredDuration(
  streams: FfprobeStream[],
  format: { duration?: string | number | undefined },
): number | undefined {
  const streamDurations = streams.map((s) => positiveNumber(s.duration)).filter((d): d is number => d !== undefined);
  return positiveNumber(format.duration) ?? (streamDurations.length > 0 ? Math.max(...streamDurations) : undefined);
}

/**
 * MediaInfo from ffprobe's JSON for a file sniffed as `container`. An MP4 without a video stream is
 * reported as `m4a`: that is what an M4A file is, whatever brand its writer put in `ftyp`.
 */
export function parseFfprobeOutput(json: unknown, container: ContainerKind): MediaInfo {
  const parsed = ffprobeSchema.safeParse(json);
  if (!parsed.success) throw new JobError('PROBE_FAILED', 'ffprobe returned no usable description of the file');
  const { streams, format, packets } = parsed.data;

  const videoStream = pickStream(streams, 'video');
  const audioStream = pickStream(streams, 'audio');
  if (videoStream === undefined && audioStream === undefined) {
    throw new JobError('PROBE_FAILED', `The ${container.toUpperCase()} file contains no video or audio stream`);
  }
  const video = videoStream === undefined ? undefined : videoInfo(videoStream.stream, packets, videoStream.index);
  const audio = audioStream === undefined ? undefined : audioInfo(audioStream.stream, packets, audioStream.index);

  const durationSeconds = fileSeconds(video?.measured, audio?.measured);
  if (durationSeconds === undefined) {
    throw new JobError(
      'PROBE_FAILED',
      `The duration of the ${container.toUpperCase()} file could not be measured: its streams hold no timed packets`,
    );
  }

  const info: MediaInfo = {
    container: container === 'mp4' && videoStream === undefined ? 'm4a' : container,
    formatName: format.format_name,
    durationSeconds,
  };
  const declared = declaredDuration(streams, format);
  if (declared !== undefined && Math.abs(declared - durationSeconds) > 0.01 * durationSeconds)
    info.declaredDurationSeconds = declared;
  if (video !== undefined) info.video = video.info;
  if (audio !== undefined) info.audio = audio.info;
  const bitRate = positiveInteger(format.bit_rate);
  if (bitRate !== undefined) info.bitRate = bitRate;
  return info;
}

export async function probeMedia(file: string, opts: ProbeMediaOptions = {}): Promise<MediaInfo> {
  const path = resolvePath(file);
  const sniffed = await sniffFile(path);
  if (sniffed === null || isImageFormat(sniffed)) {
    throw new JobError('PROBE_FAILED', `Expected a video or audio file but received ${describeFormat(sniffed)}`);
  }
  if (opts.accept !== undefined && !opts.accept.includes(sniffed)) {
    const names = opts.accept.map((c) => c.toUpperCase()).join(', ');
    throw new JobError('PROBE_FAILED', `Expected one of ${names} but received ${describeFormat(sniffed)}`);
  }

  const ffprobe = resolveFfprobe(definedFields({ ffprobePath: opts.ffprobePath }));
  const timeoutMs = opts.timeoutMs ?? DEFAULT_PROBE_TIMEOUT_MS;
  let stdout: Buffer;
  try {
    ({ stdout } = await runProcess(ffprobe, ffprobeArgs(path, sniffed), {
      timeoutMs,
      maxStdoutBytes: MAX_PROBE_OUTPUT_BYTES,
      ...definedFields({ signal: opts.signal }),
    }));
  } catch (err) {
    // Failing to start ffprobe is the worker's problem; everything else (a non-zero exit, a crash,
    // a hang, absurd output) is caused by the file.
    if (!isProcessError(err) || err.reason === 'spawn') throw err;
    const what = `The ${describeFormat(sniffed).replace(/^an? /, '')}`;
    if (err.reason === 'timeout') {
      throw new JobError('PROBE_FAILED', `${what} could not be read within ${timeoutMs / 1000} s`, { cause: err });
    }
    throw new JobError(
      'PROBE_FAILED',
      `${what} could not be read: ${ffmpegReason(err.stderrTail, [[path, 'input']], 2)}`,
      { cause: err },
    );
  }

  let json: unknown;
  try {
    json = JSON.parse(stdout.toString('utf8'));
  } catch (err) {
    throw new JobError('PROBE_FAILED', 'ffprobe returned no usable description of the file', { cause: err });
  }
  return parseFfprobeOutput(json, sniffed);
}
