/**
 * Signatures and expiry, checked: the bucket store and the upload-URL store against an S3 server of
 * our own that verifies every request's AWS Signature V4 (test/helpers/signing-s3-server.ts; s3rver
 * checks none), computed from the spec with node:crypto, not with the SDK's signer. A wrong secret
 * fails the store at once (the job's refund) with nothing at the key and no multipart upload left
 * open; an expired upload URL is refused and asked for again; an expired presigned GET is refused;
 * a PUT whose signed type, length or sha256 differ from the grant is refused.
 */
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ProcessingError } from '../../src/errors.js';
import { presignUpload } from '../../src/gateway/index.js';
import {
  openObjectStore,
  parseProtocolSettings,
  uploadUrlRequestSchema,
  type ObjectStore,
} from '../../src/protocol/index.js';
import { S3ResultStore } from '../../src/worker/s3-results.js';
import { UploadUrlResultStore } from '../../src/worker/upload-url-results.js';
import { SIGNING_TEST_CREDENTIALS, startSigningS3Server, type SigningS3Server } from '../helpers/signing-s3-server.js';
import { verifySigV4 } from '../helpers/sigv4.js';
import { startNatsServer, type TestNatsServer } from './helpers/nats-server.js';
import { REPO_ROOT, transpileForNode } from './helpers/transpile.js';

const BUCKET = 'signed-results';
let s3: SigningS3Server;
let nats: TestNatsServer;
let nc: NatsConnection;
let dir: string;
const saved = { id: process.env['AWS_ACCESS_KEY_ID'], secret: process.env['AWS_SECRET_ACCESS_KEY'] };

function setCredentials(id: string | undefined, secret: string | undefined): void {
  for (const [name, value] of [
    ['AWS_ACCESS_KEY_ID', id],
    ['AWS_SECRET_ACCESS_KEY', secret],
  ] as const) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
}

beforeAll(async () => {
  s3 = await startSigningS3Server({ buckets: [BUCKET] });
  nats = await startNatsServer();
  nc = await connect({ servers: nats.url });
  dir = await mkdtemp(path.join(tmpdir(), 's3-signatures-test-'));
});

afterAll(async () => {
  await nc?.close();
  await nats?.close();
  await s3?.close();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  setCredentials(saved.id, saved.secret);
});

let cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups) c();
  cleanups = [];
  setCredentials(SIGNING_TEST_CREDENTIALS.accessKeyId, SIGNING_TEST_CREDENTIALS.secretAccessKey);
});

async function file(name: string, bytes: Buffer): Promise<{ path: string; sha256: string }> {
  const p = path.join(dir, name);
  await writeFile(p, bytes);
  return { path: p, sha256: createHash('sha256').update(bytes).digest('hex') };
}

function bucketStore(): S3ResultStore {
  return new S3ResultStore({
    s3Bucket: BUCKET,
    s3Endpoint: s3.endpoint,
    s3Region: s3.region,
    s3Prefix: 'results',
    s3ForcePathStyle: true,
    upscaleResultLifetimeDays: 7,
    storeDeadlineMs: 20_000,
  });
}

function client(credentials = SIGNING_TEST_CREDENTIALS): S3Client {
  const c = new S3Client({ endpoint: s3.endpoint, region: s3.region, forcePathStyle: true, credentials });
  cleanups.push(() => c.destroy());
  return c;
}

const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex');
const outcomesSince = (from: number) => s3.judged.slice(from).map((j) => j.outcome);

