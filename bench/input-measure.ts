/**
 * The bill is what runs (docs/contract.md): what measuring inputs from their streams costs, and how
 * much network work damaged inputs waste.
 *
 * (a) Quote cost: a 60 s 1080p H.264 + AAC clip made by ffmpeg, read three ways, median of --reps:
 *     ffprobe's headers only (the quote before), the quote's probe with every packet listed (now),
 *     and the decode check the pipelines run before the network (not part of the quote).
 * (b) Wasted work: a corpus of damaged inputs made from a real ffmpeg-made clip (truncated,
 *     garbage bytes, bit flips, header lies, audio shorter or longer than the video), each quoted
 *     (app/run-job.ts's quoteOnly, the worker's own policy) and run through the video upscale with a
 *     network that counts its tiles. Wasted work: the share of the quoted job's tiles run before a
 *     failure that is refunded. A refusal at the quote, or a delivered job, wastes nothing.
 *
 *   node dist/bench/input-measure.js [--reps 3] [--seconds 60] [--only a,b] [--write-docs]
 */
import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/config.js';
import { quoteOnly } from '../src/app/index.js';
import { isJobError } from '../src/errors.js';
import { SessionCache, createSrModelLoader, parseSrModelChoices } from '../src/inference/index.js';
import { parseJob, type VideoQuote } from '../src/jobs/index.js';
import { allowedFrames, ffprobeArgs, probeMedia, resolveFfmpeg, resolveFfprobe, runProcess, type MediaInfo } from '../src/media/index.js';
import { upscaleVideoFile } from '../src/upscale/index.js';
import { checkVideoDecodes } from '../src/video/index.js';
import { seededRandom } from '../src/seeded-random.js';
import { TABLES } from './blocks.js';
import { describeMachine, machineInfo } from './common.js';
import { DOCS_OPTIONS, docsTarget, markdownTable, writeDocsBlock, type DocTable } from './doc-block.js';
import { countingLoader } from './network-work.js';
import { matroskaHeadersSay, mp4HeadersSay } from './lying-headers.js';

const { values } = parseArgs({
  options: {
    reps: { type: 'string', default: '3' },
    seconds: { type: 'string', default: '60' },
    only: { type: 'string', default: 'a,b' },
    ...DOCS_OPTIONS,
  },
});
const reps = Number(values.reps);
const longSeconds = Number(values.seconds);
if (!(Number.isInteger(reps) && reps >= 1)) throw new RangeError(`Expected --reps to be a positive integer but received ${JSON.stringify(values.reps)}`);
if (!(longSeconds > 0)) throw new RangeError(`Expected --seconds to be a positive number but received ${JSON.stringify(values.seconds)}`);
const only = new Set((values.only ?? '').split(','));
const target = await docsTarget('input-measure', values);
const machine = describeMachine(machineInfo());
const ffmpeg = resolveFfmpeg({ ffmpegPath: process.env['FFMPEG_PATH'] ?? '' });
const ffprobe = resolveFfprobe();

async function run(args: string[]): Promise<void> {
  await runProcess(ffmpeg, ['-hide_banner', '-v', 'error', '-y', ...args], { timeoutMs: 600_000 });
}

async function median(times: number, task: () => Promise<unknown>): Promise<number> {
  const ms: number[] = [];
  for (let i = 0; i < times; i += 1) {
    const started = performance.now();
    await task();
    ms.push(performance.now() - started);
  }
  ms.sort((a, b) => a - b);
  return ms[Math.floor(ms.length / 2)] as number;
}

