/**
 * Customer uploads in the results bucket end to end (issue 59 item 3): the shipped `serve` and
 * `gateway` with RESULTS_STORE=s3 on a real S3-compatible server (s3rver) and GATEWAY_UPLOADS=true.
 * An upload is checked as on disk, then put at `<prefix>/uploads/<account>/<id>.<ext>` and nothing
 * stays on the gateway's disk; its signed link streams it from the bucket; a job whose input is
 * that link completes. A file that lies about its format is refused before anything is stored, and
 * the quota is the account's objects in the bucket, whoever put them there.
 */
import { createHash } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUNDLED_PHOTOS_DIR } from '../../../src/paths.js';
import { S3_TEST_CREDENTIALS, startS3Server, type S3TestServer } from '../../helpers/s3-server.js';
import { useGatewayE2e } from './e2e-harness.js';

const BUCKET = 'fleet-uploads';
const QUOTA = 200_000;
let s3: S3TestServer;
let reader: S3Client;
const env: NodeJS.ProcessEnv = {};
beforeAll(async () => {
  s3 = await startS3Server([BUCKET]);
  Object.assign(env, s3.env(BUCKET, 'media'));
  reader = new S3Client({
    endpoint: s3.endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: S3_TEST_CREDENTIALS,
  });
});
let s3Closed = false;
afterAll(async () => {
  reader?.destroy();
  if (!s3Closed) await s3?.close();
});

let png: Buffer;
const e2e = useGatewayE2e({
  name: 'media-uploads-s3-e2e-',
  async files() {
    png = await sharp(path.join(BUNDLED_PHOTOS_DIR, 'chelsea.png')).resize(40, 27).png().toBuffer();
    return {};
  },
  env,
  gatewayEnv: { GATEWAY_UPLOADS: 'true', GATEWAY_UPLOAD_QUOTA_BYTES: String(QUOTA) },
});

function upload(key: string, body: Buffer | string, type = 'image/png'): Promise<Response> {
  return fetch(`${e2e.gateway.url}/api/v1/uploads`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': type },
    body,
  });
}

async function objects(prefix: string): Promise<{ key: string; size: number }[]> {
  const page = await reader.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: prefix }));
  return (page.Contents ?? []).map((o) => ({ key: o.Key ?? '', size: o.Size ?? 0 }));
}

/** Every file (not folder) under `dir`, at any depth. */
async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries.filter((e) => e.isFile()).map((e) => path.join(e.parentPath, e.name));
}

describe('uploads in the bucket', () => {
  it('puts a checked upload at its key, keeps nothing on the disk, serves it from the bucket, and a job on it completes', async () => {
    const account = await e2e.newAccount(100);
    const res = await upload(account.key, png);
    expect(res.status).toBe(201);
    const data = ((await res.json()) as { data: { url: string; format: string; size: number } }).data;
    expect(data).toEqual({
      url: expect.stringMatching(
        new RegExp(`/results/uploads/${account.id}/u_[a-z0-9]+\\.png\\?expires=\\d+&sig=[\\w-]+$`),
      ),
      format: 'png',
      size: png.length,
    });
    const name = new URL(data.url).pathname.split('/').pop() ?? '';
    expect(await objects(`media/uploads/${account.id}/`)).toEqual([
      { key: `media/uploads/${account.id}/${name}`, size: png.length },
    ]);
    expect(await filesUnder(path.join(e2e.dir, 'results', 'uploads'))).toEqual([]);

    const served = await fetch(data.url);
    expect([served.status, served.headers.get('content-type')]).toEqual([200, 'image/png']);
    const bytes = Buffer.from(await served.arrayBuffer());
    expect(createHash('sha256').update(bytes).digest('hex')).toBe(createHash('sha256').update(png).digest('hex'));
    expect((await fetch(data.url.split('?')[0]!)).status).toBe(404);

    // The worker fetches the link like any input.
    const submitted = await e2e.api('POST', '/api/v1/tools/upscale-image', account.key, {
      image_url: data.url,
      upscale_factor: '2',
    });
    expect(submitted.status).toBe(200);
    const id = submitted.body.data?.id ?? '';
    const done = (await e2e.settled(account, id)).body.data ?? {};
    expect(done).toMatchObject({ status: 'completed', result: { width: 80, height: 54 } });
  });

  it('refuses a file that lies about its format and stores nothing', async () => {
    const account = await e2e.newAccount(100);
    // A PNG's signature and then no PNG: sniffed as PNG, refused by the decode check.
    const liar = Buffer.concat([png.subarray(0, 16), Buffer.alloc(4000, 0x41)]);
    const res = await upload(account.key, liar);
    expect([res.status, ((await res.json()) as { error?: { code: string } }).error?.code]).toEqual([
      415,
      'UNSUPPORTED_MEDIA_TYPE',
    ]);
    expect(await objects(`media/uploads/${account.id}/`)).toEqual([]);
    expect(await filesUnder(path.join(e2e.dir, 'results', 'uploads'))).toEqual([]);
  });

  it("refuses an upload past the quota the account's objects in the bucket use", async () => {
    const account = await e2e.newAccount(100);
    // Put by another gateway, say: this gateway has never seen it, and counts it from the listing.
    await reader.send(
      new PutObjectCommand({
        Bucket: BUCKET,
        Key: `media/uploads/${account.id}/u_elsewhere.mp4`,
        Body: Buffer.alloc(QUOTA - 100),
        ContentType: 'video/mp4',
      }),
    );
    const res = await upload(account.key, png);
    expect([res.status, ((await res.json()) as { error?: { code: string } }).error?.code]).toEqual([
      403,
      'UPLOAD_QUOTA_EXCEEDED',
    ]);
    expect(await objects(`media/uploads/${account.id}/`)).toHaveLength(1);
    // Another account is not charged for it.
    const other = await e2e.newAccount(100);
    expect((await upload(other.key, png)).status).toBe(201);
  });

  // Last: it stops the bucket.
  it('answers 503 when the bucket does not answer, and keeps nothing on the disk', async () => {
    const account = await e2e.newAccount(100);
    s3Closed = true;
    await s3.close();
    const res = await upload(account.key, png);
    expect([res.status, ((await res.json()) as { error?: { code: string } }).error?.code]).toEqual([
      503,
      'SERVICE_UNAVAILABLE',
    ]);
    expect(await filesUnder(path.join(e2e.dir, 'results', 'uploads'))).toEqual([]);
  });
});
