/**
 * `media-worker serve` as shipped (dist/), against a real nats-server: a real image job fetched over
 * http from a local server (private addresses allowed for the test), upscaled with the real
 * weights, stored, and announced by exactly one completed event; the quote service; a job naming a
 * local file is refused (network jobs never read local files); SIGTERM exits 0. The server runs the
 * shipped per-role users (test/helpers/role-nats.ts): `serve` as `worker-host1`, provisioning and the
 * control plane's side (jobs, quotes, capabilities, cancel, events) as operator.
 */
import { execFileSync } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUNDLED_PHOTOS_DIR } from '../../../src/paths.js';
import { encodeClip, faceFrames, SIDE, speechClip } from '../../kinds/lipsync/pipeline/pipeline-fixtures.js';
import { makeClip } from '../../media/helpers.js';
import { controlPlane, waitFor, type ControlPlane } from '../../worker/helpers/jetstream.js';
import { startRoleNats, type RoleNats } from '../../helpers/role-nats.js';
import { provisionFromEnv } from '../../helpers/provision.js';
import { serveEnv, spawnServe, type ServeProcess } from '../../helpers/serve-process.js';

let roles: RoleNats;
let cp: ControlPlane;
let http: Server;
let baseUrl: string;
let dir: string;
let daemon: ServeProcess;
let tmpDir: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'media-worker-serve-'));
  const files: Record<string, Buffer> = {
    '/chelsea.png': await sharp(path.join(BUNDLED_PHOTOS_DIR, 'chelsea.png')).resize(80, 53).png().toBuffer(),
    '/clip.mp4': await readFile(
      await makeClip(path.join(dir, 'clip.mp4'), { seconds: 0.5, size: '48x32', rate: 12, audio: true }),
    ),
    // Long enough to be running when it is cancelled (tens of seconds of upscaling on a CPU).
    '/long.mp4': await readFile(await makeClip(path.join(dir, 'long.mp4'), { seconds: 20, size: '160x120', rate: 24 })),
    '/face.mp4': await readFile(
      await encodeClip(path.join(dir, 'face.mp4'), await faceFrames(12), { width: SIDE, height: SIDE }, 'mp4'),
    ),
    '/speech.mp3': await readFile(await speechClip(path.join(dir, 'speech.mp3'), 1)),
  };
  http = createServer((req, res) => {
    const body = files[req.url ?? ''];
    if (body === undefined) res.writeHead(404).end();
    else res.writeHead(200).end(body);
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;

  roles = await startRoleNats(dir);
  await provisionFromEnv(roles.env('operator'));
  daemon = spawnServe({
    ...serveEnv(roles),
    MEDIA_WORKER_TMP_DIR: (tmpDir = await mkdtemp(path.join(dir, 'tmp-'))),
    RESULTS_DIR: path.join(dir, 'results'),
    WORKER_CONCURRENCY: 'image=1,video=1,lipsync=1,music=0,music-video=0',
    MEDIA_WORKER_LIPSYNC_MODELS: 'wav2lip-test',
  });
  await daemon.serving();
  cp = await controlPlane(
    roles.url,
    { jobsStream: 'MEDIA_JOBS', eventsStream: 'MEDIA_EVENTS' },
    roles.auth('operator'),
  );
});

