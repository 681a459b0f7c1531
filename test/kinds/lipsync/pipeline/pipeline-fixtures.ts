/**
 * Media for the lip-sync pipeline tests: small face clips rendered from a real photo with sharp and
 * encoded by ffmpeg, real speech, and readers for what the pipeline wrote.
 */
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import type { SyncMode } from '../../../../src/jobs/index.js';
import path from 'node:path';
import sharp from 'sharp';
import { probeMedia, resolveFfmpeg, resolveFfprobe, runProcess, type MediaInfo } from '../../../../src/media/index.js';
import { type LipsyncRequest, sourceDecoderArgs, type RgbFrame } from '../../../../src/kinds/lipsync/pipeline/index.js';
import { inputMatrix, displayedSize, frameTiming, probeVideoExtras } from '../../../../src/video/index.js';
import { ASTRONAUT } from './faces-helpers.js';
import { random } from '../../../helpers/seeded-random.js';

export const SPEECH = new URL('./fixtures/speech-16k.wav', import.meta.url).pathname;
export const SIDE = 160;
export const FPS = 25;

/** Where the astronaut's face sits in the photo (512 x 512): a square around it, and her mouth. */
const FACE_WINDOW = { left: 120, top: 30, size: 240 };
const PHOTO_MOUTH = { x: 224, y: 151 };

/** The window's offset at frame f: a slow drift of a few pixels, so consecutive frames differ everywhere. */
function drift(f: number): { dx: number; dy: number } {
  return { dx: Math.round(6 * Math.sin((2 * Math.PI * f) / 25)), dy: Math.round(4 * Math.cos((2 * Math.PI * f) / 30)) };
}

/**
 * The sync modes as the spec and sync.so define them: the source frame that output frame i of
 * `out` shows, for a video of n frames. The tests' own oracle, written apart from timeline.ts.
 */
export function shownFrame(mode: SyncMode, i: number, n: number, out: number): number {
  switch (mode) {
    case 'cut_off':
      return i;
    case 'loop':
      return i % n;
    case 'bounce': {
      const k = i % (2 * (n - 1));
      return k < n ? k : 2 * (n - 1) - k;
    }
    case 'silence':
      return Math.min(i, n - 1);
    case 'remap':
      return Math.floor((i * n) / out);
  }
}

/** Where the mouth is in frame f of faceFrames (approximately, before encoding). */
export function mouthInFrame(f: number, side = SIDE): { x: number; y: number } {
  const { dx, dy } = drift(f);
  const k = side / FACE_WINDOW.size;
  return { x: (PHOTO_MOUTH.x - FACE_WINDOW.left - dx) * k, y: (PHOTO_MOUTH.y - FACE_WINDOW.top - dy) * k };
}

export interface FaceFramesOptions {
  side?: number;
  /** Turn the photo by this many degrees (clockwise) first. */
  rotate?: number;
  /** Another window on the photo than FACE_WINDOW (a close-up, a face cut by the edge). */
  window?: { left: number; top: number; size: number };
}

/** `count` frames of the astronaut's face, side x side, drifting; optionally turned by `rotate` degrees. */
export async function faceFrames(count: number, options: FaceFramesOptions = {}): Promise<Buffer[]> {
  const side = options.side ?? SIDE;
  const window = options.window ?? FACE_WINDOW;
  let photo = sharp(ASTRONAUT).removeAlpha();
  if (options.rotate !== undefined) {
    // Turned about the photo's centre, then cut back to 512 so the window still frames the face.
    const turned = await photo
      .rotate(options.rotate, { background: '#808080' })
      .raw()
      .toBuffer({ resolveWithObject: true });
    const { width, height } = turned.info;
    photo = sharp(turned.data, { raw: { width, height, channels: 3 } }).extract({
      left: Math.round((width - 512) / 2),
      top: Math.round((height - 512) / 2),
      width: 512,
      height: 512,
    });
  }
  const base = await photo.png().toBuffer();
  const frames: Buffer[] = [];
  for (let f = 0; f < count; f += 1) {
    const { dx, dy } = drift(f);
    frames.push(
      await sharp(base)
        .extract({ left: window.left + dx, top: window.top + dy, width: window.size, height: window.size })
        .resize(side, side)
        .raw()
        .toBuffer(),
    );
  }
  return frames;
}

export type ClipFormat = 'mp4' | 'webm' | 'gif';

