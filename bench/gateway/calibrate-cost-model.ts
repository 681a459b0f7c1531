/**
 * Calibration of the cost model's CPU hardware class (src/jobs/hardware-classes.ts): what this
 * machine achieves, in the units the model multiplies by.
 *
 * - network: ONNX Runtime multiply-adds per second (the manifest's macsPerInputPixel x the input
 *   pixels the tiles really cover), for the slim and thick x4 networks on a real photo, one thread
 *   per core; fastest and median of --repeat after a warm-up run.
 * - x264 encode and decode: seconds per megapixel of frames, with real ffmpeg on a clip made from a
 *   real photo (a pan across it, so frames differ like a video's do). Encode is the time of
 *   "make the frames + encode" less "make the frames alone" (both piped as raw RGB, as the video
 *   pipeline feeds its encoder); decode is the decode of that encoded clip to raw RGB.
 *
 * Times are CPU seconds (this process, its threads and its ffmpeg children) divided by the cores,
 * besides wall time: on a shared machine the wall time grows with the neighbours' load, the CPU
 * time much less. Rates are from the fastest of --repeat.
 *
 *   media-worker bench calibrate-cost-model --help
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import {
  getManifest,
  ensureModelFile,
  type SuperResolutionManifest,
  SessionCache,
  defaultFeather,
  upscaleRgb,
  planTiles,
} from '../../src/inference/index.js';
import { DEFAULT_SAMPLE_IMAGE } from '../../src/paths.js';
import { DEFAULT_ENCODER } from '../../src/video/index.js';
import { cpuSeconds } from '../cpu-time.js';
import { benchCli } from '../harness.js';
import { describeMachine, intOption, loadRgb, machineInfo, median, timed, writeResults } from '../common.js';

const cli = benchCli({
  name: 'calibrate-cost-model',
  options: {
    only: { type: 'string', arg: 'network,codec', help: 'what is measured', default: 'network,codec' },
    results: { type: 'string', arg: 'FILE', help: 'also write the figures to FILE' },
  },
  common: { repeat: { default: '3' } },
});
const values = cli.values;
const reps = intOption('repeat', values.repeat, 1) ?? 3;
const only = values.only.split(',');

interface NetworkRow {
  model: string;
  side: number;
  tilePixels: number;
  macs: number;
  fastestMs: number;
  medianMs: number;
  gmacsPerSecond: number;
  /** CPU seconds / cores, fastest run. */
  cpuPerCoreMs: number;
  cpuGmacsPerSecond: number;
}

interface CodecRow {
  size: string;
  frames: number;
  megapixels: number;
  makeMs: number;
  makeEncodeMs: number;
  decodeMs: number;
  encodeSecondsPerMp: number;
  decodeSecondsPerMp: number;
  /** The same from CPU time / cores. */
  cpuEncodeSecondsPerMp: number;
  cpuDecodeSecondsPerMp: number;
}

async function network(name: string, side: number): Promise<NetworkRow> {
  const manifest = (await getManifest(name)) as SuperResolutionManifest;
  const file = await ensureModelFile(name);
  const sessions = new SessionCache({ threads: 0 });
  const session = await sessions.get(file.path);
  const image = await loadRgb(DEFAULT_SAMPLE_IMAGE, side);
  const model = { run: session.run.bind(session), scale: manifest.scale, range: manifest.input.range };
  const options = { tile: manifest.tile.size, overlap: manifest.tile.overlap, batch: manifest.tile.batch };
  const plan = planTiles({
    width: image.width,
    height: image.height,
    ...options,
    feather: defaultFeather(options.overlap),
  });
  const tilePixels = plan.count * plan.tileWidth * plan.tileHeight;
  await upscaleRgb(model, image, options);
  const runs: number[] = [];
  const cpu: number[] = [];
  const cores = os.availableParallelism();
  for (let i = 0; i < reps; i += 1) {
    const c0 = cpuSeconds();
    runs.push((await timed(() => upscaleRgb(model, image, options))).ms);
    cpu.push(((cpuSeconds() - c0) * 1000) / cores);
  }
  await sessions.release();
  const macs = manifest.macsPerInputPixel * tilePixels;
  const fastest = Math.min(...runs);
  const cpuFastest = Math.min(...cpu);
  return {
    model: name,
    side: image.width,
    tilePixels,
    macs,
    fastestMs: fastest,
    medianMs: median(runs),
    gmacsPerSecond: macs / fastest / 1e6,
    cpuPerCoreMs: cpuFastest,
    cpuGmacsPerSecond: macs / cpuFastest / 1e6,
  };
}

/** Wall ms and CPU ms / cores of one ffmpeg run. */
async function ffmpegTimed(args: string[]): Promise<{ wall: number; cpu: number }> {
  const c0 = cpuSeconds();
  const wall = await ffmpeg(args);
  return { wall, cpu: ((cpuSeconds() - c0) * 1000) / os.availableParallelism() };
}

