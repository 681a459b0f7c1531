/**
 * Runs the render (render-args.ts) as one ffmpeg process through media/process.ts: stopped on the
 * job's AbortSignal or its deadline, always reaped, its stderr's tail on the failure. Progress is
 * counted in frames from ffmpeg's `-progress` report on stdout.
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ProcessingError } from '../../../errors.js';
import {
  MUSIC_VIDEO_FPS,
  MUSIC_VIDEO_SIZES,
  type JobProgress,
  type MusicVideoAspectRatio,
  type MusicVideoStyle,
  type QuotedMusicVideoJob,
} from '../../../jobs/index.js';
import { ffmpegReason, isProcessError, resolveFfmpeg, spawnProcess, type ContainerKind } from '../../../media/index.js';
import { parseProgressFrames } from '../../../video/index.js';
import { definedFields } from '../../../defined-fields.js';
import { prepareCover } from './cover.js';
import { findFontFile, FONT_NEED } from './font.js';
import { fitTitle, layoutFor } from './layout.js';
import { frameCount, renderArgs, type EncoderSettings, type RenderPlan } from './render-args.js';

export const RENDER_STAGE = 'rendering';

export interface RenderMusicVideoOptions {
  audio: { path: string; container: ContainerKind; sampleRate: number };
  /** The cover as fetched (JPEG, PNG or WebP); prepared into `workDir` first (cover.ts). */
  imagePath: string;
  /** The measured (decoded) audio duration: the video's length and frame count. */
  durationSeconds: number;
  style: MusicVideoStyle;
  aspectRatio: MusicVideoAspectRatio;
  title?: string;
  /** The job's directory: the prepared cover and the title's files go here. */
  workDir: string;
  /** Absolute path of the MP4 to write. */
  outputPath: string;
  ffmpegPath?: string;
  /** The title's font; by default fontconfig's (font.ts). */
  fontFile?: string;
  /** Another encoder setting than the style's (render-args.ts ENCODER_SETTINGS): for the benchmark's comparison. */
  encoder?: Partial<EncoderSettings>;
  signal?: AbortSignal;
  timeoutMs?: number;
  onProgress?: (progress: JobProgress) => void;
}

export interface RenderedMusicVideo {
  path: string;
  width: number;
  height: number;
  frames: number;
  /** The video's length: frames / 30. */
  seconds: number;
}

/** What a render takes from a quote: the measured files and the job's choices. */
export function renderInputs(
  quoted: QuotedMusicVideoJob,
): Pick<RenderMusicVideoOptions, 'audio' | 'imagePath' | 'durationSeconds' | 'style' | 'aspectRatio' | 'title'> {
  const { inputs, probes, price, audioSampleRate } = quoted;
  const { input } = quoted.job;
  return {
    audio: { path: inputs.audio.path, container: probes.audio.container, sampleRate: audioSampleRate },
    imagePath: inputs.image.path,
    durationSeconds: price.durationSeconds,
    style: input.style,
    aspectRatio: input.aspect_ratio,
    ...definedFields({ title: input.title }),
  };
}

/** Prepares the cover and the title, then renders; a failure is a ProcessingError (MUSIC_VIDEO_FAILED). */
export async function renderMusicVideo(opts: RenderMusicVideoOptions): Promise<RenderedMusicVideo> {
  const ffmpeg = resolveFfmpeg(definedFields({ ffmpegPath: opts.ffmpegPath }));
  const layout = layoutFor(opts.aspectRatio);
  const cover = await prepareCover(opts.imagePath, opts.workDir);
  opts.signal?.throwIfAborted();
  let title: RenderPlan['title'];
  if (opts.title !== undefined) {
    const fontFile = await findFontFile(opts.fontFile);
    if (fontFile === undefined)
      throw new ProcessingError(`No font to draw the title with: this host needs ${FONT_NEED}`);
    const fitted = fitTitle(opts.title, layout.title);
    // Files, not the filter's text option: no escaping of what a customer wrote, and no expansion.
    const files = await Promise.all(
      fitted.lines.map(async (line, i) => {
        const file = path.join(opts.workDir, `title-${i}.txt`);
        await writeFile(file, line, 'utf8');
        return file;
      }),
    );
    title = { files, fontSize: fitted.fontSize, fontFile };
  }
  const plan: RenderPlan = {
    audio: opts.audio,
    coverPath: cover.path,
    durationSeconds: opts.durationSeconds,
    style: opts.style,
    layout,
    outputPath: opts.outputPath,
    ...definedFields({ title, metadataTitle: opts.title, encoder: opts.encoder }),
  };
  const total = frameCount(opts.durationSeconds);
  await runRender(ffmpeg, renderArgs(plan), total, opts);
  const { width, height } = MUSIC_VIDEO_SIZES[opts.aspectRatio];
  return { path: opts.outputPath, width, height, frames: total, seconds: total / MUSIC_VIDEO_FPS };
}

async function runRender(ffmpeg: string, args: string[], total: number, opts: RenderMusicVideoOptions): Promise<void> {
  const report = (done: number): void =>
    opts.onProgress?.({ stage: RENDER_STAGE, done: Math.min(done, total), total, unit: 'frames' });
  report(0);
  const proc = spawnProcess(ffmpeg, args, {
    stdout: 'pipe',
    ...definedFields({ signal: opts.signal, timeoutMs: opts.timeoutMs }),
  });
  let pending = '';
  proc.stdout?.setEncoding('utf8');
  proc.stdout?.on('data', (chunk: string) => {
    // Only complete lines: a `frame=12` cut after its 1 must not read as frame 1.
    const text = pending + chunk;
    const end = text.lastIndexOf('\n');
    pending = text.slice(end + 1);
    const frames = parseProgressFrames(text.slice(0, end + 1));
    if (frames !== undefined) report(frames);
  });
  try {
    await proc.done;
  } catch (err) {
    if (!isProcessError(err) || err.reason === 'spawn') throw err;
    const retryable = err.reason === 'timeout' || err.reason === 'signal';
    const reason =
      err.reason === 'timeout'
        ? `it ran past ${(opts.timeoutMs ?? 0) / 1000} s`
        : ffmpegReason(
            err.stderrTail,
            [
              [opts.outputPath, 'output'],
              [opts.workDir, 'work'],
            ],
            3,
          );
    throw new ProcessingError(`The music video could not be rendered: ${reason}`, { cause: err, retryable });
  }
  report(total);
}