afterAll(async () => {
  await daemon?.stop();
  await cp?.close();
  await roles?.close();
  http?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('media-worker serve', () => {
  it('upscales an image job from NATS and publishes exactly one completed event with the stored result', async () => {
    const job = {
      id: 'serve-img-1',
      model: 'vendor-image-upscale',
      input: { image_url: `${baseUrl}/chelsea.png`, upscale_factor: '2' },
    };
    await cp.publishJob('image', 'vendor-image-upscale', job);
    const [event] = await waitFor(
      'the terminal event',
      async () => {
        const events = await cp.eventsOf('serve-img-1');
        return events.length > 0 ? events : undefined;
      },
      60_000,
    );
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
    expect(daemon.log()).toContain('"taskId":"serve-img-1"');
  });

  it('upscales a video job and lip-syncs a lip-sync job, each with one completed event of the spec shape', async () => {
    await cp.publishJob('video', 'vendor-video-upscale', {
      id: 'serve-video-1',
      model: 'vendor-video-upscale',
      input: { video_url: `${baseUrl}/clip.mp4`, upscale_factor: '2' },
    });
    await cp.publishJob('lipsync', 'vendor-lipsync-2', {
      id: 'serve-lips-1',
      model: 'vendor-lipsync-2',
      input: { video_url: `${baseUrl}/face.mp4`, audio_url: `${baseUrl}/speech.mp3`, sync_mode: 'cut_off' },
    });
    const eventOf = (id: string) => waitFor(`the event of ${id}`, async () => (await cp.eventsOf(id))[0], 90_000);
    const [video, lips] = await Promise.all([eventOf('serve-video-1'), eventOf('serve-lips-1')]);
    expect(video).toMatchObject({
      status: 'completed',
      creditsUsed: 16,
      result: { type: 'video', width: 96, height: 64, frames: 6 },
    });
    // cut_off: the shorter input, the 0.48 s video; billed at the 50-credit minimum.
    expect(lips).toMatchObject({
      status: 'completed',
      model: 'vendor-lipsync-2',
      creditsUsed: 50,
      result: { type: 'video' },
    });
    expect(Object.keys(lips?.result as object).sort()).toEqual(['duration', 'type', 'url']);
    expect((lips?.result as { duration: number }).duration).toBeCloseTo(0.48, 1);
    expect((lips?.result as { url: string }).url).toMatch(
      /^https:\/\/cdn\.example\.test\/results\/lipsync\/serve-lips-1\//,
    );
  });

  it('refuses a network job that names a local file, with one failed event and a refund', async () => {
    const local = fileURLToPath(new URL('../../fixtures/photos/coffee.png', import.meta.url));
    await cp.publishJob('image', 'vendor-image-upscale', {
      id: 'serve-local-1',
      model: 'vendor-image-upscale',
      input: { image_url: local },
    });
    const [event] = await waitFor(
      'the terminal event',
      async () => {
        const events = await cp.eventsOf('serve-local-1');
        return events.length > 0 ? events : undefined;
      },
      30_000,
    );
    expect(event).toMatchObject({ status: 'failed', refund: true, error: { code: 'INVALID_URL', status: 400 } });
  });

  it('answers quote requests on media.quote', async () => {
    const reply = await cp.nc.request(
      'media.quote',
      JSON.stringify({
        model: 'vendor-image-upscale',
        input: { image_url: `${baseUrl}/chelsea.png`, upscale_factor: '4' },
      }),
      { timeout: 10_000 },
    );
    expect(reply.json()).toMatchObject({
      model: 'vendor-image-upscale',
      creditsUsed: 20,
      input: { detected_dimensions: '80×53', output_tier: '24mp' },
    });
  });

  it('announces what it runs on media.capabilities: kinds, models, hardware class and execution provider', async () => {
    const reply = await cp.nc.request('media.capabilities', '', { timeout: 5000 });
    expect(reply.headers?.get('Media-Protocol-Version')).toBe('2.1');
    expect(reply.json()).toMatchObject({
      protocol: '2.1',
      state: 'running',
      hardwareClass: 'cpu',
      executionProvider: 'cpu',
      kinds: { image: { ready: true }, video: { ready: true }, music: { ready: false, slots: 0 } },
    });
  });

  it('cancels a running video job: its ffmpeg processes stop, its job directory goes, one CANCELLED event', async () => {
    await cp.publishJob('video', 'vendor-video-upscale', {
      id: 'serve-cancel-1',
      model: 'vendor-video-upscale',
      input: { video_url: `${baseUrl}/long.mp4`, upscale_factor: '2' },
      credits: 320,
    });
    await waitFor(
      'the job to be upscaling',
      () =>
        daemon.log().includes('"taskId":"serve-cancel-1"') &&
        childrenOf(daemon.child.pid).some((c) => c.includes('ffmpeg')),
      60_000,
      100,
    );
    expect(await readdir(tmpDir)).not.toEqual([]);
    const asked = Date.now();
    const reply = await cp.nc.request('media.cancel', JSON.stringify({ id: 'serve-cancel-1', credits: 320 }), {
      timeout: 10_000,
    });
    expect(reply.json()).toMatchObject({ cancelled: true, code: 'CANCELLED' });
    await waitFor(
      'ffmpeg to stop and the job directory to go',
      async () =>
        !childrenOf(daemon.child.pid).some((c) => c.includes('ffmpeg')) && (await readdir(tmpDir)).length === 0,
      15_000,
      100,
    );
    expect(Date.now() - asked).toBeLessThan(10_000);
    expect(await cp.eventsOf('serve-cancel-1')).toMatchObject([
      { status: 'failed', refund: true, creditsRefunded: 320, error: { code: 'CANCELLED' } },
    ]);
    await waitFor('the job to leave the queue', async () => (await cp.jobsInQueue()) === 0, 15_000);
    expect(daemon.log()).toContain('Stopping a cancelled task');
  });

  it('drains and exits 0 on SIGTERM', async () => {
    daemon.child.kill('SIGTERM');
    expect(await daemon.exited).toBe(0);
  });
});

/** Command lines of a process's children (Linux /proc), e.g. the ffmpeg processes a job runs. */
function childrenOf(pid: number | undefined): string[] {
  if (pid === undefined) return [];
  try {
    return execFileSync('ps', ['--ppid', String(pid), '-o', 'args='], { encoding: 'utf8' })
      .split('\n')
      .filter(Boolean);
  } catch {
    return []; // ps exits 1 when there is none
  }
}
