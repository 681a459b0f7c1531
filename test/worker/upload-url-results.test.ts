/**
 * The upload-URL store (RESULTS_STORE=upload-url): the worker holds no storage credentials; it asks
 * over NATS (a real nats-server) for a URL per file, answered here by the gateway's own presigning
 * (presignUpload) against a real S3-compatible server behind a proxy that refuses expired URLs as
 * S3 does and breaks requests on demand. An expired URL is asked for again; 503s and a reset PUT are
 * tried again; a refusal fails at once.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { GetObjectCommand, HeadObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ProcessingError } from '../../src/errors.js';
import { presignUpload } from '../../src/gateway/index.js';
import {
  openObjectStore,
  parseProtocolSettings,
  uploadUrlRequestSchema,
  type ObjectStore,
  type UploadUrlReply,
} from '../../src/protocol/index.js';
import { UploadUrlResultStore } from '../../src/worker/upload-url-results.js';
import {
  S3_TEST_CREDENTIALS,
  faultProxy,
  presignedExpired,
  startS3Server,
  type FaultProxy,
  type S3TestServer,
} from '../helpers/s3-server.js';
import { startNatsServer, type TestNatsServer } from './helpers/nats-server.js';

const BUCKET = 'presigned-results';
let s3: S3TestServer;
let nats: TestNatsServer;
let nc: NatsConnection;
let proxy: FaultProxy;
let bucket: ObjectStore;
let dir: string;
let reader: S3Client;
const saved = { id: process.env['AWS_ACCESS_KEY_ID'], secret: process.env['AWS_SECRET_ACCESS_KEY'] };

beforeAll(async () => {
  s3 = await startS3Server([BUCKET]);
  proxy = await faultProxy(s3.endpoint);
  nats = await startNatsServer();
  nc = await connect({ servers: nats.url });
  dir = await mkdtemp(path.join(tmpdir(), 'upload-url-test-'));
  // The control plane's credentials (this test plays the gateway); the worker's store reads none.
  process.env['AWS_ACCESS_KEY_ID'] = S3_TEST_CREDENTIALS.accessKeyId;
  process.env['AWS_SECRET_ACCESS_KEY'] = S3_TEST_CREDENTIALS.secretAccessKey;
  bucket = await openObjectStore(gatewayProtocol());
  reader = new S3Client({
    endpoint: s3.endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: S3_TEST_CREDENTIALS,
  });
});

afterAll(async () => {
  reader?.destroy();
  bucket?.client.destroy();
  await nc?.close();
  await nats?.close();
  await proxy?.close();
  await s3?.close();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  for (const [name, value] of [
    ['AWS_ACCESS_KEY_ID', saved.id],
    ['AWS_SECRET_ACCESS_KEY', saved.secret],
  ] as const) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
});

let unsubscribe: (() => void) | undefined;
afterEach(() => unsubscribe?.());

function gatewayProtocol() {
  return parseProtocolSettings({
    resultsStore: 'upload-url',
    s3Bucket: BUCKET,
    s3Endpoint: proxy.url,
    s3Region: 'us-east-1',
    s3Prefix: 'up',
    s3ForcePathStyle: 'true',
    publicBaseUrl: 'https://cdn.test/r/',
  });
}

/** A control plane answering `media.uploads.host1`: `answer(n)` decides the n-th reply (1-based). */
function controlPlane(
  answer: (n: number, request: ReturnType<typeof uploadUrlRequestSchema.parse>) => Promise<UploadUrlReply>,
): { asked: number } {
  const seen = { asked: 0 };
  const sub = nc.subscribe('media.uploads.host1', {
    callback: (_err, msg) => {
      seen.asked += 1;
      const request = uploadUrlRequestSchema.parse(msg.json());
      void answer(seen.asked, request).then((reply) => msg.respond(JSON.stringify(reply)));
    },
  });
  unsubscribe = () => sub.unsubscribe();
  return seen;
}

function store(): UploadUrlResultStore {
  const s = new UploadUrlResultStore({ upscaleResultLifetimeDays: 7, storeDeadlineMs: 20_000, stallMs: 2_000 });
  s.connect(nc, 'host1');
  return s;
}

