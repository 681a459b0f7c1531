/** Shared by the face tests: real images and videos in and out as RgbFrames. */
import { existsSync } from 'node:fs';
import sharp, { type Sharp } from 'sharp';
import { resolveFfmpeg, runProcess } from '../../../../src/media/index.js';
import type { FaceBox, RgbFrame } from '../../../../src/kinds/lipsync/pipeline/index.js';

export const PHOTOS = new URL('../../../fixtures/photos/', import.meta.url).pathname;
export const ASTRONAUT = `${PHOTOS}astronaut.png`;
export const COFFEE = `${PHOTOS}coffee.png`;
/** Debian's opencv-doc (CI installs it): animated faces with speech, 720x528, 23.976 fps. */
export const MEGAMIND = '/usr/share/doc/opencv-doc/examples/data/Megamind.avi';

export function requireMegamind(): string {
  if (!existsSync(MEGAMIND)) throw new Error(`Expected ${MEGAMIND}: install the Debian package opencv-doc`);
  return MEGAMIND;
}

export async function toFrame(image: Sharp): Promise<RgbFrame> {
  const { data, info } = await image.removeAlpha().raw().toBuffer({ resolveWithObject: true });
  return { data: new Uint8Array(data.buffer, data.byteOffset, data.length), width: info.width, height: info.height };
}

export function loadFrame(file: string): Promise<RgbFrame> {
  return toFrame(sharp(file));
}

/** Frames of a video as RGB, optionally a time range and a scale filter. */
export async function decodeFrames(
  file: string,
  options: { start?: number; duration?: number; frames?: number; filter?: string; lavfi?: boolean } = {},
): Promise<RgbFrame[]> {
  const ffmpeg = resolveFfmpeg();
  const probe = await runProcess(ffmpeg, [
    '-v',
    'error',
    ...(options.start ? ['-ss', String(options.start)] : []),
    ...(options.lavfi ? ['-f', 'lavfi'] : []),
    '-i',
    file,
    ...(options.filter ? ['-vf', options.filter] : []),
    '-frames:v',
    '1',
    '-f',
    'image2pipe',
    '-c:v',
    'png',
    'pipe:1',
  ]);
  const { width, height } = await sharp(probe.stdout).metadata();
  if (width === undefined || height === undefined) throw new Error(`Expected a frame from ${file}`);
  const { stdout } = await runProcess(
    ffmpeg,
    [
      '-v',
      'error',
      ...(options.start ? ['-ss', String(options.start)] : []),
      ...(options.lavfi ? ['-f', 'lavfi'] : []),
      '-i',
      file,
      ...(options.duration ? ['-t', String(options.duration)] : []),
      ...(options.frames ? ['-frames:v', String(options.frames)] : []),
      ...(options.filter ? ['-vf', options.filter] : []),
      '-an',
      '-f',
      'rawvideo',
      '-pix_fmt',
      'rgb24',
      'pipe:1',
    ],
    { maxStdoutBytes: 512 * 1024 * 1024 },
  );
  const size = width * height * 3;
  const frames: RgbFrame[] = [];
  for (let offset = 0; offset + size <= stdout.length; offset += size) {
    frames.push({ data: new Uint8Array(stdout.buffer, stdout.byteOffset + offset, size), width, height });
  }
  return frames;
}

/** The first audio stream as 16 kHz mono float samples. */
export async function decodeAudio(file: string, sampleRate = 16_000): Promise<Float32Array> {
  const { stdout } = await runProcess(resolveFfmpeg(), [
    '-v',
    'error',
    '-i',
    file,
    '-vn',
    '-ac',
    '1',
    '-ar',
    String(sampleRate),
    '-f',
    'f32le',
    'pipe:1',
  ]);
  return new Float32Array(stdout.buffer.slice(stdout.byteOffset, stdout.byteOffset + stdout.length));
}

/** Draws boxes and keypoints (a debugging aid: set LIPSYNC_DEBUG_DIR to look at what the detector saw). */
export async function saveWithBoxes(frame: RgbFrame, faces: readonly FaceBox[], name: string): Promise<void> {
  const dir = process.env['LIPSYNC_DEBUG_DIR'];
  if (!dir) return;
  const colours = ['red', 'blue', 'yellow', 'magenta', 'cyan', 'white'];
  const svg =
    `<svg width="${frame.width}" height="${frame.height}" xmlns="http://www.w3.org/2000/svg">` +
    faces
      .map(
        (f) =>
          `<rect x="${f.x}" y="${f.y}" width="${f.width}" height="${f.height}" fill="none" stroke="lime" stroke-width="2"/>` +
          Object.values(f.keypoints)
            .map(([x, y], i) => `<circle cx="${x}" cy="${y}" r="3" fill="${colours[i] ?? 'white'}"/>`)
            .join(''),
      )
      .join('') +
    '</svg>';
  await sharp(frame.data, { raw: { width: frame.width, height: frame.height, channels: 3 } })
    .composite([{ input: Buffer.from(svg) }])
    .png()
    .toFile(`${dir}/${name}.png`);
}