describe('the signing test server', () => {
  // The examples of the S3 documentation ("Signature calculations for the Authorization header",
  // "Authenticating requests: using query parameters"): the server's arithmetic is the spec's.
  const example = { accessKeyId: 'AKIAIOSFODNN7EXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY' };
  const at = Date.UTC(2013, 4, 24);

  it("verifies the S3 documentation's header-signed GET, and refuses it with another secret or clock", () => {
    const request = {
      method: 'GET',
      target: '/test.txt',
      headers: {
        host: 'examplebucket.s3.amazonaws.com',
        range: 'bytes=0-9',
        'x-amz-content-sha256': 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
        'x-amz-date': '20130524T000000Z',
        authorization:
          'AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41',
      },
    };
    expect(verifySigV4(request, [example], 'us-east-1', at)).toMatchObject({ accessKeyId: example.accessKeyId });
    expect(verifySigV4(request, [{ ...example, secretAccessKey: 'wrong' }], 'us-east-1', at)).toMatchObject({
      code: 'SignatureDoesNotMatch',
    });
    const otherRange = { ...request, headers: { ...request.headers, range: 'bytes=0-10' } };
    expect(verifySigV4(otherRange, [example], 'us-east-1', at)).toMatchObject({ code: 'SignatureDoesNotMatch' });
    expect(verifySigV4(request, [example], 'us-east-1', at + 16 * 60_000)).toMatchObject({
      code: 'RequestTimeTooSkewed',
    });
    expect(verifySigV4(request, [], 'us-east-1', at)).toMatchObject({ code: 'InvalidAccessKeyId' });
  });

  it("verifies the S3 documentation's presigned GET until its X-Amz-Expires has passed", () => {
    const request = {
      method: 'GET',
      target:
        '/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404',
      headers: { host: 'examplebucket.s3.amazonaws.com' },
    };
    expect(verifySigV4(request, [example], 'us-east-1', at + 86_400_000)).toMatchObject({
      accessKeyId: example.accessKeyId,
      payloadHash: 'UNSIGNED-PAYLOAD',
    });
    expect(verifySigV4(request, [example], 'us-east-1', at + 86_401_000)).toMatchObject({
      code: 'AccessDenied',
      message: 'Request has expired',
    });
    const longer = { ...request, target: request.target.replace('X-Amz-Expires=86400', 'X-Amz-Expires=172800') };
    expect(verifySigV4(longer, [example], 'us-east-1', at + 86_401_000)).toMatchObject({
      code: 'SignatureDoesNotMatch',
    });
  });
});

describe('the bucket store against a server that checks signatures', () => {
  it('stores a small file and a multipart one, confirms and discards them, every request signed right', async () => {
    setCredentials(SIGNING_TEST_CREDENTIALS.accessKeyId, SIGNING_TEST_CREDENTIALS.secretAccessKey);
    const from = s3.judged.length;
    const store = bucketStore();
    expect(await store.reachable()).toBeNull();
    const small = await file('small.png', randomBytes(1000));
    const big = await file('big.mp4', randomBytes(17 * 1024 * 1024 + 3));
    expect(await store.storeResult(small.path, { taskId: 't_sig_small', kind: 'image', ext: 'png' })).toMatchObject({
      size: 1000,
      sha256: small.sha256,
    });
    expect(await store.storeResult(big.path, { taskId: 't_sig_big', kind: 'video', ext: 'mp4' })).toMatchObject({
      sha256: big.sha256,
    });
    const objects = s3.objects.get(BUCKET)!;
    expect(sha256(objects.get('results/video/t_sig_big/output.mp4')!.body)).toBe(big.sha256);
    expect(objects.get('results/video/t_sig_big/output.mp4')!.metadata).toEqual({ sha256: big.sha256 });
    // Three parts went up: the multipart path was signed, part by part, and checked.
    expect(s3.judged.slice(from).filter((j) => j.target.includes('partNumber='))).toHaveLength(3);
    await store.discard('t_sig_small');
    expect(objects.has('results/image/t_sig_small/output.png')).toBe(false);
    expect(new Set(outcomesSince(from))).toEqual(new Set(['ok']));
  });

  it('fails at once with a ProcessingError on a wrong secret key: nothing at the key, no multipart upload left open', async () => {
    setCredentials(SIGNING_TEST_CREDENTIALS.accessKeyId, 'not-the-secret');
    const from = s3.judged.length;
    const store = bucketStore();
    expect(await store.reachable()).toBe(`the results bucket ${BUCKET} refuses these credentials`);
    for (const [name, size, taskId] of [
      ['wrong.png', 100, 't_wrong_small'],
      ['wrong.mp4', 9 * 1024 * 1024, 't_wrong_big'],
    ] as const) {
      const f = await file(name, randomBytes(size));
      const started = Date.now();
      const err = await store.storeResult(f.path, { taskId, kind: 'video', ext: 'mp4' }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ProcessingError);
      expect((err as Error).message).toMatch(
        new RegExp(
          `Could not store the result video/${taskId}/output.mp4 \\(the store refused it\\): .*signature`,
          'i',
        ),
      );
      // Not the two minutes' deadline: a wrong key is not worth another try.
      expect(Date.now() - started).toBeLessThan(10_000);
      expect([...s3.objects.get(BUCKET)!.keys()].filter((k) => k.includes(taskId))).toEqual([]);
    }
    expect(s3.openUploads()).toBe(0);
    expect(new Set(outcomesSince(from))).toEqual(new Set(['SignatureDoesNotMatch']));
  });
});

