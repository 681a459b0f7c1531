/**
 * Video pipeline benchmarks, on a synthetic clip (testsrc2 + a sine tone, H.264 + AAC in MP4) made
 * at the start in a temp directory that is removed at the end.
 *
 * (a) overlap: the streaming pipeline's wall time over the time of the network alone on the same
 *     frames (decoded into memory beforehand, run with the same frames in flight and batching).
 *     Goal <= 1.10: decoding and encoding hidden behind inference. Alternating runs; medians and
 *     minimums (on a shared machine the minimum is the run least disturbed by others).
 * (b) frames on disk: the same input, model and encoder the way frame-dumping tools do it: ffmpeg
 *     extracts every frame as PNG, each PNG is decoded, upscaled and written as PNG, ffmpeg encodes
 *     the PNG sequence with the original audio. Goal: streaming >= 2x faster.
 * (c) memory: peak RSS of the whole process tree (a child node process running the pipeline plus
 *     its ffmpeg children, sampled from /proc every 20 ms) for a short and a long input.
 *     Goal: long / short <= 1.2.
 *
 *   media-worker bench video --help
 */
import { spawn } from 'node:child_process';
import { mkdtemp, mkdir, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { SessionCache, type UpscaleResult, upscaleRgb, createSrModelLoader } from '../../src/inference/index.js';
import type { UpscaleFactor } from '../../src/jobs/index.js';
import { probeMedia, resolveFfmpeg, runProcess, type MediaInfo } from '../../src/media/index.js';
import {
  DEFAULT_ENCODER,
  decoderArgs,
  inputMatrix,
  videoCodecArgs,
  frameTiming,
  rgbFrameBytes,
  videoGeometry,
  probeVideoExtras,
} from '../../src/video/index.js';
import { TileBatcher, upscaleVideoFile } from '../../src/kinds/video-upscale/pipeline/index.js';
import { TABLES } from '../blocks.js';
import { benchRegistry, describeMachine, machineInfo } from '../common.js';
import { benchCli } from '../harness.js';
import { docsTarget, markdownTable, writeDocsBlock } from '../doc-block.js';

const cli = benchCli({
  name: 'video',
  options: {
    size: { type: 'string', arg: 'WxH', help: "the synthetic clip's size", default: '160x90' },
    fps: { type: 'string', arg: 'N', help: 'its frame rate', default: '24' },
    seconds: { type: 'string', arg: 'S', help: 'its length', default: '10' },
    'long-seconds': { type: 'string', arg: 'S', help: "(c): the long input's length", default: '60' },
    factor: { type: 'string', arg: '1|2|4', help: 'the upscale factor', default: '2' },
    'frames-in-flight': { type: 'string', arg: 'N', help: 'frames the pipeline keeps in flight', default: '2' },
    only: { type: 'string', arg: 'a,b,c', help: '(a) overlap, (b) frames on disk, (c) memory', default: 'a,b,c' },
    nice: { type: 'string', arg: 'N', help: "ffmpeg's niceness" },
    child: {
      type: 'string',
      arg: 'FILE',
      help: 'internal: one upscale in this process (the memory child)',
      hidden: true,
    },
    out: { type: 'string', arg: 'FILE', help: "internal: the child's output", hidden: true },
  },
  common: {
    model: { help: 'the network (default: the video default of MEDIA_WORKER_SR_MODELS)' },
    threads: { default: '0' },
    repeat: { default: '5' },
  },
});
const values = cli.values;

const ffmpeg = resolveFfmpeg({ ffmpegPath: process.env['FFMPEG_PATH'] ?? '' });
const factor = values.factor as UpscaleFactor;
if (!['1', '2', '4'].includes(factor))
  throw new RangeError(`Expected --factor to be one of 1, 2, 4 but received ${JSON.stringify(values.factor)}`);
const framesInFlight = positive('frames-in-flight', values['frames-in-flight']);
const threads = Number(values.threads);
const sessions = new SessionCache({ executionProviders: ['cpu'], ...(threads > 0 ? { threads } : {}) });
const loadModel = createSrModelLoader({ sessions, ...benchRegistry() });

/** Request options the command line sets for every pipeline run. */
function common(): { modelName?: string; ffmpegNice?: number } {
  return {
    ...(values.model ? { modelName: values.model } : {}),
    ...(values.nice === undefined ? {} : { ffmpegNice: Number(values.nice) }),
  };
}

function positive(name: string, text: string | undefined): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1)
    throw new RangeError(`Expected --${name} to be a positive integer but received ${JSON.stringify(text)}`);
  return n;
}

