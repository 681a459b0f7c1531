/**
 * The cost model against the real pipelines on this machine: each job is quoted (the estimate on
 * the configured hardware class, MEDIA_WORKER_HARDWARE_CLASS / execution providers), then run with
 * executeJob as `media-worker run` runs it, and the wall time is printed beside the estimate.
 * Every network is run once before timing (session opening excluded, as the estimate's setup
 * assumes sessions already open in a long-running worker). Inputs: a real photo, and clips made
 * from it with ffmpeg (a pan across the photo, so frames differ as a video's do).
 *
 * Two times per run: the wall time, and the CPU time of this process and its ffmpeg children
 * (/proc/self/stat: utime + stime + cutime + cstime) divided by the cores. On a shared machine the
 * wall time grows with the neighbours' load; the CPU time is the work itself, so CPU / cores is
 * what the run would take with the cores to itself (what the estimate is for).
 *
 *   media-worker bench cost-model --help
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { loadConfig } from '../../src/config.js';
import { createEngine, executeJob, quoteOnly } from '../../src/app/index.js';
import { parseJob, type Job } from '../../src/jobs/index.js';
import { DEFAULT_SAMPLE_IMAGE } from '../../src/paths.js';
import { cpuSeconds } from '../cpu-time.js';
import { describeMachine, discardResult, intOption, machineInfo, median, writeResults } from '../common.js';
import { TABLES } from '../blocks.js';
import { benchCli } from '../harness.js';
import { docsTarget, markdownTable, writeDocsBlock } from '../doc-block.js';

const cli = benchCli({
  name: 'cost-model',
  options: {
    only: { type: 'string', arg: 'image,video', help: 'the kinds of job run', default: 'image,video' },
    results: { type: 'string', arg: 'FILE', help: 'also write the rows to FILE' },
  },
  common: { repeat: { default: '1', help: 'runs of each job (medians are reported)' } },
});
const values = cli.values;
const target = await docsTarget('cost-model', values);
const reps = intOption('repeat', values.repeat, 1) ?? 1;
const only = values.only.split(',');

interface Case {
  name: string;
  kind: 'image' | 'video';
  job: (dir: string) => Promise<Job>;
}

function ffmpeg(args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-nostdin', '-y', ...args], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve() : reject(new Error(`ffmpeg exited ${code}: ${err.slice(-400)}`)),
    );
  });
}

/** A pan across the photo: `seconds` at `fps`, `width`x`height`, H.264. */
async function clip(dir: string, width: number, height: number, fps: number, seconds: number): Promise<string> {
  const file = path.join(dir, `pan-${width}x${height}-${fps}-${seconds}.mp4`);
  const side = Math.ceil(Math.max(width, height) * 1.5);
  const frames = fps * seconds;
  const step = Math.max(1, Math.floor((side - Math.max(width, height)) / frames));
  await ffmpeg([
    '-loop',
    '1',
    '-i',
    DEFAULT_SAMPLE_IMAGE,
    '-vf',
    `scale=${side}:${side},crop=${width}:${height}:x='n*${step}':y='n*${step}/2',format=yuv420p`,
    '-r',
    String(fps),
    '-frames:v',
    String(frames),
    '-c:v',
    'libx264',
    '-preset',
    'veryfast',
    '-crf',
    '18',
    file,
  ]);
  return file;
}

const CASES: Case[] = [
  {
    name: 'image 512x512 x2',
    kind: 'image',
    job: async () =>
      parseJob({ model: 'vendor-image-upscale', input: { image_url: DEFAULT_SAMPLE_IMAGE, upscale_factor: '2' } }),
  },
  {
    name: 'image 512x512 x4',
    kind: 'image',
    job: async () =>
      parseJob({ model: 'vendor-image-upscale', input: { image_url: DEFAULT_SAMPLE_IMAGE, upscale_factor: '4' } }),
  },
  {
    name: 'video 320x180 25 fps 2 s x2',
    kind: 'video',
    job: async (dir) =>
      parseJob({
        model: 'vendor-video-upscale',
        input: { video_url: await clip(dir, 320, 180, 25, 2), upscale_factor: '2' },
      }),
  },
  {
    name: 'video 320x180 25 fps 2 s x4',
    kind: 'video',
    job: async (dir) =>
      parseJob({
        model: 'vendor-video-upscale',
        input: { video_url: await clip(dir, 320, 180, 25, 2), upscale_factor: '4' },
      }),
  },
  {
    name: 'video 640x360 50 fps 1 s x2',
    kind: 'video',
    job: async (dir) =>
      parseJob({
        model: 'vendor-video-upscale',
        input: { video_url: await clip(dir, 640, 360, 50, 1), upscale_factor: '2' },
      }),
  },
  {
    name: 'video 640x360 30 fps 1 s x1',
    kind: 'video',
    job: async (dir) =>
      parseJob({
        model: 'vendor-video-upscale',
        input: { video_url: await clip(dir, 640, 360, 30, 1), upscale_factor: '1' },
      }),
  },
];

