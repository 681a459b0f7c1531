/**
 * What storing a large result costs the worker (issue 59, docs/storage-benchmarks.md): a file of
 * --mb MiB stored with the bucket store (RESULTS_STORE=s3: sha256 pass, multipart upload streamed
 * in 8 MiB parts, HEAD), this process's RSS sampled every 20 ms, and the floor, curl's PUT of the
 * same file to the same server; against two servers, each in a child process: s3rver (which writes
 * every part to disk, then copies the parts into the object) and a sink that writes nothing
 * (scripts/chaos/s3-sink.ts: the client's cost alone). `--part-mib` and `--queue` vary the
 * upload's shape. Prints one JSON line.
 *
 *   npm run build && node --expose-gc dist/scripts/storage-upload-bench.js --mb 1024
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os, { tmpdir } from 'node:os';
import path from 'node:path';
import { once } from 'node:events';
import { fileDigest } from '../src/media/index.js';
import { S3ResultStore, type UploadShape } from '../src/worker/index.js';
import { startObjectStore } from './chaos/object-store.js';
import { startS3Sink } from './chaos/s3-sink.js';

const MiB = 1024 * 1024;
const arg = (name: string): number | undefined => {
  const i = process.argv.indexOf(name);
  const value = i === -1 ? Number.NaN : Number(process.argv[i + 1]);
  return Number.isFinite(value) && value > 0 ? value : undefined;
};
const mb = arg('--mb') ?? 1024;
const shape: UploadShape = {
  ...(arg('--part-mib') === undefined ? {} : { partSize: arg('--part-mib')! * MiB }),
  ...(arg('--queue') === undefined ? {} : { queueSize: arg('--queue')! }),
};

async function writeFile(file: string, sizeMb: number): Promise<void> {
  const block = randomBytes(16 * MiB);
  const out = createWriteStream(file);
  for (let written = 0; written < sizeMb * MiB; written += block.length) {
    if (!out.write(block.subarray(0, Math.min(block.length, sizeMb * MiB - written)))) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
}

/** curl's PUT of `file`: wall seconds, and its CPU seconds (user + system, as GNU time reports them). */
function curlPut(file: string, url: string): Promise<{ seconds: number; cpuSeconds: number }> {
  const started = process.hrtime.bigint();
  const child = spawn('/usr/bin/time', ['-f', '%U %S', 'curl', '-sS', '-f', '-o', '/dev/null', '-T', file, url], {
    stdio: ['ignore', 'inherit', 'pipe'],
  });
  let err = '';
  child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
  return new Promise((resolve, reject) => {
    child.on('exit', (code) => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const [user, system] = (err.trim().split('\n').at(-1) ?? '').split(' ').map(Number);
      if (code !== 0) return reject(new Error(`curl exited ${code}: ${err}`));
      resolve({ seconds, cpuSeconds: (user ?? 0) + (system ?? 0) });
    });
  });
}

const round = (n: number, places = 2): number => Math.round(n * 10 ** places) / 10 ** places;

/** One store of `file` into `endpoint` (RSS sampled), then curl's PUT of it to the same server. */
async function measure(endpoint: string, file: string, warm: string, task: string) {
  const store = new S3ResultStore({
    s3Bucket: 'bench',
    s3Endpoint: endpoint,
    s3Region: 'us-east-1',
    s3Prefix: 'results',
    s3ForcePathStyle: true,
    upscaleResultLifetimeDays: 7,
    upload: shape,
  });
  // Above one part first: the SDK's modules are loaded, its client made and its sockets open before the baseline.
  await store.storeResult(warm, { taskId: `warm-${task}`, kind: 'image', ext: 'png' });
  global.gc?.();
  const baseline = process.memoryUsage().rss;
  let peak = baseline;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
  const started = process.hrtime.bigint();
  const cpu = process.cpuUsage();
  const stored = await store.storeResult(file, { taskId: task, kind: 'video', ext: 'mp4' });
  const storeSeconds = Number(process.hrtime.bigint() - started) / 1e9;
  const storeCpu = process.cpuUsage(cpu);
  clearInterval(sampler);
  const curl = await curlPut(file, `${endpoint}/bench/floor/${task}.mp4`);
  const curlSeconds = curl.seconds;
  return {
    rssBaselineMiB: Math.round(baseline / MiB),
    rssGrowthMiB: round((peak - baseline) / MiB, 1),
    storeSeconds: round(storeSeconds),
    storeMiBps: round(stored.size / MiB / storeSeconds, 1),
    // CPU time (user + system) is what a busy host stretches: the store's against curl's, per GiB.
    storeCpuSecondsPerGiB: round(((storeCpu.user + storeCpu.system) / 1e6) * (1024 / mb)),
    curlCpuSecondsPerGiB: round(curl.cpuSeconds * (1024 / mb)),
    curlPutSeconds: round(curlSeconds),
    curlMiBps: round(stored.size / MiB / curlSeconds, 1),
    ratio: round(curlSeconds / storeSeconds),
    sha256: stored.sha256,
  };
}

async function main(): Promise<void> {
  const dir = await mkdtemp(path.join(tmpdir(), 'storage-bench-'));
  const file = path.join(dir, 'result.mp4');
  await writeFile(file, mb);
  const warm = path.join(dir, 'warm.png');
  await writeFile(warm, 17);
  process.env['AWS_ACCESS_KEY_ID'] ??= 'S3RVER';
  process.env['AWS_SECRET_ACCESS_KEY'] ??= 'S3RVER';
  const s3rver = await startObjectStore(path.join(dir, 's3'), 'bench');
  const sink = await startS3Sink();
  try {
    // The store's own read of the file for its sha256 (part of storeSeconds), apart.
    const hashStarted = process.hrtime.bigint();
    await fileDigest(file);
    const sha256PassSeconds = round(Number(process.hrtime.bigint() - hashStarted) / 1e9);
    const intoSink = await measure(sink.endpoint, file, warm, 'sink');
    const intoS3rver = await measure(s3rver.endpoint, file, warm, 's3rver');
    console.log(
      JSON.stringify({
        fileMiB: mb,
        shape: {
          partMiB: (shape.partSize ?? 8 * MiB) / MiB,
          queue: shape.queueSize ?? 3,
        },
        sha256PassSeconds,
        s3rver: intoS3rver,
        sink: intoSink,
        loadAverage: os.loadavg().map((l) => round(l)),
      }),
    );
  } finally {
    s3rver.stop();
    sink.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