async function file(name: string, bytes: Buffer): Promise<{ path: string; sha256: string }> {
  const p = path.join(dir, name);
  await writeFile(p, bytes);
  return { path: p, sha256: createHash('sha256').update(bytes).digest('hex') };
}

const HOUR_AGO = () => new Date(Date.now() - 60 * 60 * 1000);

describe('the upload-URL store', () => {
  it('PUTs the file to the URL it was given, asks again when the URL has expired, and names the file as the control plane says', async () => {
    const asked = controlPlane((n, request) =>
      presignUpload(
        bucket,
        gatewayProtocol(),
        request,
        n === 1 ? { expiresIn: 60, signingDate: HOUR_AGO() } : { expiresIn: 60 },
      ),
    );
    const video = await file('out.mp4', randomBytes(3 * 1024 * 1024 + 7));
    const stored = await store().storeResult(video.path, { taskId: 't_up', kind: 'video', ext: 'mp4' });
    expect(stored).toMatchObject({
      key: 'video/t_up/output.mp4',
      url: 'https://cdn.test/r/video/t_up/output.mp4',
      size: 3 * 1024 * 1024 + 7,
      sha256: video.sha256,
    });
    expect(asked.asked).toBe(2);
    expect(proxy.seen.filter((r) => r.method === 'PUT').map((r) => r.fault ?? 'stored')).toEqual(['expired', 'stored']);
    const head = await reader.send(new HeadObjectCommand({ Bucket: BUCKET, Key: 'up/video/t_up/output.mp4' }));
    expect(head).toMatchObject({
      ContentLength: 3 * 1024 * 1024 + 7,
      ContentType: 'video/mp4',
      Metadata: { sha256: video.sha256 },
    });
    const got = await reader.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'up/video/t_up/output.mp4' }));
    expect(
      createHash('sha256')
        .update(Buffer.from(await got.Body!.transformToByteArray()))
        .digest('hex'),
    ).toBe(video.sha256);
  });

  it('tries a PUT again after 503s and a reset, and the URL again when the control plane cannot answer for a moment', async () => {
    proxy.seen.length = 0;
    const asked = controlPlane((n, request) =>
      n === 1
        ? Promise.resolve({ error: { code: 'UPLOAD_UNAVAILABLE', message: 'not now' } })
        : presignUpload(bucket, gatewayProtocol(), request, { expiresIn: 60 }),
    );
    proxy.inject('unavailable', 2, (req) => req.method === 'PUT');
    proxy.inject('reset', 1, (req) => req.method === 'PUT');
    const png = await file('faults.png', randomBytes(200_000));
    const stored = await store().storeResult(png.path, { taskId: 't_faulty', kind: 'image', ext: 'png' });
    expect(stored.sha256).toBe(png.sha256);
    expect(asked.asked).toBe(2);
    expect(proxy.seen.filter((r) => r.method === 'PUT').map((r) => r.fault ?? 'stored')).toEqual([
      'unavailable',
      'unavailable',
      'reset',
      'stored',
    ]);
  });

  it('fails at once, with a ProcessingError, when the control plane refuses', async () => {
    const asked = controlPlane(() =>
      Promise.resolve({ error: { code: 'UPLOAD_REFUSED', message: 'Expected a task whose claim host host1 holds' } }),
    );
    const png = await file('refused.png', randomBytes(10));
    const err = await store()
      .storeResult(png.path, { taskId: 't_other', kind: 'image', ext: 'png' })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProcessingError);
    expect((err as Error).message).toMatch(/the store refused it.*host1 holds/);
    expect(asked.asked).toBe(1);
  });

  it("judges a presigned URL's expiry as S3 does", () => {
    const at = (iso: string) => iso.replace(/[-:]/g, '').replace(/\.\d{3}/, '');
    expect(
      presignedExpired(
        `/b/k?X-Amz-Date=${at('2026-01-01T00:00:00.000Z')}&X-Amz-Expires=60`,
        Date.parse('2026-01-01T00:00:59Z'),
      ),
    ).toBe(false);
    expect(
      presignedExpired(
        `/b/k?X-Amz-Date=${at('2026-01-01T00:00:00.000Z')}&X-Amz-Expires=60`,
        Date.parse('2026-01-01T00:01:01Z'),
      ),
    ).toBe(true);
    expect(presignedExpired('/b/k', 0)).toBeNull();
  });
});
