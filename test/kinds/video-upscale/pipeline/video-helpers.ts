/** Measuring videos in the video pipeline's tests: stream facts from ffprobe, raw frames from ffmpeg. */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { resolveFfmpeg, resolveFfprobe } from '../../../../src/media/index.js';

const run = promisify(execFile);

export interface StreamFacts {
  type: 'video' | 'audio';
  codec: string;
  width?: number;
  height?: number;
  frames?: number;
  duration: number;
  /** Seconds from the file's start. */
  start: number;
  rate?: string;
  rotation?: number;
  sampleAspect?: string;
  colourSpace?: string;
}

interface RawStream {
  codec_type?: string;
  codec_name?: string;
  width?: number;
  height?: number;
  nb_frames?: string;
  nb_read_frames?: string;
  duration?: string;
  start_time?: string;
  r_frame_rate?: string;
  sample_aspect_ratio?: string;
  color_space?: string;
  side_data_list?: { rotation?: number }[];
  tags?: Record<string, string>;
}

/**
 * Seconds: the stream's duration, or from Matroska's DURATION tag ("00:00:00.501000000"), which
 * holds the stream's end time rather than its length.
 */
function streamDuration(s: RawStream): number {
  if (s.duration !== undefined && s.duration !== 'N/A') return Number(s.duration);
  const match = /^(\d+):(\d+):([\d.]+)$/.exec(s.tags?.['DURATION'] ?? '');
  if (match === null) return Number.NaN;
  return Number(match[1]) * 3600 + Number(match[2]) * 60 + Number(match[3]) - Number(s.start_time ?? 0);
}

/** Every audio and video stream with its duration and (decoded, counted) frame count. */
export async function streamFacts(path: string): Promise<StreamFacts[]> {
  const { stdout } = await run(resolveFfprobe(), [
    '-v',
    'error',
    '-count_frames',
    '-show_entries',
    'stream=codec_type,codec_name,width,height,nb_frames,nb_read_frames,duration,start_time,r_frame_rate,sample_aspect_ratio,color_space:stream_side_data:stream_tags',
    '-of',
    'json',
    path,
  ]);
  const streams = (JSON.parse(stdout) as { streams: RawStream[] }).streams;
  return streams
    .filter((s) => s.codec_type === 'video' || s.codec_type === 'audio')
    .map((s) => {
      const facts: StreamFacts = {
        type: s.codec_type as 'video' | 'audio',
        codec: s.codec_name ?? '',
        duration: streamDuration(s),
        start: Number(s.start_time ?? 0),
      };
      if (s.width !== undefined) facts.width = s.width;
      if (s.height !== undefined) facts.height = s.height;
      const frames = s.nb_read_frames ?? s.nb_frames;
      if (s.codec_type === 'video' && frames !== undefined) facts.frames = Number(frames);
      if (s.r_frame_rate !== undefined) facts.rate = s.r_frame_rate;
      const rotation = s.side_data_list?.find((d) => d.rotation !== undefined)?.rotation ?? s.tags?.['rotate'];
      if (rotation !== undefined) facts.rotation = Number(rotation);
      if (s.sample_aspect_ratio !== undefined) facts.sampleAspect = s.sample_aspect_ratio;
      if (s.color_space !== undefined) facts.colourSpace = s.color_space;
      return facts;
    });
}

export function videoOf(facts: StreamFacts[]): StreamFacts {
  const video = facts.find((s) => s.type === 'video');
  if (video === undefined) throw new Error('Expected a video stream but found none');
  return video;
}

export function audioOf(facts: StreamFacts[]): StreamFacts | undefined {
  return facts.find((s) => s.type === 'audio');
}

/**
 * Frames of a video as interleaved RGB, decoded with `vf` (default: rotation applied, the file's
 * own YUV matrix as tagged, BT.601 when untagged).
 */
export async function decodeRgb(path: string, width: number, height: number, vf?: string): Promise<Buffer[]> {
  const filter =
    vf ?? `scale=w=${width}:h=${height}:flags=bicubic+accurate_rnd+full_chroma_int:in_color_matrix=auto,format=rgb24`;
  const { stdout } = await run(
    resolveFfmpeg(),
    [
      '-hide_banner',
      '-v',
      'error',
      '-nostdin',
      '-i',
      path,
      '-map',
      '0:V:0',
      '-vf',
      filter,
      '-fps_mode',
      'passthrough',
      '-f',
      'rawvideo',
      '-pix_fmt',
      'rgb24',
      'pipe:1',
    ],
    { encoding: 'buffer', maxBuffer: 256 * 1024 * 1024 },
  );
  const size = width * height * 3;
  if (stdout.length % size !== 0)
    throw new Error(`Expected whole ${width}x${height} frames but received ${stdout.length} bytes`);
  const frames: Buffer[] = [];
  for (let at = 0; at < stdout.length; at += size) frames.push(stdout.subarray(at, at + size));
  return frames;
}

/** PSNR in dB between two same-sized 8-bit buffers. */
export function psnr(a: Uint8Array, b: Uint8Array): number {
  if (a.length !== b.length) throw new Error(`Expected equal sizes but received ${a.length} and ${b.length}`);
  let se = 0;
  for (let i = 0; i < a.length; i += 1) se += (a[i]! - b[i]!) ** 2;
  return se === 0 ? Number.POSITIVE_INFINITY : 10 * Math.log10((255 * 255) / (se / a.length));
}

/** Pids of live processes whose command line contains `marker` (a unique temp directory). */
export async function processesMatching(marker: string): Promise<number[]> {
  try {
    const { stdout } = await run('pgrep', ['-f', marker]);
    return stdout
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map(Number)
      .filter((pid) => pid !== process.pid);
  } catch (error) {
    // pgrep exits 1 when nothing matched.
    if ((error as { code?: unknown }).code === 1) return [];
    throw error;
  }
}