describe('upload URLs and presigned GETs against a server that checks signatures and expiry', () => {
  let gatewayBucket: ObjectStore;
  const protocol = () =>
    parseProtocolSettings({
      resultsStore: 'upload-url',
      s3Bucket: BUCKET,
      s3Endpoint: s3.endpoint,
      s3Region: s3.region,
      s3Prefix: 'up',
      s3ForcePathStyle: 'true',
      publicBaseUrl: 'https://cdn.test/r/',
    });
  beforeAll(async () => {
    // The gateway's credentials: the worker's store reads none.
    setCredentials(SIGNING_TEST_CREDENTIALS.accessKeyId, SIGNING_TEST_CREDENTIALS.secretAccessKey);
    gatewayBucket = await openObjectStore(protocol());
  });
  afterAll(() => gatewayBucket?.client.destroy());

  it('an expired upload URL is refused by the server; the worker asks for a new one and stores the file', async () => {
    // (The environment's credentials are the gateway's presigning here; the upload-URL store reads none.)
    let asked = 0;
    const sub = nc.subscribe('media.uploads.sighost', {
      callback: (_err, msg) => {
        asked += 1;
        const request = uploadUrlRequestSchema.parse(msg.json());
        // The first grant was signed an hour ago for a minute: the server, not the worker, judges it expired.
        const how = asked === 1 ? { expiresIn: 60, signingDate: new Date(Date.now() - 3_600_000) } : { expiresIn: 60 };
        void presignUpload(gatewayBucket, protocol(), request, how).then((grant) => msg.respond(JSON.stringify(grant)));
      },
    });
    cleanups.push(() => sub.unsubscribe());
    const store = new UploadUrlResultStore({ upscaleResultLifetimeDays: 7, storeDeadlineMs: 20_000, stallMs: 5_000 });
    store.connect(nc, 'sighost');
    const from = s3.judged.length;
    const video = await file('up.mp4', randomBytes(2 * 1024 * 1024 + 1));
    const stored = await store.storeResult(video.path, { taskId: 't_up_sig', kind: 'video', ext: 'mp4' });
    expect(stored).toMatchObject({ key: 'video/t_up_sig/output.mp4', sha256: video.sha256 });
    expect(asked).toBe(2);
    expect(s3.judged.slice(from).map((j) => [j.method, j.presigned, j.outcome])).toEqual([
      ['PUT', true, 'AccessDenied'],
      ['PUT', true, 'ok'],
    ]);
    const object = s3.objects.get(BUCKET)!.get('up/video/t_up_sig/output.mp4')!;
    expect([sha256(object.body), object.contentType, object.metadata]).toEqual([
      video.sha256,
      'video/mp4',
      { sha256: video.sha256 },
    ]);
  });

  it("refuses a PUT to a grant's URL whose type, length or sha256 differ from what was signed", async () => {
    const body = randomBytes(500);
    const grant = await presignUpload(
      gatewayBucket,
      protocol(),
      {
        taskId: 't_forged',
        kind: 'image',
        name: 'output',
        ext: 'png',
        contentType: 'image/png',
        size: body.length,
        sha256: sha256(body),
      },
      { expiresIn: 60 },
    );
    const put = (headers: Record<string, string>, payload: Buffer) =>
      fetch(grant.url, { method: 'PUT', headers, body: payload }).then(async (r) => [r.status, await r.text()]);
    const forged = randomBytes(500);
    const refusals = [
      await put({ ...grant.headers, 'content-type': 'text/html' }, body),
      await put({ ...grant.headers, 'x-amz-meta-sha256': sha256(forged) }, forged),
      await put(grant.headers, Buffer.concat([body, Buffer.from('more')])),
    ];
    for (const [status, text] of refusals) {
      expect(status).toBe(403);
      expect(text).toContain('<Code>SignatureDoesNotMatch</Code>');
    }
    expect(s3.objects.get(BUCKET)!.has('up/image/t_forged/output.png')).toBe(false);
    expect((await put(grant.headers, body))[0]).toBe(200);
  });

  it('serves a presigned GET (with a range) until it expires, and refuses it after', async () => {
    setCredentials(SIGNING_TEST_CREDENTIALS.accessKeyId, SIGNING_TEST_CREDENTIALS.secretAccessKey);
    const bytes = randomBytes(4096);
    s3.objects
      .get(BUCKET)!
      .set('results/music/t_get/song-1.mp3', { body: bytes, contentType: 'audio/mpeg', metadata: {} });
    const c = client();
    const command = new GetObjectCommand({ Bucket: BUCKET, Key: 'results/music/t_get/song-1.mp3' });
    const fresh = await getSignedUrl(c, command, { expiresIn: 600 });
    const whole = await fetch(fresh);
    expect([whole.status, sha256(Buffer.from(await whole.arrayBuffer()))]).toEqual([200, sha256(bytes)]);
    const part = await fetch(fresh, { headers: { range: 'bytes=10-19' } });
    expect([part.status, part.headers.get('content-range')]).toEqual([206, 'bytes 10-19/4096']);
    expect(Buffer.from(await part.arrayBuffer())).toEqual(bytes.subarray(10, 20));

    const expired = await getSignedUrl(c, command, {
      expiresIn: 600,
      signingDate: new Date(Date.now() - 601_000),
    });
    const refused = await fetch(expired);
    expect(refused.status).toBe(403);
    expect(await refused.text()).toMatch(/<Code>AccessDenied<\/Code><Message>Request has expired<\/Message>/);
    // Signed by a key the server does not hold: refused too, and the SDK's own GET says why.
    const wrong = client({ ...SIGNING_TEST_CREDENTIALS, secretAccessKey: 'not-the-secret' });
    await expect(wrong.send(command)).rejects.toMatchObject({ name: 'SignatureDoesNotMatch' });
  });
});

