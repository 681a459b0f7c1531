/**
 * Warm before ready: does the first job after `media-worker serve` starts pay for opening the
 * networks? A throwaway nats-server, `serve` from dist/ serving image jobs only, and one small PNG
 * served locally; per round a fresh daemon takes two identical image jobs one after the other. The
 * figures are the first job's cost over the second's, as CPU time of the daemon process (every
 * thread; what a shared machine's neighbours do not change) and as processing time (the terminal
 * event's durationMs: from the worker taking it to its result stored). Goal: at most 1.2 on this CPU.
 *
 * Prints one JSON object. Figures only, no assertions (timings belong here, not in tests).
 *
 *   media-worker bench warm-start --help
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import sharp from 'sharp';
import { PACKAGE_ROOT } from '../../src/paths.js';
import { anyHostEventSubject, terminalEventSchema, type TerminalEvent } from '../../src/protocol/index.js';
import { median } from '../common.js';
import { benchCli } from '../harness.js';
import { cpuSeconds } from '../cpu-time.js';
import { startBenchNats } from './nats-server.js';

const cli = benchCli({
  name: 'warm-start',
  options: {
    kind: {
      type: 'string',
      arg: 'image|video',
      help: 'the jobs the daemon serves (video: a 1 s clip at 12 fps)',
      default: 'image',
    },
    size: { type: 'string', arg: 'WxH', help: "the input's size", default: '64x48' },
    cli: { type: 'string', arg: 'PATH', help: "another build's dist/src/cli.js, measured the same way" },
  },
  common: { repeat: { default: '3', help: 'rounds, each a fresh daemon taking two jobs (medians are reported)' } },
});
const values = cli.values;
const KIND = values.kind;
if (KIND !== 'image' && KIND !== 'video') throw new RangeError(`Expected --kind image or video but received ${KIND}`);
const ROUNDS = Number(values.repeat);
const [WIDTH, HEIGHT] = (values.size ?? '64x48').split('x').map(Number) as [number, number];
if (!Number.isInteger(ROUNDS) || ROUNDS < 1 || !(WIDTH > 0) || !(HEIGHT > 0))
  throw new RangeError(`Expected --repeat N and --size WxH but received ${values.repeat} and ${values.size}`);
const CLI = path.resolve(values.cli ?? path.join(PACKAGE_ROOT, 'dist', 'src', 'cli.js'));

const dir = await mkdtemp(path.join(os.tmpdir(), 'media-worker-warm-'));
const children: ChildProcess[] = [];

try {
  const natsUrl = await startBenchNats(dir, children);
  // A photo, not a flat colour: the network's work does not depend on it, the encoder's does a little.
  const input = KIND === 'image' ? await photo() : await clip();
  const media = createServer((_req, res) =>
    res.writeHead(200, { 'content-type': KIND === 'image' ? 'image/png' : 'video/mp4' }).end(input),
  );
  await new Promise<void>((resolve) => media.listen(0, '127.0.0.1', resolve));
  const inputUrl = `http://127.0.0.1:${(media.address() as AddressInfo).port}/in.${KIND === 'image' ? 'png' : 'mp4'}`;
  const nc = await connect({ servers: natsUrl });
  const js = jetstream(nc);
  const jsm = await jetstreamManager(nc);

  const warmSteps: unknown[] = [];
  const rounds: {
    startMs: number;
    firstMs: number;
    secondMs: number;
    ratio: number;
    firstCpuMs: number;
    secondCpuMs: number;
    cpuRatio: number;
  }[] = [];
  const env = {
    ...process.env,
    NATS_URL: natsUrl,
    LOG_LEVEL: 'info',
    LOG_FORMAT: 'json',
    MEDIA_WORKER_ALLOW_PRIVATE_URLS: '1',
    RESULTS_DIR: path.join(dir, 'results'),
    MEDIA_WORKER_TMP_DIR: path.join(dir, 'tmp'),
    WORKER_HEALTH_PORT: '0',
    WORKER_CONCURRENCY: KIND === 'image' ? 'image=1,video=0,lipsync=0,music=0' : 'image=0,video=1,lipsync=0,music=0',
  };
  // serve only binds: the streams and consumers are the operator's to make (docs/operations.md).
  await promisify(execFile)(process.execPath, [CLI, 'provision'], { env });
  for (let round = 0; round < ROUNDS; round++) {
    const t0 = performance.now();
    const daemon = spawn(process.execPath, [CLI, 'serve'], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    children.push(daemon);
    const log = await started(daemon, /media-worker serving/);
    // What the warm start opened before the worker reported ready: what a cold first job would pay.
    const warm = log.split('\n').find((l) => l.includes('"msg":"inference ready'));
    if (round === 0 && warm !== undefined) warmSteps.push(...((JSON.parse(warm) as { steps?: unknown[] }).steps ?? []));
    const startMs = performance.now() - t0;
    const durations: number[] = [];
    const cpu: number[] = [];
    for (const n of [1, 2]) {
      const id = `warm-${round}-${n}`;
      const before = cpuSeconds(daemon.pid!);
      const model = `vendor-${KIND}-upscale`;
      const job = { id, model, input: { [`${KIND}_url`]: inputUrl, upscale_factor: '2' } };
      await js.publish(`media.jobs.${KIND}.${model}`, JSON.stringify(job));
      const event = await eventOf(id);
      if (event.status !== 'completed' || event.durationMs === null)
        throw new Error(`Expected ${id} to complete but received ${JSON.stringify(event)}`);
      durations.push(event.durationMs);
      cpu.push(Math.round((cpuSeconds(daemon.pid!) - before) * 1000));
    }
    const exited = new Promise((resolve) => daemon.once('exit', resolve));
    daemon.kill('SIGTERM');
    await exited;
    const [firstMs, secondMs] = durations as [number, number];
    const [firstCpuMs, secondCpuMs] = cpu as [number, number];
    rounds.push({
      startMs: Math.round(startMs),
      firstMs,
      secondMs,
      ratio: Number((firstMs / secondMs).toFixed(2)),
      firstCpuMs,
      secondCpuMs,
      cpuRatio: Number((firstCpuMs / secondCpuMs).toFixed(2)),
    });
  }
  media.close();
  await nc.close();
  const figures = {
    machine: { cpus: os.cpus().length, cpu: os.cpus()[0]?.model ?? 'unknown', node: process.version },
    cli: path.relative(PACKAGE_ROOT, CLI),
    input: `${WIDTH}x${HEIGHT} ${KIND === 'image' ? 'PNG' : 'H.264 clip, 1 s at 12 fps'}, upscale_factor 2 (the default ${KIND} network)`,
    rounds,
    medianCpuRatio: median(rounds.map((r) => r.cpuRatio)),
    medianRatio: median(rounds.map((r) => r.ratio)),
    medianStartMs: median(rounds.map((r) => r.startMs)),
    warmSteps,
  };
  process.stdout.write(`${JSON.stringify(figures, null, 2)}\n`);
  const { machine: _machine, ...data } = figures;
  await cli.done({ data });

  async function eventOf(id: string): Promise<TerminalEvent> {
    for (let i = 0; i < 6000; i++) {
      const stored = await jsm.streams
        .getMessage('MEDIA_EVENTS', { last_by_subj: anyHostEventSubject(id) })
        .catch(() => null);
      if (stored) return terminalEventSchema.parse(stored.json());
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`No event for ${id} within 5 minutes`);
  }
} finally {
  for (const child of children.reverse()) child.kill('SIGTERM');
  await new Promise((r) => setTimeout(r, 500));
  await rm(dir, { recursive: true, force: true });
}

async function photo(): Promise<Buffer> {
  return sharp(path.join(PACKAGE_ROOT, 'test', 'fixtures', 'photos', 'chelsea.png'))
    .resize(WIDTH, HEIGHT, { fit: 'fill' })
    .png()
    .toBuffer();
}

async function clip(): Promise<Buffer> {
  const file = path.join(dir, 'in.mp4');
  const args = [
    '-v',
    'error',
    '-f',
    'lavfi',
    '-i',
    `testsrc=size=${WIDTH}x${HEIGHT}:rate=12`,
    '-t',
    '1',
    '-c:v',
    'libx264',
    '-pix_fmt',
    'yuv420p',
    file,
  ];
  await new Promise<void>((resolve, reject) => {
    const ff = spawn(process.env['FFMPEG_PATH'] ?? 'ffmpeg', args, { stdio: 'ignore' });
    ff.once('error', reject);
    ff.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`ffmpeg exited with ${code}`))));
  });
  return readFile(file);
}

async function started(child: ChildProcess, line: RegExp): Promise<string> {
  let out = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`Timed out waiting for ${line}: ${out.slice(-2000)}`)), 300_000);
    child.stderr?.on('data', (c: Buffer) => {
      out += c.toString();
      if (line.test(out)) {
        clearTimeout(timer);
        resolve(out);
      }
    });
    child.once('exit', (code) => reject(new Error(`exited with ${code}: ${out.slice(-2000)}`)));
  });
}