/** Raw rgb24 frames -> a clip; `audio` adds a soundtrack (MP4 and WebM). */
export async function encodeClip(
  file: string,
  frames: readonly Buffer[],
  size: { width: number; height: number },
  format: ClipFormat,
  options: { audio?: string; videoBitrate?: string; fps?: number } = {},
): Promise<string> {
  const fps = options.fps ?? FPS;
  const input = [
    '-f',
    'rawvideo',
    '-pix_fmt',
    'rgb24',
    '-s',
    `${size.width}x${size.height}`,
    '-r',
    String(fps),
    '-i',
    'pipe:0',
  ];
  const audio = options.audio === undefined ? [] : ['-i', options.audio];
  const video =
    format === 'gif'
      ? ['-vf', 'split[a][b];[a]palettegen[p];[b][p]paletteuse', '-f', 'gif']
      : format === 'webm'
        ? [
            '-c:v',
            'libvpx',
            '-deadline',
            'realtime',
            '-cpu-used',
            '8',
            '-b:v',
            '1M',
            '-pix_fmt',
            'yuv420p',
            ...(options.audio ? ['-c:a', 'libopus'] : []),
          ]
        : [
            '-c:v',
            'libx264',
            '-preset',
            'veryfast',
            ...(options.videoBitrate ? ['-b:v', options.videoBitrate] : ['-crf', '18']),
            '-pix_fmt',
            'yuv420p',
            ...(options.audio ? ['-c:a', 'aac', '-shortest'] : []),
          ];
  await runProcess(resolveFfmpeg(), ['-v', 'error', '-y', ...input, ...audio, ...video, file], {
    stdin: Buffer.concat(frames),
  });
  return file;
}

/** A piece of the speech fixture, re-encoded (format from the extension). */
export async function speechClip(file: string, seconds?: number): Promise<string> {
  await runProcess(resolveFfmpeg(), [
    '-v',
    'error',
    '-y',
    '-i',
    SPEECH,
    ...(seconds === undefined ? [] : ['-t', String(seconds)]),
    file,
  ]);
  return file;
}

export async function probe(file: string): Promise<MediaInfo> {
  return probeMedia(file);
}

/** What ffprobe counts in an output: decoded frames, sizes and durations. */
export interface OutputFacts {
  width: number;
  height: number;
  frames: number;
  videoSeconds: number;
  audioSeconds: number;
  formatSeconds: number;
  videoCodec: string;
  audioCodec: string;
  videoBitRate: number;
}

export async function outputFacts(file: string): Promise<OutputFacts> {
  const { stdout } = await runProcess(resolveFfprobe(), [
    '-v',
    'error',
    '-count_frames',
    '-show_entries',
    'stream=codec_type,codec_name,width,height,nb_read_frames,duration,bit_rate:format=duration',
    '-of',
    'json',
    file,
  ]);
  const json = JSON.parse(stdout.toString('utf8')) as {
    streams: {
      codec_type: string;
      codec_name: string;
      width?: number;
      height?: number;
      nb_read_frames?: string;
      duration?: string;
      bit_rate?: string;
    }[];
    format: { duration: string };
  };
  const v = json.streams.find((s) => s.codec_type === 'video');
  const a = json.streams.find((s) => s.codec_type === 'audio');
  if (v === undefined || a === undefined) throw new Error(`Expected a video and an audio stream in ${file}`);
  return {
    width: v.width ?? 0,
    height: v.height ?? 0,
    frames: Number(v.nb_read_frames),
    videoSeconds: Number(v.duration),
    audioSeconds: Number(a.duration),
    formatSeconds: Number(json.format.duration),
    videoCodec: v.codec_name,
    audioCodec: a.codec_name,
    videoBitRate: Number(v.bit_rate),
  };
}

function split(data: Buffer, width: number, height: number): RgbFrame[] {
  const size = width * height * 3;
  const frames: RgbFrame[] = [];
  for (let offset = 0; offset + size <= data.length; offset += size) {
    frames.push({ data: new Uint8Array(data.buffer, data.byteOffset + offset, size), width, height });
  }
  return frames;
}

/** Every frame of a (lossless) output, as rgb24. */
export async function outputFrames(file: string, width: number, height: number): Promise<RgbFrame[]> {
  const { stdout } = await runProcess(
    resolveFfmpeg(),
    ['-v', 'error', '-i', file, '-f', 'rawvideo', '-pix_fmt', 'rgb24', 'pipe:1'],
    {
      maxStdoutBytes: 512 * 1024 * 1024,
    },
  );
  return split(stdout, width, height);
}

