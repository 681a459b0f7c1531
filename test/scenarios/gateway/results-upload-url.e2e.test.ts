/**
 * Upload URLs end to end (RESULTS_STORE=upload-url, issue 59): the shipped `serve` and `gateway`
 * under the shipped per-role NATS permissions, a real S3-compatible server (s3rver) behind a proxy
 * that refuses expired presigned URLs as S3 does. The worker host has neither bucket settings nor
 * credentials: it asks the gateway for a URL per file on `media.uploads.host1`, PUTs there (a 503
 * is tried again), and its event's size and sha256 are checked against the object. A host may ask
 * only under its own name, and only for a task whose claim it holds.
 */
import { createHash } from 'node:crypto';
import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { protocolHeaders, uploadUrlReplySchema } from '../../../src/protocol/index.js';
import {
  S3_TEST_CREDENTIALS,
  faultProxy,
  s3Env,
  startS3Server,
  type FaultProxy,
  type S3TestServer,
} from '../../helpers/s3-server.js';
import { smallPngFiles, useGatewayE2e } from './e2e-harness.js';

const BUCKET = 'presigned-fleet';
let s3: S3TestServer;
let proxy: FaultProxy;
const env: NodeJS.ProcessEnv = { RESULTS_STORE: 'upload-url', GATEWAY_SERVE_RESULTS: 'false' };
const gatewayEnv: NodeJS.ProcessEnv = {};
beforeAll(async () => {
  s3 = await startS3Server([BUCKET]);
  proxy = await faultProxy(s3.endpoint);
  // The bucket and its credentials are the gateway's alone.
  Object.assign(gatewayEnv, s3Env(proxy.url, BUCKET, 'media'), { RESULTS_STORE: 'upload-url' });
});
afterAll(async () => {
  await proxy?.close();
  await s3?.close();
});

const e2e = useGatewayE2e({
  name: 'media-upload-url-e2e-',
  files: smallPngFiles,
  env,
  gatewayEnv,
});

describe('results through upload URLs', () => {
  it('stores the result with a URL the gateway presigned (a 503 tried again), and the gateway checks the object before the task completes', async () => {
    proxy.inject('unavailable', 1, (req) => req.method === 'PUT');
    const account = await e2e.newAccount(100);
    const submitted = await e2e.api('POST', '/api/v1/tools/upscale-image', account.key, {
      image_url: `${e2e.mediaUrl}/small.png`,
      upscale_factor: '2',
    });
    const id = submitted.body.data?.id ?? '';
    const done = (await e2e.settled(account, id)).body.data ?? {};
    // Named under RESULTS_BASE_URL, as the gateway's grant said (the harness points it at the gateway).
    expect(done).toMatchObject({
      status: 'completed',
      result: { url: expect.stringContaining(`/results/image/${id}/output.png`), width: 80 },
    });
    const resultUrl = (done['result'] as { url: string }).url.split('?')[0];
    expect(proxy.seen.filter((r) => r.method === 'PUT').map((r) => r.fault ?? 'stored')).toEqual([
      'unavailable',
      'stored',
    ]);

    const [event] = await e2e.cp.eventsOf(id);
    const reader = new S3Client({
      endpoint: s3.endpoint,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: S3_TEST_CREDENTIALS,
    });
    try {
      const object = await reader.send(new GetObjectCommand({ Bucket: BUCKET, Key: `media/image/${id}/output.png` }));
      const bytes = Buffer.from(await object.Body!.transformToByteArray());
      expect(event?.files).toEqual([
        {
          key: `image/${id}/output.png`,
          url: resultUrl,
          size: bytes.length,
          sha256: createHash('sha256').update(bytes).digest('hex'),
        },
      ]);
    } finally {
      reader.destroy();
    }
  });

  it("refuses a URL for a task whose claim the host does not hold, and the server refuses a host asking under another host's name", async () => {
    const account = await e2e.newAccount(100);
    // A music task: priced, never run here, so no host claimed it.
    const music = await e2e.api('POST', '/api/v1/generate', account.key, {
      model: 'vendor-v5-generate-music',
      input: { prompt: 'a song' },
    });
    const taskId = music.body.data?.id ?? '';
    const host1 = await e2e.roles.connectAs('worker-host1');
    try {
      const request = {
        taskId,
        kind: 'music',
        name: 'song-1',
        ext: 'mp3',
        contentType: 'audio/mpeg',
        size: 10,
        sha256: 'a'.repeat(64),
      };
      const reply = await host1.request('media.uploads.host1', JSON.stringify(request), {
        timeout: 10_000,
        headers: protocolHeaders(),
      });
      expect(uploadUrlReplySchema.parse(reply.json())).toEqual({
        error: { code: 'UPLOAD_REFUSED', message: expect.stringContaining(`task ${taskId} is claimed by no host`) },
      });
      await expect(host1.request('media.uploads.host2', JSON.stringify(request), { timeout: 3_000 })).rejects.toThrow(
        /permission|timeout|no responders/i,
      );
    } finally {
      await host1.close();
    }
  });
});
