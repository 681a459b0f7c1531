import { readFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMediaDeps } from '../../src/media/deps.js';
import { withJobDir } from '../../src/media/workdir.js';
import { PHOTOS, makeClip, makeTempDir } from './helpers.js';

let files: string;
let cleanup: () => Promise<void>;
let server: http.Server;
let port: number;

beforeAll(async () => {
  ({ dir: files, cleanup } = await makeTempDir('deps'));
  const png = await sharp(join(PHOTOS, 'chelsea.png')).png().toBuffer();
  const clip = join(files, 'clip.mp4');
  await makeClip(clip, { seconds: 1.5 });
  const mp4 = await readFile(clip);
  server = http.createServer((req, res) => {
    res.end(req.url === '/cat.png' ? png : mp4);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  await cleanup();
});

describe('createMediaDeps', () => {
  it('builds the object quoteJob takes: localize, probeImage, probeMedia', async () => {
    await withJobDir('deps-test', async (dir) => {
      const deps = createMediaDeps({ dir, allowHttp: true, allowPrivate: true });
      const image = await deps.localize(`http://127.0.0.1:${port}/cat.png`, 'image');
      expect(await deps.probeImage(image.path)).toMatchObject({ format: 'png', width: 451, height: 300 });
      const video = await deps.localize(`http://127.0.0.1:${port}/clip.mp4`, 'video');
      const info = await deps.probeMedia(video.path);
      expect(info.container).toBe('mp4');
      expect(info.durationSeconds).toBeCloseTo(1.5, 1);
    });
  });

  it('passes the limits and policy through', async () => {
    await withJobDir('deps-test', async (dir) => {
      const strict = createMediaDeps({ dir, allowHttp: true, maxPixels: 1000 });
      await expect(strict.localize(`http://127.0.0.1:${port}/cat.png`, 'image')).rejects.toMatchObject({
        code: 'FETCH_FAILED',
      });
      await expect(strict.probeImage(join(PHOTOS, 'chelsea.png'))).rejects.toMatchObject({ code: 'OUTPUT_TOO_LARGE' });
    });
  });

  it('combines the deps-wide signal with a per-call one', async () => {
    await withJobDir('deps-test', async (dir) => {
      const controller = new AbortController();
      const deps = createMediaDeps({ dir, allowHttp: true, allowPrivate: true, signal: controller.signal });
      const call = new AbortController();
      call.abort(new Error('call cancelled'));
      await expect(deps.localize(`http://127.0.0.1:${port}/cat.png`, 'image', call.signal)).rejects.toThrow(
        'call cancelled',
      );
      controller.abort(new Error('job cancelled'));
      await expect(deps.localize(`http://127.0.0.1:${port}/cat.png`, 'image')).rejects.toThrow('job cancelled');
    });
  });
});