const work = await mkdtemp(path.join(os.tmpdir(), 'bench-input-measure-'));
const tables: DocTable[] = [];
try {
  if (only.has('a')) {
    const clip = path.join(work, 'long-1080p.mp4');
    console.error(`(a) making a ${longSeconds} s 1080p clip...`);
    await run([
      '-f', 'lavfi', '-i', 'testsrc2=size=1920x1080:rate=30', '-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=48000',
      '-t', String(longSeconds), '-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-c:a', 'aac', clip,
    ]);
    const info = await probeMedia(clip);
    const frames = info.video?.frameCount ?? 0;
    const headers = await median(reps, () => runProcess(ffprobe, ffprobeArgs(clip, 'mp4', true), { maxStdoutBytes: 1 << 20 }));
    const measured = await median(reps, () => probeMedia(clip));
    const decoded = await median(reps, () => checkVideoDecodes({ ffmpeg, path: clip, container: 'mp4', videoIndex: 0, maxFrames: allowedFrames(frames), strict: true }));
    const rows = [
      ['headers only (ffprobe -show_format -show_streams, the quote before)', headers.toFixed(0), '1.00'],
      ['streams measured (the same plus every packet, the quote now)', measured.toFixed(0), (measured / headers).toFixed(2)],
      ['decode check (whole video decoded, before the network; not in the quote)', decoded.toFixed(0), (decoded / headers).toFixed(2)],
    ];
    console.log(`\n(a) ${longSeconds} s 1920x1080 30 fps H.264 + AAC, ${frames} frames, median of ${reps}:`);
    console.log(markdownTable(TABLES.inputMeasureCost.header, rows));
    tables.push({
      caption: `Quote cost: a ${longSeconds} s 1920x1080 30 fps H.264 + AAC clip (${frames} frames), median of ${reps} runs:`,
      header: TABLES.inputMeasureCost.header,
      rows,
    });
  }

  if (only.has('b')) {
    const rows = await wastedWork();
    const wasted = rows.map((r) => Number(r[r.length - 1]));
    const mean = wasted.reduce((a, b) => a + b, 0) / wasted.length;
    const worst = Math.max(...wasted);
    rows.push(['**mean**', '', '', '', '', mean.toFixed(1)], ['**worst**', '', '', '', '', worst.toFixed(1)]);
    console.log(`\n(b) wasted work per damaged input (goal: mean <= 5 %, worst <= 10 %):`);
    console.log(markdownTable(TABLES.damagedInputs.header, rows));
    tables.push({
      caption: 'Wasted work: damaged copies of a 3 s 160x90 25 fps H.264 + AAC clip, video upscale x2 (esrgan-slim-x2); goal mean <= 5 %, worst <= 10 %:',
      header: TABLES.damagedInputs.header,
      rows,
    });
  }
  await writeDocsBlock(target, 'input-measure', tables, machine);
} finally {
  await rm(work, { recursive: true, force: true });
}

/** A copy of `source` with `damage` applied to its bytes. */
async function damaged(source: string, name: string, damage: (bytes: Buffer) => Buffer): Promise<string> {
  const file = path.join(work, name);
  await writeFile(file, damage(Buffer.from(await readFile(source))));
  return file;
}

function garbage(share: number, count = 300): (bytes: Buffer) => Buffer {
  return (bytes) => {
    const random = seededRandom(Math.round(share * 1000));
    const at = Math.floor(bytes.length * share);
    for (let i = at; i < Math.min(bytes.length, at + count); i += 1) bytes[i] = Math.floor(random() * 256);
    return bytes;
  };
}

/** `flips` single-bit flips spread over the media data (after the first 20 %: the index sits at the front). */
function bitFlips(flips: number): (bytes: Buffer) => Buffer {
  return (bytes) => {
    const random = seededRandom(flips);
    for (let i = 0; i < flips; i += 1) {
      const at = Math.floor(bytes.length * (0.2 + 0.8 * random()));
      bytes[at] = (bytes[at] as number) ^ (1 << Math.floor(random() * 8));
    }
    return bytes;
  };
}

