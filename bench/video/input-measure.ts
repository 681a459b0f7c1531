/**
 * The bill is what runs (docs/contract.md): what measuring inputs from their streams costs, and how
 * much network work damaged inputs waste.
 *
 * (a) Quote cost: a 60 s 1080p H.264 + AAC clip made by ffmpeg, read three ways, median of --repeat:
 *     ffprobe's headers only (the quote before), the quote's probe with every packet listed (now),
 *     and the decode check the pipelines run before the network (not part of the quote).
 * (b) Wasted work: a corpus of damaged inputs made from a real ffmpeg-made clip (truncated,
 *     garbage bytes, bit flips, header lies, audio shorter or longer than the video), each quoted
 *     (app/run-job.ts's quoteOnly, the worker's own policy) and run with a network that counts its
 *     work: video upscale (a testsrc2 clip; tiles) and lip-sync (a face clip, which the lip-sync
 *     pipeline needs; faces given to the generated wav2lip-test network). Wasted work: the share of
 *     the quoted job's network work done before a failure that is refunded. A refusal at the
 *     quote, or a delivered job, wastes nothing.
 *
 *   media-worker bench input-measure --help
 */
import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/config.js';
import { quoteOnly } from '../../src/app/index.js';
import { isJobError } from '../../src/errors.js';
import { SessionCache, createSrModelLoader, parseSrModelChoices } from '../../src/inference/index.js';
import {
  isExplainedFailure,
  parseJob,
  pipelineFailure,
  type JobKind,
  type LipsyncQuote,
  type VideoQuote,
} from '../../src/jobs/index.js';
import {
  allowedFrames,
  ffprobeArgs,
  probeMedia,
  resolveFfmpeg,
  resolveFfprobe,
  runProcess,
  type MediaInfo,
} from '../../src/media/index.js';
import { upscaleVideoFile } from '../../src/kinds/video-upscale/pipeline/index.js';
import {
  lipsyncFile,
  loadLipsyncModel,
  parseLipsyncModelMapping,
  type LipsyncModel,
} from '../../src/kinds/lipsync/pipeline/index.js';
import { DEFAULT_SAMPLE_IMAGE } from '../../src/paths.js';
import { checkVideoDecodes } from '../../src/video/index.js';
import { seededRandom } from '../../src/seeded-random.js';
import { TABLES } from '../blocks.js';
import { describeMachine, machineInfo } from '../common.js';
import { benchCli } from '../harness.js';
import { docsTarget, markdownTable, writeDocsBlock, type DocTable } from '../doc-block.js';
import { countingLoader } from './network-work.js';
import { matroskaHeadersSay, mp4HeadersSay } from './lying-headers.js';

const cli = benchCli({
  name: 'input-measure',
  options: {
    seconds: { type: 'string', arg: 'S', help: '(a): length of the 1080p clip', default: '60' },
    only: { type: 'string', arg: 'a,b', help: '(a) quote cost, (b) wasted work on damaged inputs', default: 'a,b' },
  },
  common: { repeat: { default: '3', help: '(a): runs of each read (medians are reported)' } },
});
const values = cli.values;
const reps = Number(values.repeat);
const longSeconds = Number(values.seconds);
if (!(Number.isInteger(reps) && reps >= 1))
  throw new RangeError(`Expected --repeat to be a positive integer but received ${JSON.stringify(values.repeat)}`);
if (!(longSeconds > 0))
  throw new RangeError(`Expected --seconds to be a positive number but received ${JSON.stringify(values.seconds)}`);
