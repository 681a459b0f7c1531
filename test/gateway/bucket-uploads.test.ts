/**
 * Customer uploads in the results bucket (bucket-upload-store.ts) against a real S3-compatible
 * server (s3rver over HTTP): the PUT lands at the fixed key with its type and sha256, an account's
 * usage is its own unexpired objects, and the sweep removes only the expired ones; and against the
 * project's signing server, every one of those requests carries a valid SigV4 signature. (Neither
 * server checks Content-MD5; the route's refusals, before anything is put, are in the e2e.)
 */
import { createHash } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { GetObjectCommand, HeadObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  bucketAccountUsage,
  putUpload,
  sweepBucketUploads,
  uploadKey,
} from '../../src/gateway/http/bucket-upload-store.js';
import type { ObjectStore } from '../../src/protocol/index.js';
import { S3_TEST_CREDENTIALS, startS3Server, type S3TestServer } from '../helpers/s3-server.js';
import { SIGNING_TEST_CREDENTIALS, startSigningS3Server } from '../helpers/signing-s3-server.js';

const BUCKET = 'uploads-test';
const ACCOUNT = 'acct_0123456789abcdef';
const OTHER = 'acct_fedcba9876543210';
const DAY = 24 * 60 * 60 * 1000;
let s3: S3TestServer;
let store: ObjectStore;
let dir: string;

beforeAll(async () => {
  s3 = await startS3Server([BUCKET]);
  dir = await mkdtemp(path.join(tmpdir(), 'bucket-uploads-'));
  const client = new S3Client({
    endpoint: s3.endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: S3_TEST_CREDENTIALS,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
  store = { client, bucket: BUCKET, prefix: 'media' };
});
afterAll(async () => {
  store?.client.destroy();
  await s3?.close();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

async function fileOf(bytes: Buffer): Promise<{ file: string; sha256: string; md5: string }> {
  const file = path.join(dir, `f-${Math.random().toString(36).slice(2)}`);
  await writeFile(file, bytes);
  return {
    file,
    sha256: createHash('sha256').update(bytes).digest('hex'),
    md5: createHash('md5').update(bytes).digest('base64'),
  };
}

async function keys(prefix: string): Promise<string[]> {
  const page = await store.client.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: prefix }));
  return (page.Contents ?? []).map((o) => o.Key ?? '').sort();
}

describe('uploads in the bucket', () => {
  it('puts the file at <prefix>/uploads/<account>/<id>.<ext> with its type and sha256', async () => {
    const bytes = Buffer.from('not really a png, the store does not judge');
    const { file, sha256, md5 } = await fileOf(bytes);
    const key = uploadKey(store, ACCOUNT, 'u_first.png');
    expect(key).toBe(`media/uploads/${ACCOUNT}/u_first.png`);
    await putUpload(store, file, key, { size: bytes.length, sha256, md5, contentType: 'image/png' });
    const head = await store.client.send(new HeadObjectCommand({ Bucket: BUCKET, Key: key }));
    expect([head.ContentLength, head.ContentType, head.Metadata?.['sha256']]).toEqual([
      bytes.length,
      'image/png',
      sha256,
    ]);
    const got = await store.client.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
    expect(Buffer.from(await got.Body!.transformToByteArray())).toEqual(bytes);
  });

  it("counts an account's own unexpired objects, and the sweep deletes only the expired ones", async () => {
    const sizes = [1000, 2345];
    for (const [i, size] of sizes.entries()) {
      const bytes = Buffer.alloc(size, i);
      const { file, sha256, md5 } = await fileOf(bytes);
      await putUpload(store, file, uploadKey(store, OTHER, `u_other${i}.mp4`), {
        size,
        sha256,
        md5,
        contentType: 'video/mp4',
      });
    }
    const now = Date.now();
    expect(await bucketAccountUsage(store, OTHER, DAY, now)).toEqual({ bytes: 3345, files: 2 });
    // The first test's object is the other account's: not counted here.
    expect((await bucketAccountUsage(store, ACCOUNT, DAY, now)).files).toBe(1);
    // A day later every object is past a day's lifetime: counted for nothing, then swept.
    expect(await bucketAccountUsage(store, OTHER, DAY, now + DAY + 1000)).toEqual({ bytes: 0, files: 0 });
    expect(await sweepBucketUploads(store, DAY, now)).toBe(0);
    expect(await keys('media/uploads/')).toHaveLength(3);
    expect(await sweepBucketUploads(store, DAY, now + DAY + 1000)).toBe(3);
    expect(await keys('media/uploads/')).toEqual([]);
  });

  it('leaves keys outside the uploads folder to the results lifecycle', async () => {
    const { file, sha256, md5 } = await fileOf(Buffer.from('a result'));
    const key = 'media/image/t_0123/output.png';
    await putUpload(store, file, key, { size: 8, sha256, md5, contentType: 'image/png' });
    expect(await sweepBucketUploads(store, DAY, Date.now() + 30 * DAY)).toBe(0);
    expect(await keys('media/image/')).toEqual([key]);
  });
});

describe('uploads in a bucket that checks every signature', () => {
  it('signs the put, its HEAD, the listing and the deletes as the store verifies them', async () => {
    const signing = await startSigningS3Server({ buckets: [BUCKET] });
    const client = new S3Client({
      endpoint: signing.endpoint,
      region: signing.region,
      forcePathStyle: true,
      credentials: SIGNING_TEST_CREDENTIALS,
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    });
    const signed: ObjectStore = { client, bucket: BUCKET, prefix: 'media' };
    try {
      const bytes = Buffer.alloc(70_000, 7);
      const { file, sha256, md5 } = await fileOf(bytes);
      const key = uploadKey(signed, ACCOUNT, 'u_signed.mp4');
      await putUpload(signed, file, key, { size: bytes.length, sha256, md5, contentType: 'video/mp4' });
      expect(signing.objects.get(BUCKET)?.get(key)?.body.equals(bytes)).toBe(true);
      const now = Date.now();
      expect(await bucketAccountUsage(signed, ACCOUNT, DAY, now)).toEqual({ bytes: 70_000, files: 1 });
      expect(await sweepBucketUploads(signed, DAY, now + DAY + 1000)).toBe(1);
      expect(signing.objects.get(BUCKET)?.size).toBe(0);
      expect(signing.judged.map((j) => `${j.method} ${j.outcome}`)).toEqual([
        'PUT ok',
        'HEAD ok',
        'GET ok',
        'GET ok',
        'DELETE ok',
      ]);
    } finally {
      client.destroy();
      await signing.close();
    }
  });
});
