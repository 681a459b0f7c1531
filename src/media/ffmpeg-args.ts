/**
 * Pure builders for ffmpeg/ffprobe argument lists. Every input an ffmpeg process opens goes through
 * `safeInputArgs`: only the `file` and `pipe` protocols (nothing reads a URL, an HLS segment over
 * http, or `concat:`/`subfile:` tricks), and only the demuxers this worker accepts, with the demuxer
 * forced to the one the content sniffing chose, so a playlist or concat script dressed up as an
 * `.mp4` can never make ffmpeg open another file. Nested inputs (the HLS and concat demuxers) inherit
 * these whitelists, but both demuxers are refused outright anyway.
 */
import { isAbsolute } from 'node:path';
import { PACKET_ENTRIES } from './stream-measure.js';
import type { ContainerKind } from './types.js';

/** ffmpeg demuxer names (as matched by `-format_whitelist`) for the containers we accept. */
export const MEDIA_DEMUXERS = ['mov', 'matroska', 'gif', 'mp3', 'wav', 'aac', 'ogg', 'flac'] as const;
export type MediaDemuxer = (typeof MEDIA_DEMUXERS)[number];

export const SAFE_PROTOCOLS = ['file', 'pipe'] as const;

const DEMUXER_BY_CONTAINER: Record<ContainerKind, MediaDemuxer> = {
  mp4: 'mov',
  mov: 'mov',
  m4v: 'mov',
  m4a: 'mov',
  mkv: 'matroska',
  webm: 'matroska',
  gif: 'gif',
  mp3: 'mp3',
  wav: 'wav',
  aac: 'aac',
  ogg: 'ogg',
  flac: 'flac',
};

/** The demuxer that reads a container kind. */
export function demuxerFor(container: ContainerKind): MediaDemuxer {
  return DEMUXER_BY_CONTAINER[container];
}

const NAME = /^[a-z0-9_]+$/;

function checkNames(what: string, names: readonly string[]): string {
  if (names.length === 0) throw new Error(`Expected at least one ${what} but received none`);
  for (const name of names) {
    if (!NAME.test(name)) throw new Error(`Expected a plain ${what} name but received "${name}"`);
  }
  return names.join(',');
}

export interface SafeInputOptions {
  /** Demuxers the input may use; defaults to MEDIA_DEMUXERS (use ['rawvideo'] for a frame pipe). */
  demuxers?: readonly string[];
  /** Protocols the input may use; defaults to file and pipe. */
  protocols?: readonly string[];
}

/** The whitelist flags that precede every `-i` (input options, so they apply to the next input only). */
export function safeInputArgs(opts: SafeInputOptions = {}): string[] {
  return [
    '-protocol_whitelist',
    checkNames('protocol', opts.protocols ?? SAFE_PROTOCOLS),
    '-format_whitelist',
    checkNames('demuxer', opts.demuxers ?? MEDIA_DEMUXERS),
  ];
}

/**
 * A local file as an ffmpeg input URL. The explicit `file:` prefix keeps a name containing a colon
 * from being read as a protocol, and a leading dash from being read as an option.
 */
export function fileInput(path: string): string {
  if (!isAbsolute(path)) throw new Error(`Expected an absolute path for the media input but received "${path}"`);
  return `file:${path}`;
}

/**
 * The complete input section for a sniffed local file: whitelists, the demuxer forced to the one the
 * content was sniffed as (no probing of other formats), then `-i file:PATH`.
 */
export function safeFileInputArgs(path: string, container: ContainerKind): string[] {
  const demuxer = demuxerFor(container);
  return [...safeInputArgs({ demuxers: [demuxer] }), '-f', demuxer, '-i', fileInput(path)];
}

/**
 * What every pipeline ffmpeg starts with: no banner, no reading the terminal (a daemon has none), no
 * progress lines; errors only on stderr, whose tail goes on the failure.
 */
export function quietFfmpegArgs(): string[] {
  return ['-hide_banner', '-nostdin', '-nostats', '-v', 'error'];
}

/**
 * Raw RGB frames (rgb24, or 16-bit rgb48le) of `size` at `rate` (ffmpeg's rate text, e.g. "30000/1001") on stdin as an input,
 * whitelisted to the pipe and the rawvideo demuxer. `inputOptions` go just before its `-i`.
 */
export function rgbPipeInputArgs(
  size: { width: number; height: number },
  rate: string,
  inputOptions: readonly string[] = [],
  pixelFormat: 'rgb24' | 'rgb48le' = 'rgb24',
): string[] {
  return [
    ...safeInputArgs({ demuxers: ['rawvideo'], protocols: ['pipe'] }),
    '-f',
    'rawvideo',
    '-pix_fmt',
    pixelFormat,
    '-video_size',
    `${size.width}x${size.height}`,
    '-framerate',
    rate,
    ...inputOptions,
    '-i',
    'pipe:0',
  ];
}

/** The output as raw RGB frames on stdout (what the pipelines' frame readers take): rgb24, or 16-bit rgb48le. */
export function rgbPipeOutputArgs(pixelFormat: 'rgb24' | 'rgb48le' = 'rgb24'): string[] {
  return ['-f', 'rawvideo', '-pix_fmt', pixelFormat, 'pipe:1'];
}

/**
 * ffprobe's arguments for one sniffed file: compact JSON with the format, every stream and, unless
 * `headersOnly` (the benchmark's baseline), every packet's timing (stream-measure.ts).
 */
export function ffprobeArgs(path: string, container: ContainerKind, headersOnly = false): string[] {
  return [
    '-hide_banner',
    '-v',
    'error',
    ...safeFileInputArgs(path, container),
    '-print_format',
    'json=compact=1',
    '-show_format',
    '-show_streams',
    ...(headersOnly ? [] : ['-show_entries', PACKET_ENTRIES]),
  ];
}
