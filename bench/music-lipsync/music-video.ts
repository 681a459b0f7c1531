/**
 * Music video render speed: seconds of video made per second of wall time (the ratio to real time;
 * goal at least 4 at 1080p on 2 cores), for each style, from a generated song of --seconds (default
 * 30: tones and a bass line, MP3) and a 1024x1024 JPEG cover, as a generated song's are. Also the
 * quote's decode (measureAudioSeconds) and the CPU seconds of the render: on a shared machine wall
 * time grows with the neighbours' load, CPU time is the work itself, so "CPU ratio" is the speed on
 * `--cores` otherwise idle cores (audio seconds / (CPU seconds / cores)).
 *
 *   npm run bench:music-video -- [--seconds 30] [--styles waveform,spectrum,still] [--aspect-ratio 16:9] [--cores 2]
 *       [--presets ultrafast,veryfast]
 *
 * --presets: x264 presets to compare (default: each style's own, ENCODER_SETTINGS).
 * Prints a Markdown table (docs/benchmarks.md, "Music video").
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { cpuSeconds } from '../cpu-time.js';
import { markdownTable } from '../doc-block.js';
import { benchCli, UsageError } from '../harness.js';
import {
  ENCODER_SETTINGS,
  MUSIC_VIDEO_ASPECT_RATIOS,
  MUSIC_VIDEO_STYLES,
  measureAudioSeconds,
  renderMusicVideo,
  type MusicVideoAspectRatio,
  type MusicVideoStyle,
} from '../../src/kinds/music-video/pipeline/index.js';

const PRESETS = ['ultrafast', 'superfast', 'veryfast', 'faster', 'fast', 'medium'];

const cli = benchCli({
  name: 'music-video',
  notes:
    'Prints a Markdown table (docs/benchmarks.md, "Music video"). CPU ratio: audio seconds / (CPU seconds / --cores).',
  options: {
    seconds: { type: 'string', arg: 'S', help: 'length of the generated song, 1 to 480', default: '30' },
    styles: { type: 'string', arg: 'LIST', help: 'styles to render', default: MUSIC_VIDEO_STYLES.join(',') },
    'aspect-ratio': { type: 'string', arg: 'R', help: MUSIC_VIDEO_ASPECT_RATIOS.join(', '), default: '16:9' },
    cores: { type: 'string', arg: 'N', help: 'cores the CPU ratio is for', default: String(os.availableParallelism()) },
    presets: {
      type: 'string',
      arg: 'LIST',
      help: `x264 presets to compare (${PRESETS.join(', ')}; default: each style's own, ENCODER_SETTINGS)`,
    },
  },
});

function options(): {
  seconds: number;
  styles: MusicVideoStyle[];
  aspect: MusicVideoAspectRatio;
  cores: number;
  presets: (string | undefined)[];
} {
  const values = cli.values;
  const seconds = Number(values.seconds);
  const cores = Number(values.cores);
  const styles = values.styles.split(',') as MusicVideoStyle[];
  const aspect = values['aspect-ratio'] as MusicVideoAspectRatio;
  if (!(seconds > 0 && seconds <= 480))
    throw new UsageError(`--seconds must be a number of seconds from 1 to 480, not ${values.seconds}`);
  if (!(Number.isInteger(cores) && cores > 0))
    throw new UsageError(`--cores must be a positive whole number, not ${values.cores}`);
  if (!styles.every((s) => MUSIC_VIDEO_STYLES.includes(s)))
    throw new UsageError(`--styles takes ${MUSIC_VIDEO_STYLES.join(', ')}, not ${values.styles}`);
  if (!MUSIC_VIDEO_ASPECT_RATIOS.includes(aspect))
    throw new UsageError(`--aspect-ratio takes ${MUSIC_VIDEO_ASPECT_RATIOS.join(', ')}, not ${aspect}`);
  const presets = values.presets === undefined ? [undefined] : values.presets.split(',');
  if (!presets.every((p) => p === undefined || PRESETS.includes(p)))
    throw new UsageError(`--presets takes ${PRESETS.join(', ')}, not ${values.presets}`);
  return { seconds, styles, aspect, cores, presets };
}

const run = promisify(execFile);

/** A song-like MP3: two voices stepping through notes, swelling, over a bass line; and a cover. */
async function makeInputs(dir: string, seconds: number): Promise<{ audio: string; cover: string }> {
  const audio = path.join(dir, 'song.mp3');
  const cover = path.join(dir, 'cover.jpg');
  const voices =
    '0.35*sin(2*PI*(220+55*floor(mod(2*t,8)))*t)*(0.6+0.4*sin(2*PI*0.5*t))+0.15*sin(2*PI*55*t)|' +
    '0.35*sin(2*PI*(330+44*floor(mod(3*t,6)))*t)*(0.6+0.4*sin(2*PI*0.3*t))+0.15*sin(2*PI*55*t)';
  await run('ffmpeg', [
    '-hide_banner',
    '-v',
    'error',
    '-y',
    '-f',
    'lavfi',
    '-i',
    `aevalsrc='${voices}':s=44100:d=${seconds}`,
    '-c:a',
    'libmp3lame',
    '-b:a',
    '192k',
    audio,
  ]);
  await run('ffmpeg', [
    '-hide_banner',
    '-v',
    'error',
    '-y',
    '-f',
    'lavfi',
    '-i',
    'testsrc2=s=1024x1024',
    '-frames:v',
    '1',
    cover,
  ]);
  return { audio, cover };
}