function ffmpeg(args: string[]): Promise<number> {
  const start = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-nostdin', ...args], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve(performance.now() - start) : reject(new Error(`ffmpeg exited ${code}: ${err.slice(-500)}`)),
    );
  });
}

/** A pan across the photo, scaled so the crop always stays inside it. */
function source(width: number, height: number, frames: number): string[] {
  const side = Math.ceil(Math.max(width, height) * 1.25);
  return [
    '-loop',
    '1',
    '-framerate',
    '30',
    '-i',
    DEFAULT_SAMPLE_IMAGE,
    '-vf',
    `scale=${side}:${side},crop=${width}:${height}:x='n*${Math.max(1, Math.floor((side - width) / frames))}':y='n*${Math.max(1, Math.floor((side - height) / frames))}',format=rgb24`,
    '-frames:v',
    String(frames),
  ];
}

async function codec(width: number, height: number, frames: number, dir: string): Promise<CodecRow> {
  const out = path.join(dir, `${width}x${height}.mp4`);
  const make: { wall: number; cpu: number }[] = [];
  const makeEncode: { wall: number; cpu: number }[] = [];
  const decode: { wall: number; cpu: number }[] = [];
  for (let i = 0; i < reps; i += 1) {
    make.push(await ffmpegTimed([...source(width, height, frames), '-f', 'rawvideo', '-y', '/dev/null']));
    makeEncode.push(
      await ffmpegTimed([
        ...source(width, height, frames),
        '-pix_fmt',
        'yuv420p',
        '-c:v',
        'libx264',
        '-preset',
        DEFAULT_ENCODER.preset,
        '-crf',
        String(DEFAULT_ENCODER.crf),
        '-y',
        out,
      ]),
    );
    decode.push(await ffmpegTimed(['-i', out, '-f', 'rawvideo', '-pix_fmt', 'rgb24', '-y', '/dev/null']));
  }
  const mp = (width * height * frames) / 1e6;
  const fastest = (xs: { wall: number; cpu: number }[], key: 'wall' | 'cpu'): number =>
    Math.min(...xs.map((x) => x[key]));
  const makeMs = fastest(make, 'wall');
  const makeEncodeMs = fastest(makeEncode, 'wall');
  const decodeMs = fastest(decode, 'wall');
  return {
    size: `${width}x${height}`,
    frames,
    megapixels: mp,
    makeMs,
    makeEncodeMs,
    decodeMs,
    encodeSecondsPerMp: (makeEncodeMs - makeMs) / 1000 / mp,
    decodeSecondsPerMp: decodeMs / 1000 / mp,
    cpuEncodeSecondsPerMp: (fastest(makeEncode, 'cpu') - fastest(make, 'cpu')) / 1000 / mp,
    cpuDecodeSecondsPerMp: fastest(decode, 'cpu') / 1000 / mp,
  };
}

const machine = machineInfo();
console.log(describeMachine(machine));
const results: { network: NetworkRow[]; codec: CodecRow[] } = { network: [], codec: [] };
if (only.includes('network')) {
  for (const [name, side] of [
    ['esrgan-slim-x4', 512],
    ['esrgan-thick-x4', 256],
  ] as const) {
    const row = await network(name, side);
    results.network.push(row);
    console.log(
      `${row.model} ${row.side}px: ${(row.macs / 1e9).toFixed(1)} GMAC, wall fastest ${row.fastestMs.toFixed(0)} ms (median ${row.medianMs.toFixed(0)}): ` +
        `${row.gmacsPerSecond.toFixed(1)} GMAC/s; CPU/cores ${row.cpuPerCoreMs.toFixed(0)} ms: ${row.cpuGmacsPerSecond.toFixed(1)} GMAC/s`,
    );
  }
}
if (only.includes('codec')) {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'calibrate-'));
  try {
    for (const [w, h, n] of [
      [1280, 720, 60],
      [1920, 1080, 40],
      [3840, 2160, 20],
    ] as const) {
      const row = await codec(w, h, n, dir);
      results.codec.push(row);
      console.log(
        `${row.size} x ${row.frames}: make ${row.makeMs.toFixed(0)} ms, make+encode ${row.makeEncodeMs.toFixed(0)} ms, decode ${row.decodeMs.toFixed(0)} ms: ` +
          `encode ${(row.encodeSecondsPerMp * 1000).toFixed(2)} ms/MP, decode ${(row.decodeSecondsPerMp * 1000).toFixed(2)} ms/MP; ` +
          `CPU/cores: encode ${(row.cpuEncodeSecondsPerMp * 1000).toFixed(2)} ms/MP, decode ${(row.cpuDecodeSecondsPerMp * 1000).toFixed(2)} ms/MP`,
      );
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
if (values.results !== undefined) await writeResults(values.results, { machine, reps, ...results });
await cli.done({ data: results });
