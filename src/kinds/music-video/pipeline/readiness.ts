/**
 * What a host needs to render music videos, checked before it takes one (docs/music-video.md,
 * "Readiness"): an ffmpeg whose build has the filters, encoders and demuxers the render uses, and
 * a font for the title. No GPU and no network: any host with these can run the kind. What is
 * missing is named, one entry each, so an operator knows what to install.
 */
import { rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { errorMessage, firstErrorLine } from '../../../errors.js';
import { ownedTempDir, resolveFfmpeg, runProcess } from '../../../media/index.js';
import { definedFields } from '../../../defined-fields.js';
import { MUSIC_VIDEO_STYLES } from '../../../jobs/index.js';
import { FONT_NEED, findFontFile } from './font.js';
import { renderMusicVideo } from './render.js';

export const REQUIRED_FILTERS = [
  'showwaves',
  'showfreqs',
  'drawtext',
  'scale',
  'crop',
  'boxblur',
  'colorchannelmixer',
  'overlay',
  'loop',
  'settb',
  'setpts',
  'setsar',
  'split',
  'format',
  'extractplanes',
  'alphamerge',
  'color',
  'aresample',
  'aformat',
  'apad',
  'trim',
  'drawbox',
  'volume',
] as const;
export const REQUIRED_ENCODERS = ['libx264', 'aac', 'pcm_u8'] as const;
/** The render's demuxers: the cover's, and every accepted audio container's. */
export const REQUIRED_DEMUXERS = ['png_pipe', 'mov', 'mp3', 'wav', 'aac', 'ogg', 'flac'] as const;

export interface MusicVideoReadiness {
  ready: boolean;
  /** Each missing thing by name: `ffmpeg filter drawtext`, `ffmpeg encoder libx264`, the font. */
  missing: string[];
  /** The font the title is drawn with, when one was found. */
  fontFile?: string;
}

export interface ReadinessOptions {
  ffmpegPath?: string;
  /** Where the trial render's files go (removed after); default the system's. */
  tmpDir?: string;
  /** An operator's font file; by default fontconfig's DejaVu Sans Bold. */
  fontFile?: string;
  signal?: AbortSignal;
}

/** The names in the first column of `ffmpeg -filters`/`-encoders`/`-demuxers` output (after its legend). */
export function listedNames(listing: string): Set<string> {
  const names = new Set<string>();
  const body = listing.split(/^\s*-+\s*$/m).at(-1) ?? '';
  for (const line of body.split('\n')) {
    // " T.C drawtext  V->V  Draw text..." / " V....D libx264  ..." / " D  png_pipe  piped png sequence"
    const match = /^\s*[A-Z.|]+\s+([A-Za-z0-9_,]+)\s/.exec(line);
    if (match !== null) for (const name of match[1]!.split(',')) names.add(name);
  }
  return names;
}

/** What is missing from `have`, as readiness names it. */
export function missingFrom(kind: string, needed: readonly string[], have: ReadonlySet<string>): string[] {
  return needed.filter((name) => !have.has(name)).map((name) => `ffmpeg ${kind} ${name}`);
}

export async function musicVideoReadiness(opts: ReadinessOptions = {}): Promise<MusicVideoReadiness> {
  const missing: string[] = [];
  let ffmpeg: string | undefined;
  try {
    ffmpeg = resolveFfmpeg(definedFields({ ffmpegPath: opts.ffmpegPath }));
  } catch (err) {
    missing.push(`ffmpeg (${errorMessage(err)})`);
  }
  if (ffmpeg !== undefined) {
    const exe = ffmpeg;
    const list = async (flag: string): Promise<Set<string>> => {
      const { stdout } = await runProcess(exe, ['-hide_banner', flag], {
        timeoutMs: 20_000,
        ...definedFields({ signal: opts.signal }),
      });
      return listedNames(stdout.toString('utf8'));
    };
    try {
      missing.push(...missingFrom('filter', REQUIRED_FILTERS, await list('-filters')));
      missing.push(...missingFrom('encoder', REQUIRED_ENCODERS, await list('-encoders')));
      missing.push(...missingFrom('demuxer', REQUIRED_DEMUXERS, await list('-demuxers')));
    } catch (err) {
      missing.push(`ffmpeg that runs (${errorMessage(err)})`);
    }
  }
  const fontFile = await findFontFile(opts.fontFile);
  if (fontFile === undefined)
    missing.push(opts.fontFile === undefined ? FONT_NEED : `the font file ${opts.fontFile} (not readable)`);
  if (ffmpeg !== undefined && fontFile !== undefined && missing.length === 0) {
    const failure = await trialRender(ffmpeg, fontFile, opts);
    if (failure !== undefined) missing.push(`an ffmpeg that renders a music video (${failure})`);
  }
  return { ready: missing.length === 0, missing, ...definedFields({ fontFile }) };
}

/**
 * A fifth of a second of each style, titled, rendered for real: what the listings cannot say (an
 * option a filter of an older ffmpeg lacks, a font drawtext cannot open) fails here. Undefined
 * when every style rendered; else the first failure's first line.
 */
async function trialRender(ffmpeg: string, fontFile: string, opts: ReadinessOptions): Promise<string | undefined> {
  // Named for this process: a worker killed mid-render leaves it to the next start's sweep.
  const dir = await ownedTempDir(opts.tmpDir ?? os.tmpdir(), 'music-video-readiness');
  try {
    const audio = path.join(dir, 'tone.wav');
    await runProcess(
      ffmpeg,
      ['-hide_banner', '-nostdin', '-v', 'error', '-f', 'lavfi', '-i', 'sine=frequency=440:duration=0.2', audio],
      { timeoutMs: 20_000 },
    );
    const image = path.join(dir, 'cover.png');
    await sharp({ create: { width: 32, height: 16, channels: 3, background: '#4060a0' } })
      .png()
      .toFile(image);
    for (const style of MUSIC_VIDEO_STYLES) {
      await renderMusicVideo({
        audio: { path: audio, container: 'wav', sampleRate: 44_100 },
        imagePath: image,
        durationSeconds: 0.2,
        style,
        aspectRatio: '1:1',
        title: 'Readiness',
        workDir: dir,
        outputPath: path.join(dir, `${style}.mp4`),
        ffmpegPath: ffmpeg,
        fontFile,
        timeoutMs: 60_000,
        ...definedFields({ signal: opts.signal }),
      });
    }
    return undefined;
  } catch (err) {
    return firstErrorLine(err);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
