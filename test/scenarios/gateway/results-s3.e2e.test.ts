/**
 * Results on object storage end to end (RESULTS_STORE=s3, issue 59): the shipped `serve` and
 * `gateway` processes with a real S3-compatible server (s3rver, started here) and no shared
 * directory. The worker stores the result in the bucket before its event; the event lists the
 * file's size and sha256; the gateway checks the object (HEAD) before the task shows completed.
 * Then the worker's results and temp folders are deleted: the result is still in the bucket, whole,
 * and the gateway's signed link streams it from there (range requests passed on).
 */
import { createHash } from 'node:crypto';
import { readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { S3_TEST_CREDENTIALS, startS3Server, type S3TestServer } from '../../helpers/s3-server.js';
import { smallPngFiles, useGatewayE2e } from './e2e-harness.js';

const BUCKET = 'fleet-results';
let s3: S3TestServer;
// Filled before the harness's beforeAll reads it (hooks run in the order they were registered).
const env: NodeJS.ProcessEnv = {};
beforeAll(async () => {
  s3 = await startS3Server([BUCKET]);
  // The gateway serves results (GATEWAY_SERVE_RESULTS=true, the harness's): streamed from the bucket.
  Object.assign(env, s3.env(BUCKET, 'media'));
});
afterAll(async () => {
  await s3?.close();
});

const e2e = useGatewayE2e({
  name: 'media-results-s3-e2e-',
  files: smallPngFiles,
  env,
});

describe('results in a bucket', () => {
  it("stores the result before the event, which carries its size and sha256; the gateway checks the object, and the result outlives the worker's folders", async () => {
    const account = await e2e.newAccount(100);
    const submitted = await e2e.api('POST', '/api/v1/tools/upscale-image', account.key, {
      image_url: `${e2e.mediaUrl}/small.png`,
      upscale_factor: '2',
    });
    expect(submitted.status).toBe(200);
    const id = submitted.body.data?.id ?? '';
    const done = (await e2e.settled(account, id)).body.data ?? {};
    expect(done).toMatchObject({
      status: 'completed',
      result: { url: expect.stringContaining(`/results/image/${id}/output.png`), width: 80, height: 54 },
    });

    const [event] = await e2e.cp.eventsOf(id);
    expect(event?.files).toEqual([
      {
        key: `image/${id}/output.png`,
        url: expect.stringContaining(`/image/${id}/output.png`),
        size: expect.any(Number),
        sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
      },
    ]);

    // The host is lost: its results and temp folders go. The bucket still has the file, whole.
    await rm(path.join(e2e.dir, 'results'), { recursive: true, force: true });
    for (const name of await readdir(e2e.dir))
      if (name.startsWith('tmp-')) await rm(path.join(e2e.dir, name), { recursive: true, force: true });
    const reader = new S3Client({
      endpoint: s3.endpoint,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: S3_TEST_CREDENTIALS,
    });
    try {
      const object = await reader.send(new GetObjectCommand({ Bucket: BUCKET, Key: `media/image/${id}/output.png` }));
      const bytes = Buffer.from(await object.Body!.transformToByteArray());
      expect([bytes.length, createHash('sha256').update(bytes).digest('hex')]).toEqual([
        event?.files?.[0]?.size,
        event?.files?.[0]?.sha256,
      ]);
    } finally {
      reader.destroy();
    }

    // The link the poll gave: signed by the gateway, streamed from the bucket, ranges honoured.
    const link = (done['result'] as { url: string }).url;
    expect(link).toMatch(/\?expires=\d+&sig=/);
    const whole = await fetch(link);
    expect([whole.status, whole.headers.get('content-type')]).toEqual([200, 'image/png']);
    const served = Buffer.from(await whole.arrayBuffer());
    expect(createHash('sha256').update(served).digest('hex')).toBe(event?.files?.[0]?.sha256);
    expect((await sharp(served).metadata()).width).toBe(80);
    const part = await fetch(link, { headers: { range: 'bytes=0-7' } });
    expect([part.status, part.headers.get('content-range')]).toEqual([206, `bytes 0-7/${served.length}`]);
    expect(Buffer.from(await part.arrayBuffer()).readUInt32BE(0)).toBe(0x89504e47);
    // Unsigned, or for a file that is not there: refused.
    expect((await fetch(link.split('?')[0]!)).status).toBe(404);
  });
});
