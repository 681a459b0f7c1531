/**
 * Pure builders of the one ffmpeg run that renders a music video (docs/music-video.md, "Output").
 *
 * The still part of the picture (the blurred background, the fitted cover, the title) is composed
 * once, from one decoded cover, and repeated by the `loop` filter: per frame, ffmpeg only draws the
 * visualiser and lays it over. The visualiser is drawn white on transparent by showwaves or
 * showfreqs; its alpha plane (extractplanes) becomes the alpha of a plain white plate (alphamerge),
 * which is a plane copy where converting the drawn RGBA frame to YUVA costs more than drawing it.
 *
 * Length: the video has ceil(duration × 30) frames (trimmed in the graph), so it ends within one
 * frame after the audio; the visualiser's audio is padded with silence so it never runs out first.
 */
import {
  allowedAudioSeconds,
  fileInput,
  quietFfmpegArgs,
  safeInputArgs,
  type ContainerKind,
} from '../../../media/index.js';
import { MUSIC_VIDEO_FPS, audioInputArgs, type MusicVideoStyle } from '../../../jobs/index.js';
import { LINE_HEIGHT_EM, type Box, type MusicVideoLayout } from './layout.js';

/** The encoder's settings per style, and why (docs/music-video.md, "Encoder settings"). */
export interface EncoderSettings {
  preset: string;
  crf: number;
  tune?: string;
  /** Keyframe interval in frames. */
  gop: number;
}

/**
 * Speed first: at 1080p the x264 analysis of every frame is most of the cost, and ultrafast does
 * the least of it (no B-frames, no CABAC, no deblocking): about half the CPU time of veryfast for
 * files about twice as large (docs/benchmarks.md). A frame that is mostly the same still picture
 * compresses well at any preset, so the size stays modest; CRF 23 is x264's default quality.
 * A keyframe every 2 s keeps seeking quick. `still` adds x264's tuning for still pictures.
 */
export const ENCODER_SETTINGS: Readonly<Record<MusicVideoStyle, EncoderSettings>> = {
  waveform: { preset: 'ultrafast', crf: 23, gop: 2 * MUSIC_VIDEO_FPS },
  spectrum: { preset: 'ultrafast', crf: 23, gop: 2 * MUSIC_VIDEO_FPS },
  still: { preset: 'ultrafast', crf: 23, tune: 'stillimage', gop: 2 * MUSIC_VIDEO_FPS },
};

export const AUDIO_BITRATE = '192k';
/** Rates the AAC encoder takes; others are resampled to 48 kHz. */
export const AAC_SAMPLE_RATES: readonly number[] = [
  96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350,
];
/** The visualiser's audio rate: 48,000 / 30 is a whole 1,600 samples per frame, so frames never drift. */
export const VISUALISER_SAMPLE_RATE = 48_000;
/** The spectrum's: 24,000 / 30 = 800 samples per frame, frequencies up to 12 kHz. */
export const SPECTRUM_SAMPLE_RATE = 24_000;

export interface RenderPlan {
  audio: { path: string; container: ContainerKind; sampleRate: number };
  /** The prepared cover: an 8-bit sRGB PNG (cover.ts). */
  coverPath: string;
  /** The measured audio duration, seconds. */
  durationSeconds: number;
  style: MusicVideoStyle;
  layout: MusicVideoLayout;
  /** The title's lines as drawn (layout.ts fitTitle), each in its own UTF-8 file, with the font. */
  title?: { files: readonly string[]; fontSize: number; fontFile: string };
  /** Metadata title of the MP4 (the job's title as given). */
  metadataTitle?: string;
  /** Another encoder setting than the style's (the benchmark's comparison). */
  encoder?: Partial<EncoderSettings>;
  outputPath: string;
}

/** Frames of a video as long as `seconds` of audio, ending within one frame after it. */
export function frameCount(seconds: number): number {
  return Math.max(1, Math.ceil(seconds * MUSIC_VIDEO_FPS - 1e-6));
}

