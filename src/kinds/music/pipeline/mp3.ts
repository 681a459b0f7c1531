/**
 * Audio to MP3 with ffmpeg's libmp3lame, then checked: ffprobe must call the result MP3 with an
 * mp3 audio stream, and the duration is counted from the decoded samples (an MP3's header
 * duration is an estimate). Argument builders are pure; the processes run at the edge.
 */
import path from 'node:path';
import { ProcessingError } from '../../../jobs/index.js';
import {
  resolveFfmpeg,
  quietFfmpegArgs,
  safeFileInputArgs,
  safeInputArgs,
  probeMedia,
  runProcess,
  type ContainerKind,
} from '../../../media/index.js';
import type { RawAudio } from './types.js';
import { definedFields } from '../../../defined-fields.js';

/** VBR quality 2 (about 190 kbit/s): transparent for music. */
export const MP3_QUALITY = '2';
/** Rate the duration is counted at (any rate would do; the MP3's own avoids resampling). */
const PROBE_CHANNELS = 1;

export interface Mp3Options {
  ffmpegPath?: string;
  ffprobePath?: string;
  signal?: AbortSignal;
}

export function mp3OutputArgs(outputPath: string): string[] {
  return ['-vn', '-map_metadata', '-1', '-c:a', 'libmp3lame', '-q:a', MP3_QUALITY, '-f', 'mp3', '-y', outputPath];
}

/** float32 interleaved PCM on stdin to MP3. */
export function pcmToMp3Args(sampleRate: number, channels: number, outputPath: string): string[] {
  return [
    ...quietFfmpegArgs(),
    ...safeInputArgs({ demuxers: ['f32le'], protocols: ['pipe'] }),
    '-f',
    'f32le',
    '-ar',
    String(sampleRate),
    '-ac',
    String(channels),
    '-i',
    'pipe:0',
    ...mp3OutputArgs(outputPath),
  ];
}

export function fileToMp3Args(inputPath: string, container: ContainerKind, outputPath: string): string[] {
  return [...quietFfmpegArgs(), ...safeFileInputArgs(inputPath, container), ...mp3OutputArgs(outputPath)];
}

/** Decodes an MP3 to mono s16 PCM on stdout (its samples are counted). */
export function decodeArgs(mp3Path: string): string[] {
  return [
    ...quietFfmpegArgs(),
    ...safeFileInputArgs(mp3Path, 'mp3'),
    '-ac',
    String(PROBE_CHANNELS),
    '-f',
    's16le',
    '-c:a',
    'pcm_s16le',
    'pipe:1',
  ];
}

const AUDIO_CONTAINERS: readonly ContainerKind[] = ['mp3', 'wav', 'ogg', 'm4a', 'aac', 'mp4', 'webm', 'mkv'];

export async function encodeMp3(audio: RawAudio, outputPath: string, opts: Mp3Options): Promise<void> {
  const ffmpeg = resolveFfmpeg(definedFields({ ffmpegPath: opts.ffmpegPath }));
  const signal = definedFields({ signal: opts.signal });
  if (audio.kind === 'pcm') {
    const bytes = Buffer.from(audio.samples.buffer, audio.samples.byteOffset, audio.samples.byteLength);
    await runProcess(ffmpeg, pcmToMp3Args(audio.sampleRate, audio.channels, outputPath), { ...signal, stdin: bytes });
    return;
  }
  const info = await probeMedia(audio.path, {
    accept: AUDIO_CONTAINERS,
    ...definedFields({ ffprobePath: opts.ffprobePath }),
  }).catch((cause: unknown) => {
    throw new ProcessingError(
      `The music backend returned audio that is not a readable audio file (${path.basename(audio.path)}): ${(cause as Error).message}`,
      { cause },
    );
  });
  if (info.audio === undefined) throw new ProcessingError('The music backend returned a file without an audio stream');
  await runProcess(ffmpeg, fileToMp3Args(audio.path, info.container, outputPath), signal);
}

export interface CheckedMp3 {
  /** Seconds of decoded audio. */
  duration: number;
  sampleRate: number;
}

/** ffprobe must see an MP3 with an mp3 audio stream; then the decoded samples give the duration. */
export async function checkMp3(mp3Path: string, opts: Mp3Options): Promise<CheckedMp3> {
  const info = await probeMedia(mp3Path, { accept: ['mp3'], ...definedFields({ ffprobePath: opts.ffprobePath }) });
  if (info.audio === undefined || info.audio.codec !== 'mp3') {
    throw new ProcessingError(
      `Expected an mp3 audio stream in ${path.basename(mp3Path)} but ffprobe found ${info.audio?.codec ?? 'none'}`,
    );
  }
  const ffmpeg = resolveFfmpeg(definedFields({ ffmpegPath: opts.ffmpegPath }));
  const { stdout } = await runProcess(ffmpeg, decodeArgs(mp3Path), {
    ...definedFields({ signal: opts.signal }),
    maxStdoutBytes: 256 * 1024 * 1024,
  });
  const samples = stdout.length / (2 * PROBE_CHANNELS);
  if (samples === 0) throw new ProcessingError(`The song ${path.basename(mp3Path)} decodes to no audio`);
  return { duration: Math.round((samples / info.audio.sampleRate) * 1000) / 1000, sampleRate: info.audio.sampleRate };
}
