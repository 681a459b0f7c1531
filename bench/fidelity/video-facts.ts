/**
 * What a video file holds, as ffprobe reports it: streams with codec, bit depth, colour tags,
 * language, title and dispositions; chapters; global tags; the first frame's HDR side data; frame
 * times. Shared by the fidelity test and bench/fidelity/fidelity-video.ts, which check and print the same facts.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { z } from 'zod';
import { resolveFfprobe } from '../../src/media/index.js';
import { pixelFormatBits } from '../../src/video/index.js';

const run = promisify(execFile);

const streamSchema = z.object({
  index: z.number(),
  codec_type: z.string(),
  codec_name: z.string().optional(),
  codec_tag_string: z.string().optional(),
  profile: z.string().optional(),
  width: z.number().optional(),
  height: z.number().optional(),
  pix_fmt: z.string().optional(),
  color_space: z.string().optional(),
  color_primaries: z.string().optional(),
  color_transfer: z.string().optional(),
  color_range: z.string().optional(),
  r_frame_rate: z.string().optional(),
  channels: z.number().optional(),
  start_time: z.string().optional(),
  disposition: z.record(z.string(), z.number()).default({}),
  tags: z.record(z.string(), z.string()).default({}),
  side_data_list: z.array(z.record(z.string(), z.unknown())).optional(),
});

const probeSchema = z.object({
  streams: z.array(streamSchema).default([]),
  chapters: z
    .array(
      z.object({ start_time: z.string(), end_time: z.string(), tags: z.record(z.string(), z.string()).default({}) }),
    )
    .default([]),
  format: z.object({ tags: z.record(z.string(), z.string()).default({}) }),
});

export type StreamFacts = z.infer<typeof streamSchema> & { bits?: number };
export interface FileFacts {
  streams: StreamFacts[];
  chapters: { start: number; end: number; title?: string }[];
  tags: Record<string, string>;
}

export async function fileFacts(path: string): Promise<FileFacts> {
  const { stdout } = await run(resolveFfprobe(), [
    '-v',
    'error',
    '-show_streams',
    '-show_chapters',
    '-show_format',
    '-of',
    'json',
    path,
  ]);
  const parsed = probeSchema.parse(JSON.parse(stdout));
  return {
    streams: parsed.streams.map((s) =>
      s.codec_type === 'video' && s.pix_fmt !== undefined ? { ...s, bits: pixelFormatBits(s.pix_fmt) } : s,
    ),
    chapters: parsed.chapters.map((c) => ({
      start: Number(c.start_time),
      end: Number(c.end_time),
      ...(c.tags['title'] === undefined ? {} : { title: c.tags['title'] }),
    })),
    tags: parsed.format.tags,
  };
}

/** The picture (the first video stream that is not cover art). */
export function pictureOf(facts: FileFacts): StreamFacts {
  const video = facts.streams.find((s) => s.codec_type === 'video' && s.disposition['attached_pic'] !== 1);
  if (video === undefined) throw new Error('Expected a video stream');
  return video;
}

/** ffmpeg's stream specifier letters. */
const TYPE_LETTERS: Readonly<Record<string, string>> = { audio: 'a', subtitle: 's', data: 'd', attachment: 't' };

/** Streams as short labels: `v:hevc(10)`, `a:aac(eng)`, `s:mov_text(eng)`, `t:ttf` (an attachment), `cover:mjpeg`. */
export function streamLabels(facts: FileFacts): string[] {
  return facts.streams.map((s) => {
    const language = s.tags['language'] !== undefined && s.tags['language'] !== 'und' ? `(${s.tags['language']})` : '';
    if (s.codec_type === 'video')
      return s.disposition['attached_pic'] === 1 ? `cover:${s.codec_name}` : `v:${s.codec_name}(${s.bits ?? 8})`;
    return `${TYPE_LETTERS[s.codec_type] ?? s.codec_type}:${s.codec_name ?? s.codec_tag_string}${language}`;
  });
}

/** The first frame's side data of the picture (HDR10's mastering display and content light). */
export async function firstFrameSideData(path: string): Promise<Record<string, unknown>[]> {
  const { stdout } = await run(resolveFfprobe(), [
    '-v',
    'error',
    '-select_streams',
    'V:0',
    '-read_intervals',
    '%+#1',
    '-show_entries',
    'frame_side_data_list',
    '-of',
    'json',
    path,
  ]);
  const frames = (JSON.parse(stdout) as { frames?: { side_data_list?: Record<string, unknown>[] }[] }).frames ?? [];
  return frames[0]?.side_data_list ?? [];
}

/** Presentation times (seconds) of every packet of a stream (`v:0`, `a:0`), sorted. */
export async function packetTimes(path: string, stream: string): Promise<number[]> {
  const { stdout } = await run(resolveFfprobe(), [
    '-v',
    'error',
    '-select_streams',
    stream,
    '-show_entries',
    'packet=pts_time',
    '-of',
    'csv=p=0',
    path,
  ]);
  return stdout
    .split('\n')
    .map((line) => Number.parseFloat(line))
    .filter((t) => Number.isFinite(t))
    .sort((a, b) => a - b);
}