/**
 * A value inside a filter graph: escaped for the filter's option parser (`\`, `'`, `:`) and then
 * for the graph's (`\`, `'`, `[`, `]`, `,`, `;`), the two levels of ffmpeg's filter syntax.
 */
export function filterValue(value: string): string {
  const option = value.replace(/[\\':]/g, (c) => `\\${c}`);
  return option.replace(/[\\'[\],;]/g, (c) => `\\${c}`);
}

/** One drawtext per line, each centred: ffmpeg 5's drawtext cannot centre the lines of one text. */
function titleFilters(plan: RenderPlan): string[] {
  if (plan.title === undefined) return [];
  const { files, fontSize, fontFile } = plan.title;
  const lineHeight = Math.round(fontSize * LINE_HEIGHT_EM);
  return files.map((file, i) =>
    [
      'drawtext=expansion=none',
      `fontfile=${filterValue(fontFile)}`,
      `textfile=${filterValue(file)}`,
      `fontsize=${fontSize}`,
      'fontcolor=white',
      'shadowcolor=black@0.6',
      `shadowx=${Math.max(1, Math.round(fontSize / 20))}`,
      `shadowy=${Math.max(1, Math.round(fontSize / 20))}`,
      'x=(w-text_w)/2',
      `y=${plan.layout.title.y + i * lineHeight}`,
    ].join(':'),
  );
}

/**
 * The line the visualiser lies on in silence, part of the still picture: across the band's middle
 * for the waveform (drawn out from it both ways), along its bottom for the spectrum's bars.
 */
function baseline(plan: RenderPlan): string[] {
  if (plan.style === 'still') return [];
  const band = plan.layout.visualiser;
  const y = plan.style === 'waveform' ? band.y + band.height / 2 - 1 : band.y + band.height - 2;
  return [`drawbox=x=${band.x}:y=${y}:w=${band.width}:h=2:color=white@0.6:t=fill`];
}

/** The still picture: blurred, darkened fill; the cover fitted in its box; the title; repeated at 30 fps. */
function stillChain(plan: RenderPlan): string[] {
  const { width, height, cover } = plan.layout;
  // The fill is blurred at an eighth of the size (a cheap, strong blur), then scaled up.
  const small = { width: 2 * Math.round(width / 16), height: 2 * Math.round(height / 16) };
  return [
    '[1:v]format=rgb24,split=2[fillsrc][coversrc]',
    `[fillsrc]scale=${small.width}:${small.height}:force_original_aspect_ratio=increase,crop=${small.width}:${small.height},` +
      `boxblur=8:2,scale=${width}:${height}:flags=bilinear,colorchannelmixer=rr=0.45:gg=0.45:bb=0.45,setsar=1[fill]`,
    `[coversrc]scale=${cover.width}:${cover.height}:force_original_aspect_ratio=decrease:force_divisible_by=2:flags=lanczos,setsar=1[cover]`,
    `[fill][cover]overlay=x=${cover.x}+(${cover.width}-overlay_w)/2:y=${cover.y}+(${cover.height}-overlay_h)/2,format=yuv420p` +
      [...baseline(plan), ...titleFilters(plan)].map((f) => `,${f}`).join('') +
      `,loop=loop=-1:size=1,settb=1/${MUSIC_VIDEO_FPS},setpts=N[still]`,
  ];
}

/** The visualiser drawn white on transparent, as a gray mask (its alpha plane). */
function visualiserSource(style: Exclude<MusicVideoStyle, 'still'>, band: Box): string {
  const size = `${band.width}x${band.height}`;
  if (style === 'waveform') {
    // cline: a line centred on the band's middle per column, as tall as the sound; in silence, none.
    return `showwaves=s=${size}:mode=cline:rate=${MUSIC_VIDEO_FPS}:scale=sqrt:draw=full:colors=white`;
  }
  // Bars of the frequencies up to 12 kHz (where music's notes and most of its energy are), low at the
  // left on a log scale; the sound raised 3x (cube root: bars 1.4x taller) so a song fills about a
  // third of the band and a loud one stays inside it; silence (no energy) draws only the floor.
  return `aresample=${SPECTRUM_SAMPLE_RATE},volume=3,showfreqs=s=${size}:rate=${MUSIC_VIDEO_FPS}:mode=bar:ascale=cbrt:fscale=log:win_size=1024:averaging=2:colors=white`;
}

function visualiserChain(plan: RenderPlan, style: Exclude<MusicVideoStyle, 'still'>): string[] {
  const band = plan.layout.visualiser;
  // Padded with a second of silence past the end: the video's last frame always has a picture.
  const padded = (plan.durationSeconds + 1).toFixed(3);
  return [
    `[0:a:0]aresample=${VISUALISER_SAMPLE_RATE},aformat=channel_layouts=mono,apad=whole_dur=${padded},` +
      `${visualiserSource(style, band)},extractplanes=a[mask]`,
    `color=c=white:s=${band.width}x${band.height}:r=${MUSIC_VIDEO_FPS},format=yuv420p[plate]`,
    '[plate][mask]alphamerge[visual]',
    `[still][visual]overlay=x=${band.x}:y=${band.y}:format=yuv420:eof_action=repeat[video]`,
  ];
}

/**
 * The whole filter graph; its video output is `[video]`, cut at its last frame by `trim`: a video
 * that ends in the graph lets ffmpeg finish the audio, where `-frames:v` made it drop the audio
 * encoder's last packets (0.1 s short of the song).
 */
export function filterGraph(plan: RenderPlan): string {
  const chains = stillChain(plan);
  if (plan.style !== 'still') chains.push(...visualiserChain(plan, plan.style));
  const last = chains.length - 1;
  chains[last] = chains[last]!.replace(
    /\[(still|video)\]$/,
    `,trim=end_frame=${frameCount(plan.durationSeconds)}[video]`,
  );
  return chains.join(';');
}

/** The AAC encoder's rate for an input rate: kept when AAC has it. */
export function outputSampleRate(inputRate: number): number {
  return AAC_SAMPLE_RATES.includes(inputRate) ? inputRate : VISUALISER_SAMPLE_RATE;
}

/** ffmpeg's arguments: audio and cover in (whitelisted), the MP4 out, progress on stdout. */
export function renderArgs(plan: RenderPlan): string[] {
  const encoder = { ...ENCODER_SETTINGS[plan.style], ...plan.encoder };
  const rate = outputSampleRate(plan.audio.sampleRate);
  return [
    ...quietFfmpegArgs(),
    '-y',
    // The bill is what runs: no more audio is read than the quote measured (and a resampler's
    // last block), whatever the file became since. Then the audio as the quote read it (measure.ts).
    '-t',
    allowedAudioSeconds(plan.durationSeconds).toFixed(3),
    ...audioInputArgs(plan.audio),
    ...safeInputArgs({ demuxers: ['png_pipe'] }),
    '-f',
    'png_pipe',
    '-i',
    fileInput(plan.coverPath),
    '-filter_complex',
    filterGraph(plan),
    '-map',
    '[video]',
    '-map',
    '0:a:0',
    '-c:v',
    'libx264',
    '-preset',
    encoder.preset,
    ...(encoder.tune === undefined ? [] : ['-tune', encoder.tune]),
    '-crf',
    String(encoder.crf),
    '-g',
    String(encoder.gop),
    '-pix_fmt',
    'yuv420p',
    '-r',
    String(MUSIC_VIDEO_FPS),
    '-c:a',
    'aac',
    '-b:a',
    AUDIO_BITRATE,
    ...(rate === plan.audio.sampleRate ? [] : ['-ar', String(rate)]),
    // The inputs' tags (an MP3's ID3 frames, a cover's EXIF) stay out; the title goes in.
    '-map_metadata',
    '-1',
    ...(plan.metadataTitle === undefined ? [] : ['-metadata', `title=${plan.metadataTitle}`]),
    '-movflags',
    '+faststart',
    '-progress',
    'pipe:1',
    '-f',
    'mp4',
    fileInput(plan.outputPath),
  ];
}