interface Row {
  name: string;
  hardwareClass: string;
  estimatedFrames: number;
  estimatedSeconds: number;
  actualSeconds: number[];
  /** CPU seconds / cores of each run. */
  cpuPerCoreSeconds: number[];
  ratio: number;
  cpuRatio: number;
  loadAverage: number;
}

const config = loadConfig();
const logger = pino({ level: 'silent' });
const engine = createEngine(config, logger);
const dir = await mkdtemp(path.join(os.tmpdir(), 'bench-cost-'));
const rows: Row[] = [];
const machine = describeMachine(machineInfo());
console.log(machine);
try {
  for (const c of CASES.filter((x) => only.includes(x.kind))) {
    const job = await c.job(dir);
    const quote = await quoteOnly(job, config, {
      taskId: 'bench',
      allowLocalPaths: true,
      timeLimitsMs: engine.timeLimitsMs,
    });
    if (!('estimated_seconds' in quote) || quote.estimated_seconds === undefined)
      throw new Error(`no estimate for ${c.name}`);
    let n = 0;
    const cores = engine.config.threads > 0 ? engine.config.threads : os.availableParallelism();
    const cpuRuns: number[] = [];
    const run = async (): Promise<number> => {
      const start = performance.now();
      const cpuStart = cpuSeconds();
      await executeJob(job, engine, {
        taskId: `bench-${(n += 1)}`,
        logger,
        allowLocalPaths: true,
        store: discardResult,
      });
      cpuRuns.push((cpuSeconds() - cpuStart) / cores);
      return (performance.now() - start) / 1000;
    };
    await run(); // warm-up: opens the network's session
    cpuRuns.length = 0;
    const actual: number[] = [];
    for (let i = 0; i < reps; i += 1) actual.push(await run());
    const row: Row = {
      name: c.name,
      hardwareClass: quote.hardware_class ?? '?',
      estimatedFrames: quote.estimated_frames ?? 0,
      estimatedSeconds: quote.estimated_seconds,
      actualSeconds: actual,
      cpuPerCoreSeconds: [...cpuRuns],
      ratio: median(actual) / quote.estimated_seconds,
      cpuRatio: median(cpuRuns) / quote.estimated_seconds,
      loadAverage: os.loadavg()[0] ?? Number.NaN,
    };
    rows.push(row);
    console.log(
      `${row.name.padEnd(30)} ${row.hardwareClass} frames ${String(row.estimatedFrames).padStart(4)}  estimated ${row.estimatedSeconds.toFixed(1).padStart(6)} s  ` +
        `wall ${actual
          .map((a) => a.toFixed(1))
          .join(', ')
          .padStart(6)} s (${row.ratio.toFixed(2)} x)  ` +
        `CPU/cores ${row.cpuPerCoreSeconds.map((a) => a.toFixed(1)).join(', ')} s (${row.cpuRatio.toFixed(2)} x)  load ${row.loadAverage.toFixed(1)}`,
    );
  }
} finally {
  await engine.release();
  await rm(dir, { recursive: true, force: true });
}
if (values.results !== undefined) await writeResults(values.results, { machine: machineInfo(), rows });
const table = rows.map((r) => [
  r.name,
  r.hardwareClass,
  String(r.estimatedFrames),
  r.estimatedSeconds.toFixed(1),
  median(r.actualSeconds).toFixed(1),
  r.ratio.toFixed(2),
  median(r.cpuPerCoreSeconds).toFixed(1),
  r.cpuRatio.toFixed(2),
  r.loadAverage.toFixed(1),
]);
console.log(`\n${markdownTable(TABLES.costModel.header, table)}`);
const caption = `The estimate against real runs through executeJob after a warm-up run, medians of ${reps}:`;
await writeDocsBlock(target, 'cost-model', [{ caption, header: TABLES.costModel.header, rows: table }], machine);
await cli.done({ tables: [{ caption, header: TABLES.costModel.header, rows: table }] });