const only = new Set((values.only ?? '').split(','));
const target = await docsTarget('input-measure', values);
const machine = describeMachine(machineInfo());
const ffmpeg = resolveFfmpeg({ ffmpegPath: process.env['FFMPEG_PATH'] ?? '' });
const ffprobe = resolveFfprobe();
const config = loadConfig({});
const quoteOptions = { taskId: 'bench-input-measure', allowLocalPaths: true };

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
      '-f',
      'lavfi',
      '-i',
      'testsrc2=size=1920x1080:rate=30',
      '-f',
      'lavfi',
      '-i',
      'sine=frequency=440:sample_rate=48000',
      '-t',
      String(longSeconds),
      '-c:v',
      'libx264',
      '-preset',
      'ultrafast',
      '-pix_fmt',
      'yuv420p',
      '-c:a',
      'aac',
      clip,
    ]);
    const info = await probeMedia(clip);
    const frames = info.video?.frameCount ?? 0;
    const headers = await median(reps, () =>
      runProcess(ffprobe, ffprobeArgs(clip, 'mp4', true), { maxStdoutBytes: 1 << 20 }),
    );
    const measured = await median(reps, () => probeMedia(clip));
    const decoded = await median(reps, () =>
      checkVideoDecodes({
        ffmpeg,
        path: clip,
        container: 'mp4',
        videoIndex: 0,
        maxFrames: allowedFrames(frames),
        strict: true,
      }),
    );
    const rows = [
      ['headers only (ffprobe -show_format -show_streams, the quote before)', headers.toFixed(0), '1.00'],
      [
        'streams measured (the same plus every packet, the quote now)',
        measured.toFixed(0),
        (measured / headers).toFixed(2),
      ],
      [
        'decode check (whole video decoded, before the network; not in the quote)',
        decoded.toFixed(0),
        (decoded / headers).toFixed(2),
      ],
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
    console.error('(b) making the corpora...');
    const upscaleCases = await corpus(
      'upscale',
      {
        input: (seconds) => [
          '-f',
          'lavfi',
          '-i',
          `testsrc2=size=160x90:rate=25${seconds === undefined ? '' : `:duration=${seconds}`}`,
        ],
        filter: [],
      },
      {
        name: 'MKV',
        ext: 'mkv',
        codecs: ['-c:v', 'libx264', '-preset', 'veryfast', '-pix_fmt', 'yuv420p', '-c:a', 'aac'],
      },
    );
    // The astronaut's face (the lip-sync tests' window on the photo), drifting a few pixels a frame.
    const face = {
      input: (seconds?: number) => [
        ...(seconds === undefined ? [] : ['-t', String(seconds)]),
        '-loop',
        '1',
        '-framerate',
        '25',
        '-i',
        DEFAULT_SAMPLE_IMAGE,
      ],
      filter: ['-vf', 'crop=240:240:120+6*sin(2*PI*t):30+4*cos(2*PI*t/1.2),scale=160:160'],
    };
    const lipsyncCases = await corpus('lipsync', face, {
      name: 'WebM',
      ext: 'webm',
      codecs: ['-c:v', 'libvpx', '-deadline', 'realtime', '-cpu-used', '8', '-c:a', 'libopus'],
    });
    const speech = path.join(work, 'speech.wav');
    await run([
      '-stream_loop',
      '-1',
      '-i',
      path.resolve('test/kinds/lipsync/pipeline/fixtures/speech-16k.wav'),
      '-t',
      '3',
      speech,
    ]);

    const srSessions = new SessionCache({ executionProviders: ['cpu'] });
    const lipsyncSessions = new SessionCache({ thread: false, executionProviders: ['cpu'] });
    try {
      const parts = [
        {
          rows: await wastedWork(upscaleCases, await upscalePipeline(srSessions)),
          caption:
            'Wasted work: damaged copies of a 3 s 160x90 25 fps H.264 + AAC clip, video upscale x2 (esrgan-slim-x2); goal mean <= 5 %, worst <= 10 %:',
          header: TABLES.damagedInputs.header,
        },
        {
          rows: await wastedWork(lipsyncCases, await lipsyncPipeline(lipsyncSessions, speech)),
          caption:
            'Wasted work, lip-sync: damaged copies of a 3 s 160x160 25 fps H.264 + AAC face clip, vendor-lipsync-2 cut_off to 3 s of speech (the generated wav2lip-test network); goal mean <= 5 %, worst <= 10 %:',
          header: TABLES.damagedLipsyncInputs.header,
        },
      ];
      for (const { rows, caption, header } of parts) {
        const summed = withSummary(rows);
        console.log(`\n(b) ${caption}`);
        console.log(markdownTable(header, summed));
        tables.push({ caption, header, rows: summed });
      }
    } finally {
      await Promise.all([srSessions.release(), lipsyncSessions.release()]);
    }
  }
  await writeDocsBlock(target, 'input-measure', tables, machine);
  await cli.done({ tables });
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

/**
 * A pipeline as the wasted-work part runs it: quoted as the worker quotes (app/run-job.ts's
 * quoteOnly, the worker's own policy), run on the same file with a network that counts its work.
 */
interface CountedPipeline {
  kind: JobKind;
  quote(file: string): Promise<{ billedSeconds: number; frames: number }>;
  /** Runs the job on `file` into `output`; the frames delivered. */
  run(file: string, output: string): Promise<number>;
  /** The network's work since the last reset: tiles for super-resolution, faces for lip-sync. */
  work(): number;
  reset(): void;
}

