/**
 * The bucket store (RESULTS_STORE=s3) against a real S3-compatible server (s3rver, started here)
 * and a proxy that breaks requests as stores and networks do: a file is stored at its fixed key
 * whole (in parts when large), confirmed by a HEAD, and what cannot be stored within the deadline
 * fails with a ProcessingError (the job's refund) with its multipart upload aborted.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { GetObjectCommand, HeadObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ProcessingError } from '../../src/errors.js';
import { S3ResultStore, type S3ResultStoreSettings } from '../../src/worker/s3-results.js';
import {
  S3_TEST_CREDENTIALS,
  closedPort,
  faultProxy,
  startS3Server,
  type FaultProxy,
  type S3TestServer,
} from '../helpers/s3-server.js';

const BUCKET = 'media-results';
let s3: S3TestServer;
let proxy: FaultProxy;
let dir: string;
let reader: S3Client;
const saved = { id: process.env['AWS_ACCESS_KEY_ID'], secret: process.env['AWS_SECRET_ACCESS_KEY'] };

beforeAll(async () => {
  s3 = await startS3Server([BUCKET]);
  dir = await mkdtemp(path.join(tmpdir(), 's3-results-test-'));
  // The store takes the SDK's default credential chain, as on a host: here the environment.
  process.env['AWS_ACCESS_KEY_ID'] = S3_TEST_CREDENTIALS.accessKeyId;
  process.env['AWS_SECRET_ACCESS_KEY'] = S3_TEST_CREDENTIALS.secretAccessKey;
  reader = new S3Client({
    endpoint: s3.endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: S3_TEST_CREDENTIALS,
  });
});

afterAll(async () => {
  reader?.destroy();
  await s3?.close();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  restoreEnv('AWS_ACCESS_KEY_ID', saved.id);
  restoreEnv('AWS_SECRET_ACCESS_KEY', saved.secret);
});

afterEach(async () => {
  await proxy?.close();
});

function restoreEnv(name: string, value: string | undefined): void {
  if (value === undefined) delete process.env[name];
  else process.env[name] = value;
}

async function store(options: Partial<S3ResultStoreSettings> = {}): Promise<S3ResultStore> {
  proxy = await faultProxy(s3.endpoint);
  return new S3ResultStore({
    s3Bucket: BUCKET,
    s3Endpoint: proxy.url,
    s3Region: 'us-east-1',
    s3Prefix: 'results',
    s3ForcePathStyle: true,
    upscaleResultLifetimeDays: 7,
    storeDeadlineMs: 20_000,
    client: { requestTimeoutMs: 2_000 },
    ...options,
  });
}

async function file(name: string, bytes: Buffer): Promise<{ path: string; sha256: string }> {
  const p = path.join(dir, name);
  await writeFile(p, bytes);
  return { path: p, sha256: createHash('sha256').update(bytes).digest('hex') };
}

async function storedBytes(key: string): Promise<Buffer> {
  const got = await reader.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
  return Buffer.from(await got.Body!.transformToByteArray());
}

async function exists(key: string): Promise<boolean> {
  return reader.send(new HeadObjectCommand({ Bucket: BUCKET, Key: key })).then(
    () => true,
    () => false,
  );
}

const partRequests = (p: FaultProxy) => p.seen.filter((r) => r.method === 'PUT' && r.url.includes('partNumber='));
const aborts = (p: FaultProxy) => p.seen.filter((r) => r.method === 'DELETE' && r.url.includes('uploadId='));

describe('the bucket store', () => {
  it('stores a file at its fixed key, confirmed, and names it under RESULTS_BASE_URL or s3://', async () => {
    const results = await store();
    const png = await file('small.png', randomBytes(1000));
    const stored = await results.storeResult(png.path, { taskId: 't_small', kind: 'image', ext: 'png' });
    expect(stored).toMatchObject({
      key: 'image/t_small/output.png',
      url: 's3://media-results/results/image/t_small/output.png',
      size: 1000,
      sha256: png.sha256,
    });
    const head = await reader.send(new HeadObjectCommand({ Bucket: BUCKET, Key: 'results/image/t_small/output.png' }));
    expect(head).toMatchObject({ ContentLength: 1000, ContentType: 'image/png', Metadata: { sha256: png.sha256 } });

    const withBase = new S3ResultStore({
      s3Bucket: BUCKET,
      s3Endpoint: s3.endpoint,
      s3Region: 'us-east-1',
      s3Prefix: '',
      s3ForcePathStyle: true,
      upscaleResultLifetimeDays: 7,
      publicBaseUrl: 'https://cdn.test/r/',
    });
    const song = await file('song.mp3', randomBytes(10));
    expect(
      await withBase.storeResult(song.path, { taskId: 't_m', kind: 'music', ext: 'mp3', name: 'song-1' }),
    ).toMatchObject({ key: 'music/t_m/song-1.mp3', url: 'https://cdn.test/r/music/t_m/song-1.mp3' });
    expect(await exists('music/t_m/song-1.mp3')).toBe(true);
  });

  it('uploads a large file in parts and stores it again at the same key when a job is redelivered', async () => {
    const results = await store();
    const big = await file('big.mp4', randomBytes(20 * 1024 * 1024 + 5));
    const stored = await results.storeResult(big.path, { taskId: 't_big', kind: 'video', ext: 'mp4' });
    expect(stored).toMatchObject({ size: 20 * 1024 * 1024 + 5, sha256: big.sha256 });
    expect(partRequests(proxy)).toHaveLength(3);
    expect(
      createHash('sha256')
        .update(await storedBytes('results/video/t_big/output.mp4'))
        .digest('hex'),
    ).toBe(big.sha256);

    const again = await file('again.mp4', randomBytes(300));
    await results.storeResult(again.path, { taskId: 't_big', kind: 'video', ext: 'mp4' });
    const listed = await reader.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: 'results/video/t_big/' }));
    expect(listed.Contents?.map((o) => [o.Key, o.Size])).toEqual([['results/video/t_big/output.mp4', 300]]);
  });

  it('rides out 503s, a connection reset mid-upload and a stalled request', async () => {
    const results = await store();
    const big = await file('faults.mp4', randomBytes(17 * 1024 * 1024));
    // More 503s than the SDK's own tries: the store's retry takes over.
    proxy.inject('unavailable', 4, (req) => req.method === 'POST' && (req.url ?? '').includes('uploads'));
    proxy.inject('reset', 1, (req) => req.method === 'PUT' && (req.url ?? '').includes('partNumber=2'));
    proxy.inject('stall', 1, (req) => req.method === 'PUT' && (req.url ?? '').includes('partNumber=3'));
    const stored = await results.storeResult(big.path, { taskId: 't_faults', kind: 'video', ext: 'mp4' });
    expect(stored.sha256).toBe(big.sha256);
    const faults = proxy.seen.filter((r) => r.fault !== undefined).map((r) => r.fault);
    // The 503s answer the upload's creation, before any part; parts 2 and 3 go up at once, so which
    // of their faults the proxy meets first is the network's choice: each once, in either order.
    expect(faults.slice(0, 4)).toEqual(['unavailable', 'unavailable', 'unavailable', 'unavailable']);
    expect(faults.slice(4).sort()).toEqual(['reset', 'stall']);
    expect(
      createHash('sha256')
        .update(await storedBytes('results/video/t_faults/output.mp4'))
        .digest('hex'),
    ).toBe(big.sha256);
  });

  it('fails at once, with a ProcessingError, on a missing bucket and on credentials the store refuses', async () => {
    const png = await file('refused.png', randomBytes(100));
    const missing = await store({ s3Bucket: 'no-such-bucket' });
    const err = await missing
      .storeResult(png.path, { taskId: 't_nobucket', kind: 'image', ext: 'png' })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProcessingError);
    expect((err as Error).message).toMatch(
      /Could not store the result image\/t_nobucket\/output.png \(the store refused it\).*bucket/i,
    );
    await proxy.close();

    process.env['AWS_ACCESS_KEY_ID'] = 'NOT-A-KEY';
    try {
      const wrong = await store();
      await expect(wrong.storeResult(png.path, { taskId: 't_creds', kind: 'image', ext: 'png' })).rejects.toThrow(
        /the store refused it.*Access Key/i,
      );
    } finally {
      process.env['AWS_ACCESS_KEY_ID'] = S3_TEST_CREDENTIALS.accessKeyId;
    }
    expect(await exists('results/image/t_creds/output.png')).toBe(false);
  });

  it('tells readiness whether the bucket is there and the credentials pass', async () => {
    expect(await (await store()).reachable()).toBeNull();
    await proxy.close();
    expect(await (await store({ s3Bucket: 'no-such-bucket' })).reachable()).toBe(
      'the results bucket no-such-bucket does not exist',
    );
    await proxy.close();
    const down = new S3ResultStore({
      s3Bucket: BUCKET,
      s3Endpoint: `http://127.0.0.1:${await closedPort()}`,
      s3Region: 'us-east-1',
      s3Prefix: 'results',
      s3ForcePathStyle: true,
      upscaleResultLifetimeDays: 7,
      client: { maxAttempts: 1 },
    });
    expect(await down.reachable()).toMatch(/^the results bucket media-results cannot be reached/);
  });

  it('gives up within its deadline on a store that is down, and on one that resets every part, aborting the multipart upload', async () => {
    const png = await file('down.png', randomBytes(100));
    const down = new S3ResultStore({
      s3Bucket: BUCKET,
      s3Endpoint: `http://127.0.0.1:${await closedPort()}`,
      s3Region: 'us-east-1',
      s3Prefix: 'results',
      s3ForcePathStyle: true,
      upscaleResultLifetimeDays: 7,
      storeDeadlineMs: 1_000,
    });
    await expect(down.storeResult(png.path, { taskId: 't_down', kind: 'image', ext: 'png' })).rejects.toThrow(
      /Could not store the result image\/t_down\/output.png \(still failing after \d+ tries/,
    );

    const resets = await store({ storeDeadlineMs: 1_000 });
    const big = await file('resets.mp4', randomBytes(9 * 1024 * 1024));
    proxy.inject('reset', 1_000, (req) => req.method === 'PUT' && (req.url ?? '').includes('partNumber='));
    await expect(
      resets.storeResult(big.path, { taskId: 't_resets', kind: 'video', ext: 'mp4' }),
    ).rejects.toBeInstanceOf(ProcessingError);
    // Every multipart upload begun was aborted, and nothing is at the key.
    const begun = proxy.seen.filter((r) => r.method === 'POST' && r.url.includes('uploads')).length;
    expect(begun).toBeGreaterThan(0);
    expect(aborts(proxy)).toHaveLength(begun);
    expect(await exists('results/video/t_resets/output.mp4')).toBe(false);
  });

  it('stops an upload when the job is stopped and aborts it; discard removes what a task stored', async () => {
    const results = await store({ client: { requestTimeoutMs: 1_000, maxAttempts: 1 } });
    const big = await file('stopped.mp4', randomBytes(9 * 1024 * 1024));
    proxy.inject('stall', 1_000, (req) => req.method === 'PUT' && (req.url ?? '').includes('partNumber='));
    const controller = new AbortController();
    const storing = results.storeResult(
      big.path,
      { taskId: 't_stopped', kind: 'video', ext: 'mp4' },
      controller.signal,
    );
    await waitUntil(() => proxy.seen.some((r) => r.fault === 'stall'));
    controller.abort(new Error('cancelled'));
    await expect(storing).rejects.toThrow();
    await waitUntil(() => aborts(proxy).length === 1);
    expect(await exists('results/video/t_stopped/output.mp4')).toBe(false);

    const png = await file('discard.png', randomBytes(10));
    await results.storeResult(png.path, { taskId: 't_discard', kind: 'image', ext: 'png' });
    expect(await exists('results/image/t_discard/output.png')).toBe(true);
    await results.discard('t_discard');
    expect(await exists('results/image/t_discard/output.png')).toBe(false);
  });
});

async function waitUntil(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 20));
}