async function wastedWork(): Promise<string[][]> {
  const clean = path.join(work, 'clean.mp4');
  const base = ['-f', 'lavfi', '-i', 'testsrc2=size=160x90:rate=25', '-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=44100'];
  const x264 = ['-c:v', 'libx264', '-preset', 'veryfast', '-pix_fmt', 'yuv420p', '-c:a', 'aac'];
  // The index at the front, as phones and web encoders write it: damage hits the frames, not the index.
  await run([...base, '-t', '3', ...x264, '-movflags', '+faststart', clean]);
  const mkv = path.join(work, 'clean.mkv');
  await run([...base, '-t', '3', ...x264, mkv]);
  const lyingMkv = path.join(work, 'lie.mkv');
  await copyFile(mkv, lyingMkv);
  await matroskaHeadersSay(lyingMkv, 1);
  const lyingMp4 = path.join(work, 'lie.mp4');
  await copyFile(clean, lyingMp4);
  await mp4HeadersSay(lyingMp4, 1);
  const audioShort = path.join(work, 'audio-short.mp4');
  await run(['-f', 'lavfi', '-i', 'testsrc2=size=160x90:rate=25', '-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=44100:duration=1', '-t', '3', ...x264, '-movflags', '+faststart', audioShort]);
  const audioLong = path.join(work, 'audio-long.mp4');
  await run(['-f', 'lavfi', '-i', 'testsrc2=size=160x90:rate=25:duration=3', '-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=44100:duration=5', ...x264, '-movflags', '+faststart', audioLong]);

  const cases: [string, string][] = [
    ['clean', clean],
    ...(await Promise.all(
      [0.1, 0.5, 0.9].map(async (share): Promise<[string, string]> => [
        `truncated at ${share * 100} %`,
        await damaged(clean, `truncated-${share}.mp4`, (b) => b.subarray(0, Math.floor(b.length * share))),
      ]),
    )),
    ...(await Promise.all(
      [0.1, 0.5, 0.9, 0.93, 0.99].map(async (share): Promise<[string, string]> => [`300 garbage bytes at ${share * 100} %`, await damaged(clean, `garbage-${share}.mp4`, garbage(share))]),
    )),
    ...(await Promise.all([1, 3, 20].map(async (flips): Promise<[string, string]> => [`${flips} bit flips`, await damaged(clean, `flips-${flips}.mp4`, bitFlips(flips))]))),
    ['MKV Segment Duration says 1 s', lyingMkv],
    ['MP4 mvhd/tkhd/mdhd say 1 s', lyingMp4],
    ['audio 1 s of a 3 s video', audioShort],
    ['audio 5 s past a 3 s video', audioLong],
  ];

  const config = loadConfig({});
  const sessions = new SessionCache({ executionProviders: ['cpu'] });
  const counting = countingLoader(createSrModelLoader({ sessions, choices: parseSrModelChoices('video=esrgan-slim-x2') }));
  const rows: string[][] = [];
  let tilesPerFrame = 0;
  try {
    for (const [name, file] of cases) {
      let quote: VideoQuote;
      try {
        quote = (await quoteOnly(parseJob({ model: 'vendor-video-upscale', input: { video_url: file, upscale_factor: '2' } }), config, {
          taskId: 'bench-input-measure',
          allowLocalPaths: true,
        })) as VideoQuote;
      } catch (error) {
        if (!isJobError(error)) throw error;
        rows.push([name, `refused ${error.code}`, '-', '-', '0', '0.0']);
        console.error(`${name}: refused at the quote, ${error.code}: ${error.message}`);
        continue;
      }
      const info: MediaInfo = await probeMedia(file);
      const frames = quote.estimated_frames ?? 0;
      counting.reset();
      const output = path.join(work, `out-${rows.length}.mp4`);
      const quoted = `${quote.input.billed_seconds} s, ${frames} frames`;
      try {
        const outcome = await upscaleVideoFile({ inputPath: file, outputPath: output, factor: '2', info, modelName: 'esrgan-slim-x2' }, counting.load);
        if (name === 'clean') tilesPerFrame = counting.tiles() / outcome.frames;
        rows.push([name, quoted, `delivered, ${outcome.frames} frames`, '-', String(counting.tiles()), '0.0']);
        console.error(`${name}: delivered ${outcome.frames} frames (${counting.tiles()} tiles)`);
      } catch (error) {
        if (!isJobError(error)) throw error;
        const tiles = counting.tiles();
        const share = tilesPerFrame > 0 && frames > 0 ? (100 * tiles) / (frames * tilesPerFrame) : 0;
        rows.push([name, quoted, `refunded`, error.code, String(tiles), share.toFixed(1)]);
        console.error(`${name}: ${error.code} after ${tiles} tiles: ${error.message}`);
      }
    }
  } finally {
    await sessions.release();
  }
  return rows;
}