/** Mean and worst of the last column (wasted %), as two more rows. */
function withSummary(rows: string[][]): string[][] {
  const wasted = rows.map((r) => Number(r[r.length - 1]));
  const mean = wasted.reduce((a, b) => a + b, 0) / wasted.length;
  return [
    ...rows,
    ['**mean**', '', '', '', '', mean.toFixed(1)],
    ['**worst**', '', '', '', '', Math.max(...wasted).toFixed(1)],
  ];
}

/**
 * Each case quoted, then run: a refusal at the quote or a delivered job wastes nothing; a failure
 * after the quote (refunded) wastes the share of the quoted job's network work done before it,
 * a frame's work being what the clean case did per frame.
 */
async function wastedWork(
  cases: readonly (readonly [string, string])[],
  pipeline: CountedPipeline,
): Promise<string[][]> {
  const rows: string[][] = [];
  let workPerFrame = 0;
  for (const [name, file] of cases) {
    let quoted: { billedSeconds: number; frames: number };
    try {
      quoted = await pipeline.quote(file);
    } catch (error) {
      if (!isJobError(error)) throw error;
      rows.push([name, `refused ${error.code}`, '-', '-', '0', '0.0']);
      console.error(`${pipeline.kind} ${name}: refused at the quote, ${error.code}: ${error.message}`);
      continue;
    }
    const label = `${quoted.billedSeconds} s, ${quoted.frames} frames`;
    pipeline.reset();
    try {
      const frames = await pipeline.run(file, path.join(work, `out-${pipeline.kind}-${rows.length}.mp4`));
      if (name === 'clean') workPerFrame = pipeline.work() / frames;
      rows.push([name, label, `delivered, ${frames} frames`, '-', String(pipeline.work()), '0.0']);
      console.error(`${pipeline.kind} ${name}: delivered ${frames} frames (${pipeline.work()} network units)`);
    } catch (error) {
      // The worker's edge (app/run-job.ts): a processing failure takes the kind's code and is refunded.
      if (!isExplainedFailure(error)) throw error;
      const failure = pipelineFailure(error, pipeline.kind);
      const done = pipeline.work();
      const share = workPerFrame > 0 && quoted.frames > 0 ? (100 * done) / (quoted.frames * workPerFrame) : 0;
      rows.push([name, label, 'refunded', failure.code, String(done), share.toFixed(1)]);
      console.error(`${pipeline.kind} ${name}: ${failure.code} after ${done} network units: ${failure.message}`);
    }
  }
  return rows;
}

/**
 * Damaged copies of `clean` (an MP4 with its index in front, as phones and web encoders write it:
 * damage hits the frames, not the index): truncations, garbage bytes, bit flips.
 */
async function damagedCopies(clean: string, prefix: string): Promise<[string, string][]> {
  const copy = async (name: string, file: string, damage: (bytes: Buffer) => Buffer): Promise<[string, string]> => [
    name,
    await damaged(clean, `${prefix}-${file}.mp4`, damage),
  ];
  return Promise.all([
    ...[0.1, 0.5, 0.9].map((share) =>
      copy(`truncated at ${share * 100} %`, `truncated-${share}`, (b) => b.subarray(0, Math.floor(b.length * share))),
    ),
    ...[0.1, 0.5, 0.9, 0.93, 0.99].map((share) =>
      copy(`300 garbage bytes at ${share * 100} %`, `garbage-${share}`, garbage(share)),
    ),
    ...[1, 3, 20].map((flips) => copy(`${flips} bit flips`, `flips-${flips}`, bitFlips(flips))),
  ]);
}

/** How a corpus's clip is drawn: ffmpeg's picture input (ending after `seconds` when given) and the filter on it. */
interface Picture {
  input: (seconds?: number) => string[];
  filter: string[];
}

/**
 * A pipeline's corpus: a 3 s 25 fps clip with a 44.1 kHz tone, clean and damaged (damagedCopies);
 * the clip in `other` (MKV for video upscale, WebM for lip-sync) and in MP4 with headers claiming
 * 1 s; MP4s whose audio ends after 1 s, or runs on 2 s past the video.
 */
