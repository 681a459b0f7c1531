/**
 * `media-worker serve` as shipped (dist/), against a real nats-server: a real image job fetched over
 * http from a local server (private addresses allowed for the test), upscaled with the real
 * weights, stored, and announced by exactly one completed event; the quote service; a job naming a
 * local file is refused (network jobs never read local files); SIGTERM exits 0.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUNDLED_PHOTOS_DIR, PACKAGE_ROOT } from '../src/paths.js';
import { controlPlane, waitFor, type ControlPlane } from './worker/helpers/jetstream.js';
import { startNatsServer, type TestNatsServer } from './worker/helpers/nats-server.js';

const CLI = path.join(PACKAGE_ROOT, 'dist', 'src', 'cli.js');

let nats: TestNatsServer;
let cp: ControlPlane;
let http: Server;
let baseUrl: string;
let dir: string;
let daemon: ChildProcess;
let daemonExit: Promise<number | null>;
let stderr = '';

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'media-worker-serve-'));
  const photo = await sharp(path.join(BUNDLED_PHOTOS_DIR, 'chelsea.png')).resize(80, 53).png().toBuffer();
  http = createServer((req, res) => {
    if (req.url === '/chelsea.png') {
      res.writeHead(200, { 'content-type': 'image/png' }).end(photo);
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;

  nats = await startNatsServer();
  daemon = spawn(process.execPath, [CLI, 'serve'], {
    env: {
      ...process.env,
      NATS_URL: nats.url,
      LOG_LEVEL: 'info',
      MEDIA_WORKER_ALLOW_PRIVATE_URLS: '1',
      MEDIA_WORKER_TMP_DIR: await mkdtemp(path.join(dir, 'tmp-')),
      RESULTS_DIR: path.join(dir, 'results'),
      RESULTS_BASE_URL: 'https://cdn.example.test/results',
      WORKER_HEALTH_PORT: '0',
      WORKER_CONCURRENCY: 'image=1,video=0,lipsync=0,music=0',
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  daemon.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  daemonExit = new Promise((resolve) => daemon.once('exit', (code) => resolve(code)));
  await waitFor('the daemon to serve', () => stderr.includes('media-worker serving'), 60_000);
  cp = await controlPlane(nats.url, { jobsStream: 'MEDIA_JOBS', eventsStream: 'MEDIA_EVENTS' });
});

afterAll(async () => {
  if (daemon.exitCode === null) daemon.kill('SIGKILL');
  await cp?.close();
  await nats?.close();
  http?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('media-worker serve', () => {
  it('upscales an image job from NATS and publishes exactly one completed event with the stored result', async () => {
    const job = { id: 'serve-img-1', model: 'vendor-image-upscale', input: { image_url: `${baseUrl}/chelsea.png`, upscale_factor: '2' } };
    await cp.publishJob('image', 'vendor-image-upscale', job);
    const [event] = await waitFor('the terminal event', async () => {
      const events = await cp.eventsOf('serve-img-1');
      return events.length > 0 ? events : undefined;
    }, 60_000);
    expect(event).toMatchObject({
      id: 'serve-img-1',
      model: 'vendor-image-upscale',
      status: 'completed',
      creditsUsed: 20,
      result: { type: 'image', width: 160, height: 106, format: 'png' },
    });
    const url = (event?.result as { url: string }).url;
    expect(url).toMatch(/^https:\/\/cdn\.example\.test\/results\/image\/serve-img-1\//);
    const stored = path.join(dir, 'results', 'image', 'serve-img-1');
    const [file] = await readdir(stored);
    const meta = await sharp(await readFile(path.join(stored, file ?? ''))).metadata();
    expect([meta.width, meta.height]).toEqual([160, 106]);
    expect(await cp.eventsOf('serve-img-1')).toHaveLength(1);
    expect(stderr).toContain('"taskId":"serve-img-1"');
  });

  it('refuses a network job that names a local file, with one failed event and a refund', async () => {
    const local = fileURLToPath(new URL('./fixtures/photos/coffee.png', import.meta.url));
    await cp.publishJob('image', 'vendor-image-upscale', { id: 'serve-local-1', model: 'vendor-image-upscale', input: { image_url: local } });
    const [event] = await waitFor('the terminal event', async () => {
      const events = await cp.eventsOf('serve-local-1');
      return events.length > 0 ? events : undefined;
    }, 30_000);
    expect(event).toMatchObject({ status: 'failed', refund: true, error: { code: 'INVALID_URL', status: 400 } });
  });

  it('answers quote requests on media.quote', async () => {
    const reply = await cp.nc.request(
      'media.quote',
      JSON.stringify({ model: 'vendor-image-upscale', input: { image_url: `${baseUrl}/chelsea.png`, upscale_factor: '4' } }),
      { timeout: 10_000 },
    );
    expect(reply.json()).toMatchObject({ model: 'vendor-image-upscale', creditsUsed: 20, input: { detected_dimensions: '80×53', output_tier: '24mp' } });
  });

  it('drains and exits 0 on SIGTERM', async () => {
    daemon.kill('SIGTERM');
    expect(await daemonExit).toBe(0);
  });
});
