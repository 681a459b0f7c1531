/**
 * What storing a large result costs the worker (issue 59, docs/storage-benchmarks.md): a file of
 * --mb MiB stored with the bucket store (RESULTS_STORE=s3: sha256 pass, multipart upload streamed
 * in 8 MiB parts, HEAD) into s3rver running in a child process, this process's RSS sampled every
 * 20 ms; then the floor, curl's PUT of the same file to the same server. Prints one JSON line.
 *
 *   npm run build && node dist/scripts/storage-upload-bench.js --mb 1024
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { once } from 'node:events';
import { fileDigest } from '../src/media/index.js';
import { S3ResultStore } from '../src/worker/index.js';
import { startObjectStore } from './chaos/object-store.js';

const mb = Number(process.argv[process.argv.indexOf('--mb') + 1] ?? 1024) || 1024;
const MiB = 1024 * 1024;

async function writeFile(file: string, sizeMb: number): Promise<void> {
  const block = randomBytes(16 * MiB);
  const out = createWriteStream(file);
  for (let written = 0; written < sizeMb * MiB; written += block.length) {
    if (!out.write(block.subarray(0, Math.min(block.length, sizeMb * MiB - written)))) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
}

function curlPut(file: string, url: string): Promise<number> {
  const started = process.hrtime.bigint();
  const child = spawn('curl', ['-sS', '-f', '-o', '/dev/null', '-T', file, url], { stdio: 'inherit' });
  return new Promise((resolve, reject) => {
    child.on('exit', (code) =>
      code === 0 ? resolve(Number(process.hrtime.bigint() - started) / 1e9) : reject(new Error(`curl exited ${code}`)),
    );
  });
}

async function main(): Promise<void> {
  const dir = await mkdtemp(path.join(tmpdir(), 'storage-bench-'));
  const file = path.join(dir, 'result.mp4');
  await writeFile(file, mb);
  // In a child process: the server's buffers are not counted in this process's RSS.
  const server = await startObjectStore(path.join(dir, 's3'), 'bench');
  try {
    process.env['AWS_ACCESS_KEY_ID'] ??= 'S3RVER';
    process.env['AWS_SECRET_ACCESS_KEY'] ??= 'S3RVER';
    const store = new S3ResultStore({
      s3Bucket: 'bench',
      s3Endpoint: server.endpoint,
      s3Region: 'us-east-1',
      s3Prefix: 'results',
      s3ForcePathStyle: true,
      upscaleResultLifetimeDays: 7,
    });
    // A small store first: the SDK's modules are loaded and the client made before the baseline.
    const warm = path.join(dir, 'warm.png');
    // Above one part: the multipart path's code is loaded and its sockets open before the baseline.
    await writeFile(warm, 17);
    await store.storeResult(warm, { taskId: 'warm', kind: 'image', ext: 'png' });
    global.gc?.();
    const baseline = process.memoryUsage().rss;
    let peak = baseline;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
    const started = process.hrtime.bigint();
    const stored = await store.storeResult(file, { taskId: 'big', kind: 'video', ext: 'mp4' });
    const storeSeconds = Number(process.hrtime.bigint() - started) / 1e9;
    clearInterval(sampler);
    const curlSeconds = await curlPut(file, `${server.endpoint}/bench/floor/result.mp4`);
    // The store's own read of the file for its sha256 (part of storeSeconds), apart.
    const hashStarted = process.hrtime.bigint();
    await fileDigest(file);
    const hashSeconds = Number(process.hrtime.bigint() - hashStarted) / 1e9;
    const mbps = (s: number) => Math.round((stored.size / MiB / s) * 10) / 10;
    console.log(
      JSON.stringify({
        fileMiB: mb,
        rssBaselineMiB: Math.round(baseline / MiB),
        rssGrowthMiB: Math.round(((peak - baseline) / MiB) * 10) / 10,
        storeSeconds: Math.round(storeSeconds * 100) / 100,
        storeMiBps: mbps(storeSeconds),
        sha256PassSeconds: Math.round(hashSeconds * 100) / 100,
        curlPutSeconds: Math.round(curlSeconds * 100) / 100,
        curlMiBps: mbps(curlSeconds),
        ratio: Math.round((curlSeconds / storeSeconds) * 100) / 100,
        ratioWithoutSha256Pass: Math.round((curlSeconds / (storeSeconds - hashSeconds)) * 100) / 100,
        sha256: stored.sha256,
      }),
    );
  } finally {
    server.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