/** The source's frames exactly as the pipeline decodes them (same filter chain, same colour matrix). */
export async function sourceFrames(file: string, info: MediaInfo): Promise<RgbFrame[]> {
  const video = info.video;
  if (video === undefined) throw new Error(`Expected a video stream in ${file}`);
  const size = displayedSize(video);
  const extras = await probeVideoExtras(file, info.container);
  const args = sourceDecoderArgs({
    inputPath: file,
    container: info.container,
    timing: frameTiming(video),
    matrix: inputMatrix(extras, size),
    size,
  });
  const { stdout } = await runProcess(resolveFfmpeg(), args, { maxStdoutBytes: 512 * 1024 * 1024 });
  return split(stdout, size.width, size.height);
}

/** Mean luma of a rectangle. */
export function meanLuma(frame: RgbFrame, x0: number, y0: number, x1: number, y1: number): number {
  let sum = 0;
  let n = 0;
  for (let y = Math.max(0, Math.floor(y0)); y < Math.min(frame.height, Math.ceil(y1)); y += 1) {
    for (let x = Math.max(0, Math.floor(x0)); x < Math.min(frame.width, Math.ceil(x1)); x += 1) {
      const i = 3 * (y * frame.width + x);
      sum +=
        0.299 * (frame.data[i] as number) +
        0.587 * (frame.data[i + 1] as number) +
        0.114 * (frame.data[i + 2] as number);
      n += 1;
    }
  }
  return sum / n;
}

/** Pixels (x, y) where two frames differ in any channel. */
export function changedPixels(a: RgbFrame, b: RgbFrame): { x: number; y: number }[] {
  const out: { x: number; y: number }[] = [];
  for (let p = 0; p < a.width * a.height; p += 1) {
    const i = 3 * p;
    if (a.data[i] !== b.data[i] || a.data[i + 1] !== b.data[i + 1] || a.data[i + 2] !== b.data[i + 2]) {
      out.push({ x: p % a.width, y: Math.floor(p / a.width) });
    }
  }
  return out;
}

export async function writeRaw(file: string, data: Buffer): Promise<string> {
  await writeFile(file, data);
  return path.resolve(file);
}

/** Mouth opening per frame, 0..1: syllables of 3-7 frames at random loudness, pauses of 2-5. */
export function syllables(seed: number, frames: number): number[] {
  const next = random(seed);
  const out: number[] = [];
  while (out.length < frames) {
    const level = 0.4 + 0.6 * next();
    for (let i = 3 + Math.floor(next() * 5); i > 0; i -= 1) out.push(level);
    for (let i = 2 + Math.floor(next() * 4); i > 0; i -= 1) out.push(0);
  }
  return out.slice(0, frames);
}

/** A voiced tone at 16 kHz whose loudness follows the syllables. */
export function speechLike(opening: readonly number[], fps = FPS): Float32Array {
  const rate = 16_000;
  const samples = new Float32Array(Math.round((opening.length * rate) / fps));
  let gain = 0;
  for (let i = 0; i < samples.length; i += 1) {
    const target = 0.5 * (opening[Math.floor((i * fps) / rate)] ?? 0);
    gain += Math.max(-1 / 80, Math.min(1 / 80, target - gain));
    const t = i / rate;
    samples[i] =
      gain *
      (0.6 * Math.sin(2 * Math.PI * 160 * t) +
        0.3 * Math.sin(2 * Math.PI * 320 * t) +
        0.1 * Math.sin(2 * Math.PI * 480 * t));
  }
  return samples;
}

export const TWO_FACES = { width: 420, height: 240, split: 210 };

/**
 * Two copies of the astronaut side by side (the left one larger, so the more prominent), each mouth
 * opening and closing with its own syllables; the soundtrack follows the right one's.
 */