describe('a host lost while storing (kill points, src/worker/kill-point.ts)', () => {
  /** Stores `file` for `taskId` in a process of its own that SIGKILLs itself at `point`; resolves with how it ended. */
  async function storeInProcess(point: string, filePath: string, taskId: string): Promise<string> {
    const fixture = await transpileForNode(path.join(REPO_ROOT, 'test/worker/fixtures/store-result.ts'));
    cleanups.push(() => void fixture.cleanup());
    const child = spawn(process.execPath, [fixture.entry], {
      env: {
        ...process.env,
        ...s3.env(BUCKET, 'results'),
        MEDIA_WORKER_TEST_KILL_AT: point,
        STORE_FILE: filePath,
        STORE_TASK: taskId,
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    return new Promise((resolve) => child.once('exit', (code, signal) => resolve(signal ?? String(code))));
  }

  it('killed mid-multipart: the upload left open, nothing at the key; the redelivery stores it whole', async () => {
    const big = await file('lost.mp4', randomBytes(12 * 1024 * 1024));
    const key = 'results/video/t_lost_mid/output.mp4';
    const open = s3.openUploads();
    expect(await storeInProcess('multipart', big.path, 't_lost_mid')).toBe('SIGKILL');
    expect(s3.objects.get(BUCKET)!.has(key)).toBe(false);
    // Left for the bucket's AbortIncompleteMultipartUpload rule (docs/results-storage.md): never linked.
    expect(s3.openUploads()).toBe(open + 1);

    setCredentials(SIGNING_TEST_CREDENTIALS.accessKeyId, SIGNING_TEST_CREDENTIALS.secretAccessKey);
    const again = await bucketStore().storeResult(big.path, { taskId: 't_lost_mid', kind: 'video', ext: 'mp4' });
    expect(again.sha256).toBe(big.sha256);
    expect(sha256(s3.objects.get(BUCKET)!.get(key)!.body)).toBe(big.sha256);
  });

  it('killed after the stored copy is confirmed, before any event: the object is whole at its key, and a redelivery replaces it', async () => {
    const big = await file('stored.mp4', randomBytes(6 * 1024 * 1024 + 9));
    const key = 'results/video/t_lost_stored/output.mp4';
    expect(await storeInProcess('stored', big.path, 't_lost_stored')).toBe('SIGKILL');
    expect(sha256(s3.objects.get(BUCKET)!.get(key)!.body)).toBe(big.sha256);
    const again = await bucketStore().storeResult(big.path, { taskId: 't_lost_stored', kind: 'video', ext: 'mp4' });
    expect(again.sha256).toBe(big.sha256);
    expect([...s3.objects.get(BUCKET)!.keys()].filter((k) => k.includes('t_lost_stored'))).toEqual([key]);
  });
});