interface RowInput {
  audio: string;
  cover: string;
  seconds: number;
  style: MusicVideoStyle;
  preset: string | undefined;
  aspect: MusicVideoAspectRatio;
  cores: number;
  work: string;
}

/** One render, measured: its table row. */
async function renderRow(r: RowInput): Promise<string[]> {
  const output = path.join(r.work, `${r.style}.mp4`);
  const cpuBefore = cpuSeconds();
  const start = performance.now();
  await renderMusicVideo({
    audio: { path: r.audio, container: 'mp3', sampleRate: 44_100 },
    imagePath: r.cover,
    durationSeconds: r.seconds,
    style: r.style,
    aspectRatio: r.aspect,
    title: 'Benchmark Song',
    workDir: r.work,
    outputPath: output,
    ...(r.preset === undefined ? {} : { encoder: { preset: r.preset } }),
  });
  const wall = (performance.now() - start) / 1000;
  const cpu = cpuSeconds() - cpuBefore;
  const bytes = (await stat(output)).size;
  const e = { ...ENCODER_SETTINGS[r.style], ...(r.preset === undefined ? {} : { preset: r.preset }) };
  const encoder = `x264 ${e.preset}${e.tune === undefined ? '' : ` tune ${e.tune}`} crf ${e.crf} g ${e.gop}`;
  return [
    r.style,
    encoder,
    wall.toFixed(2),
    (r.seconds / wall).toFixed(2),
    cpu.toFixed(2),
    (r.seconds / (cpu / r.cores)).toFixed(2),
    (bytes / 1e6).toFixed(1),
    ((bytes * 8) / r.seconds / 1e6).toFixed(2),
  ];
}

async function main(): Promise<void> {
  const opts = options();
  const work = await mkdtemp(path.join(os.tmpdir(), 'bench-music-video-'));
  try {
    const { audio, cover } = await makeInputs(work, opts.seconds);
    const decodeStart = performance.now();
    const seconds = await measureAudioSeconds({ path: audio, container: 'mp3', sampleRate: 44_100 });
    const decodeWall = (performance.now() - decodeStart) / 1000;
    console.log(
      `Machine: ${os.cpus()[0]?.model ?? 'unknown CPU'}, ${os.availableParallelism()} cores, load average ${os
        .loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}; ffmpeg: ${(await run('ffmpeg', ['-version'])).stdout.split('\n')[0]}`,
    );
    console.log(
      `Audio: ${seconds.toFixed(3)} s MP3 (decoded and counted in ${decodeWall.toFixed(2)} s); cover 1024x1024 JPEG; aspect ratio ${opts.aspect}; CPU ratio on ${opts.cores} cores`,
    );
    const header = ['style', 'encoder', 'wall s', 'ratio to real time', 'CPU s', 'CPU ratio', 'MB', 'Mbit/s'];
    const rows: string[][] = [];
    for (const style of opts.styles) {
      for (const preset of opts.presets)
        rows.push(
          await renderRow({ audio, cover, seconds, style, preset, aspect: opts.aspect, cores: opts.cores, work }),
        );
    }
    console.log(`\n${markdownTable(header, rows)}`);
    await cli.done({ tables: [{ header, rows }] });
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

await main();