export async function twoFaceClip(dir: string, frames: number): Promise<string> {
  const tile = { left: 140, top: 40, width: 180, height: 200 };
  const faces = { left: { scale: 1.15, x: 0, y: 5 }, right: { scale: 1, x: 232, y: 20 } } as const;
  const openings = { left: syllables(7, frames), right: syllables(1234, frames) };
  const tiles = await Promise.all(
    (['left', 'right'] as const).map((which) =>
      sharp(ASTRONAUT)
        .extract(tile)
        .resize(Math.round(tile.width * faces[which].scale), Math.round(tile.height * faces[which].scale))
        .removeAlpha()
        .png()
        .toBuffer(),
    ),
  );
  const { width, height } = TWO_FACES;
  const background = await sharp({ create: { width, height, channels: 3, background: '#203040' } })
    .composite([
      { input: tiles[0] as Buffer, left: faces.left.x, top: faces.left.y },
      { input: tiles[1] as Buffer, left: faces.right.x, top: faces.right.y },
    ])
    .png()
    .toBuffer();
  const rendered: Buffer[] = [];
  for (let f = 0; f < frames; f += 1) {
    const ellipses = (['left', 'right'] as const)
      .map((which) => {
        const s = faces[which].scale;
        const x = faces[which].x + (PHOTO_MOUTH.x - tile.left) * s;
        const y = faces[which].y + (PHOTO_MOUTH.y + 2 - tile.top) * s;
        return `<ellipse cx="${x}" cy="${y}" rx="${16 * s}" ry="${(1 + 9 * (openings[which][f] ?? 0)) * s}" fill="#1a0505"/>`;
      })
      .join('');
    const svg = `<svg width="${width}" height="${height}" xmlns="http://www.w3.org/2000/svg">${ellipses}</svg>`;
    rendered.push(
      await sharp(background)
        .composite([{ input: Buffer.from(svg) }])
        .removeAlpha()
        .raw()
        .toBuffer(),
    );
  }
  const track = path.join(dir, 'right-speaker.f32');
  await writeFile(track, Buffer.from(speechLike(openings.right).buffer));
  const file = path.join(dir, 'two-faces.mp4');
  await runProcess(
    resolveFfmpeg(),
    [
      '-v',
      'error',
      '-y',
      '-f',
      'rawvideo',
      '-pix_fmt',
      'rgb24',
      '-s',
      `${width}x${height}`,
      '-r',
      String(FPS),
      '-i',
      'pipe:0',
      '-f',
      'f32le',
      '-ar',
      '16000',
      '-ac',
      '1',
      '-i',
      track,
      '-c:v',
      'libx264',
      '-preset',
      'veryfast',
      '-crf',
      '18',
      '-pix_fmt',
      'yuv420p',
      '-c:a',
      'aac',
      '-b:a',
      '96k',
      file,
    ],
    { stdin: Buffer.concat(rendered) },
  );
  return file;
}

/** A clip without any face: ffmpeg's test pattern. */
export async function patternClip(file: string, seconds: number): Promise<string> {
  await runProcess(resolveFfmpeg(), [
    '-v',
    'error',
    '-y',
    '-f',
    'lavfi',
    '-i',
    `testsrc2=size=160x120:rate=${FPS}`,
    '-t',
    String(seconds),
    '-c:v',
    'libx264',
    '-preset',
    'veryfast',
    '-pix_fmt',
    'yuv420p',
    file,
  ]);
  return file;
}

/** Processes whose parent is this one (ffmpeg children left behind would show here). */
export async function childProcesses(): Promise<string[]> {
  const { stdout } = await runProcess('ps', ['-o', 'pid=,comm=', '--ppid', String(process.pid)]).catch(
    (error: unknown) => {
      // ps exits 1 when it lists nothing.
      if ((error as { exitCode?: number }).exitCode === 1) return { stdout: Buffer.alloc(0) };
      throw error;
    },
  );
  return stdout
    .toString('utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.endsWith(' ps'));
}

/** A vendor-lipsync-2 request for `video` with `audio`, cut_off, encoded losslessly, into `outputPath`. */
export async function lipsyncRequest(
  video: string,
  audio: { file: string; info: MediaInfo },
  outputPath: string,
  extra: Partial<LipsyncRequest> = {},
): Promise<LipsyncRequest> {
  return {
    videoPath: video,
    videoInfo: await probe(video),
    audioPath: audio.file,
    audioInfo: audio.info,
    outputPath,
    model: 'vendor-lipsync-2',
    syncMode: 'cut_off',
    activeSpeaker: false,
    lossless: true,
    ...extra,
  };
}

/** 16-bit mono PCM of a RIFF/WAVE file, scaled as librosa.load scales it (/ 32768). */
export function readWav16(file: string): Float32Array {
  const bytes = readFileSync(file);
  let at = 12;
  while (at + 8 <= bytes.length) {
    const id = bytes.toString('ascii', at, at + 4);
    const size = bytes.readUInt32LE(at + 4);
    if (id === 'data') {
      const out = new Float32Array(size / 2);
      for (let i = 0; i < out.length; i++) out[i] = bytes.readInt16LE(at + 8 + 2 * i) / 32768;
      return out;
    }
    at += 8 + size + (size % 2);
  }
  throw new Error(`no data chunk in ${file}`);
}
