/**
 * What tracing costs (issue 39, item 2): an image upscale through executeJob (quote with its fetch
 * and probe, tiles, encode, store), as the daemon runs it, with tracing off (not started: no span
 * is made) against tracing on (the SDK started, spans batched and posted as OTLP/HTTP JSON to a
 * local sink), alternating in one run after a warm-up; medians of --repeat, wall and CPU time, and
 * the ratios on/off. Only the first off round runs before the SDK module is loaded; the later ones
 * run after it was started and stopped (its globals back to no-ops), as in a process whose
 * tracing stopped. That nothing of the SDK is loaded when off is test/telemetry/tracing-off.test.ts's. Then the same for the bare helper around an empty step (`withSpan` off
 * and on, against calling the step), in nanoseconds per call.
 *
 *   npm run bench:tracing [-- --repeat N --size PX]
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import sharp from 'sharp';
import { createEngine, executeJob } from '../../src/app/index.js';
import { loadConfig } from '../../src/config.js';
import type { Job } from '../../src/jobs/index.js';
import { BUNDLED_PHOTOS_DIR } from '../../src/paths.js';
import { startTracing, telemetrySettingsFromEnv, withSpan, type Tracing } from '../../src/telemetry/index.js';
import { describeMachine, discardResult, formatTable, intOption, machineInfo, median } from '../common.js';
import type { DocTable } from '../doc-block.js';
import { benchCli } from '../harness.js';

const cli = benchCli({
  name: 'tracing',
  options: {
    size: {
      type: 'string',
      arg: 'PX',
      help: 'side of the input image (a crop of a bundled photo), upscaled x2',
      default: '128',
    },
    calls: {
      type: 'string',
      arg: 'N',
      help: 'calls of the bare helper, off (and a tenth of it on)',
      default: '1000000',
    },
  },
  common: { repeat: { default: '7', help: 'jobs per mode (medians are reported)' } },
});
const size = intOption('size', cli.values.size, 16) ?? 128;
const calls = intOption('calls', cli.values.calls, 1000) ?? 1_000_000;
const reps = intOption('repeat', cli.values.repeat, 1) ?? 7;

// The sink: an OTLP/HTTP receiver that only counts what it is sent.
let posts = 0;
let bytes = 0;
const sink = createServer((req, res) => {
  req.on('data', (c: Buffer) => (bytes += c.length));
  req.on('end', () => {
    posts += 1;
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
});
await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve));
const endpoint = `http://127.0.0.1:${(sink.address() as AddressInfo).port}`;

const logger = pino({ level: 'silent' });
const config = loadConfig();
const engine = createEngine(config, logger);
const dir = await mkdtemp(path.join(os.tmpdir(), 'bench-tracing-'));
const input = path.join(dir, 'input.png');
await sharp(path.join(BUNDLED_PHOTOS_DIR, 'chelsea.png')).resize(size, size, { fit: 'cover' }).png().toFile(input);
const job: Job = { model: 'vendor-image-upscale', input: { image_url: input, upscale_factor: '2' } } as Job;
console.log(describeMachine(machineInfo()));

const tracingOn = (): Promise<Tracing> =>
  startTracing(
    telemetrySettingsFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' }),
    { serviceName: 'bench', logger },
  );

let n = 0;
async function oneJob(): Promise<{ wall: number; cpu: number }> {
  const cpuStart = process.cpuUsage();
  const start = performance.now();
  await executeJob(job, engine, {
    taskId: `bench-${(n += 1)}`,
    logger,
    allowLocalPaths: true,
    store: discardResult,
  });
  const wall = (performance.now() - start) / 1000;
  const cpu = process.cpuUsage(cpuStart);
  return { wall, cpu: (cpu.user + cpu.system) / 1e6 };
}

const off: { wall: number; cpu: number }[] = [];
const on: { wall: number; cpu: number }[] = [];
let exported = { posts: 0, bytes: 0 };
try {
  await oneJob(); // warm-up: opens the network's session
  for (let i = 0; i < reps; i += 1) {
    off.push(await oneJob());
    const tracing = await tracingOn();
    if (!tracing.on) throw new Error('Expected tracing to start with an endpoint set');
    on.push(await oneJob());
    const before = { posts, bytes };
    await tracing.shutdown(); // sends the job's spans (not timed)
    exported = { posts: exported.posts + posts - before.posts, bytes: exported.bytes + bytes - before.bytes };
  }
} finally {
  await engine.release();
  await rm(dir, { recursive: true, force: true });
}

/** ns per call of `fn` over `count` calls of an empty async step. */
async function perCall(count: number, fn: () => Promise<number>): Promise<number> {
  const start = process.hrtime.bigint();
  let sum = 0;
  for (let i = 0; i < count; i += 1) sum += await fn();
  if (sum !== count) throw new Error('the step did not run');
  return Number(process.hrtime.bigint() - start) / count;
}
const step = async (): Promise<number> => 1;
const bare: number[] = [];
const helperOff: number[] = [];
for (let i = 0; i < 3; i += 1) {
  bare.push(await perCall(calls, step));
  helperOff.push(await perCall(calls, () => withSpan('step', {}, step)));
}
const tracing = await tracingOn();
const onCalls = Math.max(1000, Math.floor(calls / 10));
const helperOn = [await perCall(onCalls, () => withSpan('step', {}, step))];
await tracing.shutdown();
sink.close();

const med = (xs: { wall: number; cpu: number }[], key: 'wall' | 'cpu'): number => median(xs.map((x) => x[key]));
const ratio = (a: number, b: number): string => (a / b).toFixed(3);
const jobTable: DocTable = {
  caption: `An image upscale x2 of a ${size}×${size} PNG through executeJob, medians of ${reps} alternating runs:`,
  header: ['tracing', 'wall s', 'CPU s', 'wall on/off', 'CPU on/off'],
  rows: [
    ['off (not started: no span is made)', med(off, 'wall').toFixed(4), med(off, 'cpu').toFixed(4), '', ''],
    [
      'on (OTLP/HTTP JSON to a local sink)',
      med(on, 'wall').toFixed(4),
      med(on, 'cpu').toFixed(4),
      ratio(med(on, 'wall'), med(off, 'wall')),
      ratio(med(on, 'cpu'), med(off, 'cpu')),
    ],
  ],
};
const helperTable: DocTable = {
  caption: `withSpan around an empty async step, ns per call (off: ${calls} calls, median of 3; on: ${onCalls} calls):`,
  header: ['call', 'ns per call', 'over the bare step'],
  rows: [
    ['the step alone', median(bare).toFixed(0), ''],
    ['withSpan, tracing off', median(helperOff).toFixed(0), `+${(median(helperOff) - median(bare)).toFixed(0)} ns`],
    ['withSpan, tracing on', median(helperOn).toFixed(0), `+${(median(helperOn) - median(bare)).toFixed(0)} ns`],
  ],
};
for (const t of [jobTable, helperTable]) console.log(`\n${t.caption}\n${formatTable(t.header, t.rows)}`);
console.log(
  `\nexported while on: ${exported.posts} posts, ${(exported.bytes / reps / 1024).toFixed(1)} KiB of spans per job; load average at the end ${os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);
await cli.done({ tables: [jobTable, helperTable], data: { off, on, bare, helperOff, helperOn, exported } });