async function corpus(
  prefix: string,
  picture: Picture,
  other: { name: string; ext: string; codecs: string[] },
): Promise<[string, string][]> {
  const tone = (seconds?: number) => [
    '-f',
    'lavfi',
    '-i',
    `sine=frequency=440:sample_rate=44100${seconds === undefined ? '' : `:duration=${seconds}`}`,
  ];
  const x264 = [
    '-c:v',
    'libx264',
    '-preset',
    'veryfast',
    '-pix_fmt',
    'yuv420p',
    '-c:a',
    'aac',
    '-movflags',
    '+faststart',
  ];
  const at = (name: string) => path.join(work, `${prefix}-${name}`);
  await run([...picture.input(), ...tone(), '-t', '3', ...picture.filter, ...x264, at('clean.mp4')]);
  await run([...picture.input(), ...tone(), '-t', '3', ...picture.filter, ...other.codecs, at(`clean.${other.ext}`)]);
  await copyFile(at(`clean.${other.ext}`), at(`lie.${other.ext}`));
  await matroskaHeadersSay(at(`lie.${other.ext}`), 1);
  await copyFile(at('clean.mp4'), at('lie.mp4'));
  await mp4HeadersSay(at('lie.mp4'), 1);
  await run([...picture.input(), ...tone(1), '-t', '3', ...picture.filter, ...x264, at('audio-short.mp4')]);
  await run([...picture.input(3), ...tone(5), ...picture.filter, ...x264, at('audio-long.mp4')]);
  return [
    ['clean', at('clean.mp4')],
    ...(await damagedCopies(at('clean.mp4'), prefix)),
    [`${other.name} Segment Duration says 1 s`, at(`lie.${other.ext}`)],
    ['MP4 mvhd/tkhd/mdhd say 1 s', at('lie.mp4')],
    ['audio 1 s of a 3 s video', at('audio-short.mp4')],
    ['audio 5 s past a 3 s video', at('audio-long.mp4')],
  ];
}

/** Video upscale x2 (esrgan-slim-x2) of the testsrc2 corpus, its network counting tiles. */
async function upscalePipeline(sessions: SessionCache): Promise<CountedPipeline> {
  const counting = countingLoader(
    createSrModelLoader({ sessions, choices: parseSrModelChoices('video=esrgan-slim-x2') }),
  );
  return {
    kind: 'video',
    quote: async (video_url) => {
      const q = (await quoteOnly(
        parseJob({ model: 'vendor-video-upscale', input: { video_url, upscale_factor: '2' } }),
        config,
        quoteOptions,
      )) as VideoQuote;
      return { billedSeconds: q.input.billed_seconds, frames: q.estimated_frames ?? 0 };
    },
    run: async (file, output) => {
      const info: MediaInfo = await probeMedia(file);
      return (
        await upscaleVideoFile(
          { inputPath: file, outputPath: output, factor: '2', info, modelName: 'esrgan-slim-x2' },
          counting.load,
        )
      ).frames;
    },
    work: () => counting.tiles(),
    reset: () => counting.reset(),
  };
}

/**
 * Lip-sync (vendor-lipsync-2, cut_off) of the face corpus to 3 s of speech, on the generated
 * wav2lip-test network (the real weights cannot be had here; the work counted is the same), its
 * network counting the faces it is given.
 */
async function lipsyncPipeline(sessions: SessionCache, speech: string): Promise<CountedPipeline> {
  const network = await loadLipsyncModel('vendor-lipsync-2', {
    sessions,
    mapping: parseLipsyncModelMapping('wav2lip-test'),
  });
  let faces = 0;
  const counting: LipsyncModel = {
    name: network.name,
    manifest: network.manifest,
    testModel: network.testModel,
    batch: network.batch,
    run: (mel, input, count) => {
      faces += count;
      return network.run(mel, input, count);
    },
  };
  const audioInfo = await probeMedia(speech);
  return {
    kind: 'lipsync',
    quote: async (video_url) => {
      const q = (await quoteOnly(
        parseJob({ model: 'vendor-lipsync-2', input: { video_url, audio_url: speech } }),
        config,
        quoteOptions,
      )) as LipsyncQuote;
      return { billedSeconds: q.input.billed_seconds, frames: q.estimated_frames ?? 0 };
    },
    run: async (file, output) => {
      const request = {
        videoPath: file,
        videoInfo: await probeMedia(file),
        audioPath: speech,
        audioInfo,
        outputPath: output,
      };
      const job = { model: 'vendor-lipsync-2', syncMode: 'cut_off', activeSpeaker: false } as const;
      return (await lipsyncFile({ ...request, ...job }, { sessions, loadModel: async () => counting })).frames;
    },
    work: () => faces,
    reset: () => {
      faces = 0;
    },
  };
}