function median(xs: number[]): number {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

async function ff(args: string[]): Promise<void> {
  await runProcess(ffmpeg, ['-hide_banner', '-v', 'error', '-nostdin', '-y', ...args], { maxStdoutBytes: 1024 });
}

async function makeInput(file: string, seconds: number): Promise<string> {
  await ff([
    '-f',
    'lavfi',
    '-i',
    `testsrc2=size=${values.size}:rate=${values.fps}`,
    '-f',
    'lavfi',
    '-i',
    'sine=frequency=440:sample_rate=48000',
    '-t',
    String(seconds),
    '-c:v',
    'libx264',
    '-preset',
    'medium',
    '-crf',
    '18',
    '-pix_fmt',
    'yuv420p',
    '-c:a',
    'aac',
    file,
  ]);
  return file;
}

/** The pipeline's own split of its time, from its outcome: the stream, and the network calls inside it. */
const insideStreaming: { streamMs: number; inferenceMs: number }[] = [];

async function streaming(input: string, info: MediaInfo, output: string): Promise<number> {
  const started = performance.now();
  const outcome = await upscaleVideoFile(
    { inputPath: input, outputPath: output, factor, info, framesInFlight, ...common() },
    loadModel,
  );
  insideStreaming.push({ streamMs: outcome.streamMs, inferenceMs: outcome.inferenceMs });
  return performance.now() - started;
}

/** Every frame of the input exactly as the pipeline's decoder delivers it, in memory. */
async function decodeAll(input: string, info: MediaInfo): Promise<Buffer[]> {
  const video = info.video!;
  const geometry = videoGeometry(video, Number(factor), (await loadModel('video', factor, values.model)).model.scale);
  const extras = await probeVideoExtras(input, info.container);
  const args = decoderArgs({
    inputPath: input,
    container: info.container,
    geometry,
    timing: frameTiming(video),
    matrix: inputMatrix(extras, geometry.decoded),
    interlaced: extras.interlaced === true,
    videoIndex: extras.videoIndex,
  });
  const { stdout } = await runProcess(ffmpeg, args, { maxStdoutBytes: 2 ** 31 - 1 });
  const size = rgbFrameBytes(geometry.decoded);
  const frames: Buffer[] = [];
  for (let at = 0; at + size <= stdout.length; at += size) frames.push(stdout.subarray(at, at + size));
  return frames;
}

/** The network alone over the frames, with the pipeline's frames in flight and batching. */
async function inferenceOnly(frames: Buffer[], width: number, height: number): Promise<number> {
  const loaded = await loadModel('video', factor, values.model);
  const batcher = new TileBatcher(loaded.model, Math.max(1, loaded.tiling.batch ?? 1) * framesInFlight);
  const started = performance.now();
  const inFlight = new Set<Promise<UpscaleResult>>();
  for (const frame of frames) {
    if (inFlight.size >= framesInFlight) await Promise.race(inFlight);
    const job = upscaleRgb(batcher, { data: frame, width, height, channels: 3 }, loaded.tiling);
    inFlight.add(job);
    void job.then(() => inFlight.delete(job));
  }
  await Promise.all(inFlight);
  return performance.now() - started;
}

/** Extract PNGs, upscale PNG to PNG, encode the PNG sequence: the frames-on-disk way. */
async function framesOnDisk(input: string, info: MediaInfo, work: string, output: string): Promise<number> {
  const loaded = await loadModel('video', factor, values.model);
  const video = info.video!;
  const geometry = videoGeometry(video, Number(factor), loaded.model.scale);
  const rate = `${video.fps.num}/${video.fps.den}`;
  const started = performance.now();
  const inDir = path.join(work, 'frames-in');
  const outDir = path.join(work, 'frames-out');
  await mkdir(inDir);
  await mkdir(outDir);
  await ff(['-i', input, '-map', '0:V:0', '-fps_mode', 'passthrough', path.join(inDir, '%06d.png')]);
  for (const name of (await readdir(inDir)).sort()) {
    const { data, info: raw } = await sharp(path.join(inDir, name))
      .removeAlpha()
      .raw()
      .toBuffer({ resolveWithObject: true });
    const up = await upscaleRgb(
      loaded.model,
      { data, width: raw.width, height: raw.height, channels: 3 },
      loaded.tiling,
    );
    let image = sharp(up.data, { raw: { width: up.width, height: up.height, channels: 3 } });
    if (up.width !== geometry.target.width)
      image = image.resize(geometry.target.width, geometry.target.height, { kernel: 'lanczos3' });
    await image.png().toFile(path.join(outDir, name));
  }
  await ff([
    '-framerate',
    rate,
    '-i',
    path.join(outDir, '%06d.png'),
    '-i',
    input,
    '-map',
    '0:v:0',
    '-map',
    '1:a:0?',
    ...videoCodecArgs(DEFAULT_ENCODER),
    '-pix_fmt',
    'yuv420p',
    '-c:a',
    'copy',
    output,
  ]);
  const elapsed = performance.now() - started;
  await rm(inDir, { recursive: true, force: true });
  await rm(outDir, { recursive: true, force: true });
  return elapsed;
}

/** Sum of VmRSS (bytes) over a process and all its descendants. */
async function treeRss(pid: number): Promise<number> {
  let total = 0;
  const queue = [pid];
  while (queue.length > 0) {
    const p = queue.pop()!;
    try {
      const status = await readFile(`/proc/${p}/status`, 'utf8');
      const kb = /VmRSS:\s+(\d+) kB/.exec(status)?.[1];
      if (kb !== undefined) total += Number(kb) * 1024;
      for (const tid of await readdir(`/proc/${p}/task`)) {
        const children = await readFile(`/proc/${p}/task/${tid}/children`, 'utf8').catch(() => '');
        for (const c of children.split(' ').filter((s) => s.trim() !== '')) queue.push(Number(c));
      }
    } catch {
      // The process exited between the listing and the read.
    }
  }
  return total;
}

/** Runs one upscale in a child node process and samples its tree's RSS until it exits. */
async function peakRss(input: string, output: string): Promise<{ peak: number; ms: number }> {
  const script = fileURLToPath(import.meta.url);
  const args = [
    script,
    '--child',
    input,
    '--out',
    output,
    '--factor',
    factor,
    '--frames-in-flight',
    String(framesInFlight),
    '--threads',
    String(threads),
  ];
  if (values.model) args.push('--model', values.model);
  if (values.nice !== undefined) args.push('--nice', values.nice);
  const started = performance.now();
  // Whatever the child prints is progress: onto stderr, so that --json keeps stdout to its document.
  const child = spawn(process.execPath, args, { stdio: ['ignore', 2, 'inherit'] });
  let peak = 0;
  let running = true;
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => {
      running = false;
      resolve(code);
    }),
  );
  while (running) {
    peak = Math.max(peak, await treeRss(child.pid!));
    await new Promise((r) => setTimeout(r, 20));
  }
  const code = await exited;
  if (code !== 0) throw new Error(`The benchmark child exited with code ${code}`);
  return { peak, ms: performance.now() - started };
}

async function runChild(input: string, output: string): Promise<void> {
  const info = await probeMedia(input);
  await upscaleVideoFile(
    { inputPath: input, outputPath: output, factor, info, framesInFlight, ...common() },
    loadModel,
  );
  await sessions.release();
}

async function main(): Promise<void> {
  if (values.child !== undefined) {
    await runChild(values.child, values.out ?? path.join(tmpdir(), 'bench-video-child.mp4'));
    return;
  }
  const target = await docsTarget('video', values);
  const machine = describeMachine(machineInfo());
  console.log(machine);
  const table: string[][] = [];
  const only = new Set(values.only.split(','));
  const reps = positive('repeat', values.repeat);
  const seconds = Number(values.seconds);
  const work = await mkdtemp(path.join(tmpdir(), 'media-worker-bench-video-'));
  try {
    const input = await makeInput(path.join(work, 'input.mp4'), seconds);
    const info = await probeMedia(input);
    const video = info.video!;
    const frames = await decodeAll(input, info);
    const loaded = await loadModel('video', factor, values.model);
    const model = loaded.name;
    const geometry = videoGeometry(video, Number(factor), loaded.model.scale);
    console.log(
      `# video benchmarks: ${values.size} @ ${values.fps} fps, ${frames.length} frames (${seconds} s) + AAC, factor ${factor} -> ${geometry.output.width}x${geometry.output.height}, ${model}, ${framesInFlight} frames in flight, encoder ${DEFAULT_ENCODER.codec} ${DEFAULT_ENCODER.preset} crf ${DEFAULT_ENCODER.crf}, ${reps} reps`,
    );
    // Warm-up: sessions, page cache, ffmpeg binaries.
    await streaming(input, info, path.join(work, 'warm.mp4'));

    if (only.has('a') || only.has('b')) {
      const streamMs: number[] = [];
      const srMs: number[] = [];
      const diskMs: number[] = [];
      for (let r = 0; r < reps; r += 1) {
        if (only.has('a')) srMs.push(await inferenceOnly(frames, geometry.decoded.width, geometry.decoded.height));
        streamMs.push(await streaming(input, info, path.join(work, `stream-${r}.mp4`)));
        if (only.has('b')) diskMs.push(await framesOnDisk(input, info, work, path.join(work, `disk-${r}.mp4`)));
      }
      const runs = (xs: number[]) => xs.map((x) => x.toFixed(0)).join(', ');
      const [s, sMin] = [median(streamMs), Math.min(...streamMs)];
      table.push(['streaming pipeline ms', s.toFixed(0), sMin.toFixed(0), '']);
      console.log(
        `streaming pipeline:     median ${s.toFixed(0)} ms, min ${sMin.toFixed(0)} ms (${((frames.length * 1000) / sMin).toFixed(1)} fps)  runs ${runs(streamMs)}`,
      );
      const inside = insideStreaming.slice(-reps);
      console.log(
        `  inside the pipeline (medians): stream ${median(inside.map((x) => x.streamMs)).toFixed(0)} ms, ` +
          `network calls ${median(inside.map((x) => x.inferenceMs)).toFixed(0)} ms`,
      );
      if (only.has('a')) {
        const [i, iMin] = [median(srMs), Math.min(...srMs)];
        table.push(['network alone on the same frames ms', i.toFixed(0), iMin.toFixed(0), '']);
        table.push(['(a) streaming / network alone', (s / i).toFixed(3), (sMin / iMin).toFixed(3), '<= 1.10']);
        console.log(`(a) inference only:     median ${i.toFixed(0)} ms, min ${iMin.toFixed(0)} ms  runs ${runs(srMs)}`);
        console.log(
          `(a) streaming / inference-only = ${(s / i).toFixed(3)} (medians), ${(sMin / iMin).toFixed(3)} (minimums)  (goal <= 1.10)`,
        );
      }
      if (only.has('b')) {
        const [d, dMin] = [median(diskMs), Math.min(...diskMs)];
        table.push(['frames on disk ms', d.toFixed(0), dMin.toFixed(0), '']);
        table.push(['(b) frames on disk / streaming', (d / s).toFixed(2), (dMin / sMin).toFixed(2), '>= 2']);
        console.log(
          `(b) frames on disk:      median ${d.toFixed(0)} ms, min ${dMin.toFixed(0)} ms  runs ${runs(diskMs)}`,
        );
        console.log(
          `(b) frames-on-disk / streaming = ${(d / s).toFixed(2)}x (medians), ${(dMin / sMin).toFixed(2)}x (minimums)  (goal >= 2)`,
        );
      }
    }

    if (only.has('c')) {
      const longSeconds = Number(values['long-seconds']);
      const long = await makeInput(path.join(work, 'long.mp4'), longSeconds);
      const short = await peakRss(input, path.join(work, 'rss-short.mp4'));
      const longRun = await peakRss(long, path.join(work, 'rss-long.mp4'));
      const mb = (b: number) => (b / 2 ** 20).toFixed(1);
      console.log(
        `(c) peak RSS, process tree: ${seconds} s input ${mb(short.peak)} MiB (${(short.ms / 1000).toFixed(1)} s), ${longSeconds} s input ${mb(longRun.peak)} MiB (${(longRun.ms / 1000).toFixed(1)} s)`,
      );
      console.log(`(c) long / short = ${(longRun.peak / short.peak).toFixed(3)}  (goal <= 1.2)`);
      table.push([`peak RSS of the process tree, ${seconds} s input MiB`, mb(short.peak), '', '']);
      table.push([`peak RSS of the process tree, ${longSeconds} s input MiB`, mb(longRun.peak), '', '']);
      table.push(['(c) long / short', (longRun.peak / short.peak).toFixed(3), '', '<= 1.2']);
    }
    console.log(`\n${markdownTable(TABLES.video.header, table)}`);
    const caption =
      `${values.size} at ${values.fps} fps, ${frames.length} frames (${seconds} s) + AAC, factor ${factor} to ${geometry.output.width}x${geometry.output.height}, ` +
      `${model}, ${framesInFlight} frames in flight, ${reps} runs (peak RSS: one run each):`;
    await writeDocsBlock(target, 'video', [{ caption, header: TABLES.video.header, rows: table }], machine);
    await cli.done({ tables: [{ caption, header: TABLES.video.header, rows: table }] });
  } finally {
    await sessions.release();
    await rm(work, { recursive: true, force: true });
  }
}

await main();
