/**
 * `media-worker serve` as shipped (dist/), run as an operator runs it, against a real nats-server
 * with the shipped per-role users (`serve` as `worker-host1`, provisioning and the control plane's
 * side as operator) and a local http server for the inputs:
 * - SIGTERM or SIGINT at several points of start-up: exit 0;
 * - a worker SIGKILLed mid-job while another shares its temp directory: the other's sweep keeps the
 *   live job's directory; after a restart the dead one's directory is gone and the job completes
 *   once, with one event;
 * - a fresh install without lip-sync weights: /readyz names lip-sync as not served and a lip-sync
 *   job stays in the stream; the installer puts the test weights into MEDIA_WORKER_MODEL_FILES_DIR
 *   and the same running host then serves the job;
 * - a read-only install (the package root's, the worker an unprivileged user with the documented
 *   writable directories): an image job completes;
 * - a host configured for CUDA on this CPU-only machine: /readyz says image is not ready and why,
 *   discovery and the metric say cpu, the quote is MODEL_UNAVAILABLE, the job waits; with CPU fallback
 *   allowed it is quoted as cpu and runs.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { sha256Hex } from '../../../src/inference/index.js';
import { BUNDLED_PHOTOS_DIR, PACKAGE_ROOT } from '../../../src/paths.js';
import { encodeClip, faceFrames, SIDE, speechClip } from '../../kinds/lipsync/pipeline/pipeline-fixtures.js';
import { controlPlane, deleteStreams, sleep, waitFor, type ControlPlane } from '../../worker/helpers/jetstream.js';
import { startRoleNats, type RoleNats } from '../../helpers/role-nats.js';
import { provisionFromEnv } from '../../helpers/provision.js';
import { CLI, QUICK_REDELIVERY, readyz, serveEnv, serveGroup, type ServeProcess } from '../../helpers/serve-process.js';

const INSTALLER = path.join(PACKAGE_ROOT, 'dist', 'scripts', 'install-lipsync-model.js');
const STREAMS = ['MEDIA_JOBS', 'MEDIA_EVENTS', 'MEDIA_JOBS_ADVISORIES', 'MEDIA_CLAIMS'];

let roles: RoleNats;
let cp: ControlPlane;
let http: Server;
let base: string;
let dir: string;
let stallPng = true;
const stalled: ServerResponse[] = [];
const files: Record<string, Buffer> = {};

/** What every `serve` of this file shares (and what the streams and consumers are provisioned with). */
const baseEnv = (): NodeJS.ProcessEnv => ({
  ...serveEnv(roles),
  ...QUICK_REDELIVERY,
  WORKER_CONCURRENCY: 'image=1,video=0,lipsync=0,music=0,music-video=0',
});
const serves = serveGroup(baseEnv);
const serve = serves.start;

async function exitedWithin(s: ServeProcess, ms: number): Promise<number | string> {
  return Promise.race([s.exited, sleep(ms).then(() => `still running after ${ms} ms:\n${s.log().slice(-3000)}`)]);
}

/**
 * Whether the process is loading the program's native modules (ONNX Runtime, sharp): src/cli.ts
 * installs the start-up handlers before it loads anything, so from then on they exist.
 */
async function loadingNativeModules(pid: number): Promise<boolean> {
  const maps = await fs.readFile(`/proc/${pid}/maps`, 'utf8').catch(() => '');
  return /onnxruntime|sharp/.test(maps);
}

/**
 * The job folders in `tmp`: directories only. The readiness check's write probe is a file of the
 * same prefix (so that the sweep removes one a dead process left), there for a moment each round:
 * under load 19 a listing caught it.
 */
const jobDirs = async (tmp: string): Promise<string[]> =>
  (await fs.readdir(tmp, { withFileTypes: true }))
    .filter((e) => e.isDirectory() && e.name.startsWith('media-worker-p'))
    .map((e) => e.name)
    .sort();

beforeAll(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'media-worker-ops-'));
  await fs.chmod(dir, 0o755);
  const png = await sharp(path.join(BUNDLED_PHOTOS_DIR, 'chelsea.png')).resize(80, 53).png().toBuffer();
  files['/chelsea.png'] = png;
  files['/face.mp4'] = await fs.readFile(
    await encodeClip(path.join(dir, 'face.mp4'), await faceFrames(12), { width: SIDE, height: SIDE }, 'mp4'),
  );
  files['/speech.mp3'] = await fs.readFile(await speechClip(path.join(dir, 'speech.mp3'), 1));
  files['/wav2lip.onnx'] = await fs.readFile(path.join(PACKAGE_ROOT, 'models', 'wav2lip-test.onnx'));
  http = createServer((req, res) => {
    if (req.url === '/slow.png') {
      // Half the image, then nothing until released: the job sits in its download, its directory made.
      if (stallPng) {
        res.writeHead(200, { 'content-length': png.length });
        res.write(png.subarray(0, png.length >> 1));
        stalled.push(res);
        return;
      }
      res.writeHead(200).end(png);
      return;
    }
    const body = files[req.url ?? ''];
    if (body === undefined) res.writeHead(404).end();
    else res.writeHead(200).end(body);
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  roles = await startRoleNats(await fs.mkdtemp(path.join(dir, 'nats-')));
  cp = await controlPlane(
    roles.url,
    { jobsStream: 'MEDIA_JOBS', eventsStream: 'MEDIA_EVENTS' },
    roles.auth('operator'),
  );
});

afterAll(async () => {
  for (const res of stalled) res.destroy();
  await cp?.close();
  await roles?.close();
  http?.closeAllConnections();
  http?.close();
  await fs.rm(dir, { recursive: true, force: true });
});

beforeEach(async () => {
  await deleteStreams(cp.jsm, STREAMS);
  await provisionFromEnv({ ...baseEnv(), ...roles.env('operator') });
});

afterEach(serves.stopAll);

async function scratch(name: string): Promise<string> {
  const d = path.join(dir, name);
  await fs.mkdir(d, { recursive: true });
  return d;
}

describe('signals during start-up', () => {
  const env = async (): Promise<Record<string, string>> => ({
    MEDIA_WORKER_TMP_DIR: await scratch('sig-tmp'),
    RESULTS_DIR: await scratch('sig-results'),
  });

  it.each([
    ['SIGTERM', 'while the program loads (as soon as the handler exists)', 'loading'],
    ['SIGINT', 'while the program loads', 'loading'],
    ['SIGTERM', 'once the default network is open, before NATS', 'inference ready'],
    ['SIGTERM', 'once the kinds are checked, as pulling starts', 'Serving image jobs'],
  ] as const)('%s %s exits 0', async (signal, _when, point) => {
    const s = serve(await env());
    const pid = s.child.pid as number;
    if (point === 'loading') {
      await waitFor('the program to load its native modules', () => loadingNativeModules(pid), 20_000, 2);
      // Still loading: the default network is not open yet.
      expect(s.log()).not.toContain('"msg":"inference ready"');
    } else {
      await waitFor(`"${point}"`, () => s.log().includes(`"msg":"${point}`), 60_000, 5);
    }
    s.child.kill(signal);
    expect(await exitedWithin(s, 10_000)).toBe(0);
  });

  it('once running, SIGTERM drains and exits 0', async () => {
    const s = serve(await env());
    await s.serving();
    s.child.kill('SIGTERM');
    expect(await exitedWithin(s, 20_000)).toBe(0);
    expect(s.log()).toContain('"msg":"Worker stopped"');
  });
});

describe('a worker killed mid-job, beside another sharing its temp directory', () => {
  it("keeps the live job directory in the other's sweep; after a restart the dead one's is gone and the job completes once", async () => {
    const tmp = await scratch('kill-tmp');
    const env = {
      MEDIA_WORKER_TMP_DIR: tmp,
      RESULTS_DIR: await scratch('kill-results'),
      WORKER_LEFTOVER_SWEEP_INTERVAL_MS: '300',
      // The download is held open on purpose: no minimum rate, pause or deadline may cut it while the
      // second worker starts (on a loaded machine that took past the 30 s idle timeout, and the first
      // worker retried the job in a new directory: issue 56's stress run).
      MEDIA_WORKER_FETCH_MIN_BYTES_PER_SECOND: '0',
      MEDIA_WORKER_FETCH_IDLE_TIMEOUT_MS: '600000',
      MEDIA_WORKER_FETCH_DEADLINE_MS: '600000',
    };
    stallPng = true;
    const a = serve(env);
    await a.serving();
    await cp.publishJob('image', 'vendor-image-upscale', {
      id: 'kill-1',
      model: 'vendor-image-upscale',
      input: { image_url: `${base}/slow.png`, upscale_factor: '2' },
    });
    const [aDir] = await waitFor('the job directory of the first worker', async () => {
      const dirs = await jobDirs(tmp);
      return dirs.length === 1 && dirs[0]?.includes(`-p${a.child.pid}s`) ? dirs : undefined;
    });

    // A second worker on the same temp directory: its sweeps (at start, then every 300 ms) keep the live job's directory.
    const b = serve(env);
    await b.serving();
    await sleep(1000);
    expect(await jobDirs(tmp)).toEqual([aDir]);
    b.child.kill('SIGTERM');
    expect(await exitedWithin(b, 20_000)).toBe(0);

    a.child.kill('SIGKILL');
    expect(await a.exited).toBe('SIGKILL');
    expect(await jobDirs(tmp)).toEqual([aDir]);

    stallPng = false;
    const restarted = serve(env);
    await restarted.serving();
    expect(existsSync(path.join(tmp, aDir as string))).toBe(false);
    expect(restarted.log()).toContain(
      '"removed":1,"msg":"Removed job directories and partial files left by worker processes that are gone"',
    );

    const event = await waitFor(
      'the event of the redelivered job',
      async () => (await cp.eventsOf('kill-1'))[0],
      30_000,
    );
    expect(event).toMatchObject({
      status: 'completed',
      attempt: 2,
      result: { type: 'image', width: 160, height: 106 },
    });
    await waitFor('the job to be acked', async () => (await cp.jobsInQueue()) === 0);
    expect(await cp.eventsOf('kill-1')).toHaveLength(1);
    await waitFor("the finished job's directory to be removed", async () => (await jobDirs(tmp)).length === 0);
  });
});

describe('a fresh install without lip-sync weights', () => {
  it('does not serve lip-sync (the job stays in the stream) until the installer puts weights into MEDIA_WORKER_MODEL_FILES_DIR', async () => {
    // The layout of the systemd unit: manifests where the package has them, weights in a writable directory.
    const manifests = await scratch('fresh-manifests');
    const weights = await scratch('fresh-weights');
    for (const name of await fs.readdir(path.join(PACKAGE_ROOT, 'models'))) {
      if (name.endsWith('.json'))
        await fs.copyFile(path.join(PACKAGE_ROOT, 'models', name), path.join(manifests, name));
      else if (name.endsWith('.onnx') && name !== 'wav2lip-test.onnx')
        await fs.symlink(path.join(PACKAGE_ROOT, 'models', name), path.join(weights, name));
    }
    const env = {
      MEDIA_WORKER_MODELS_DIR: manifests,
      MEDIA_WORKER_MODEL_FILES_DIR: weights,
      MEDIA_WORKER_TMP_DIR: await scratch('fresh-tmp'),
      RESULTS_DIR: await scratch('fresh-results'),
      WORKER_CONCURRENCY: 'image=1,video=0,lipsync=1,music=0,music-video=0',
      WORKER_READINESS_INTERVAL_MS: '500',
      // The installer records Wav2Lip's research-only licence: this host stands for a person's own use.
      MEDIA_WORKER_ALLOW_NONCOMMERCIAL_MODELS: '1',
    };
    const s = serve(env);
    const port = await s.serving();
    const before = await readyz(port);
    expect(before.status).toBe(200); // image runs
    expect(before.body.kinds.lipsync?.ready).toBe(false);
    expect(before.body.kinds.lipsync?.reasons.join('\n')).toContain(
      'lipsync-backend: wav2lip: Expected lip-sync weights wav2lip for vendor-lipsync-2 but they are not installed (no manifest)',
    );
    expect(s.log()).toContain('Not serving lipsync jobs');

    await cp.publishJob('lipsync', 'vendor-lipsync-2', {
      id: 'fresh-lips-1',
      model: 'vendor-lipsync-2',
      input: { video_url: `${base}/face.mp4`, audio_url: `${base}/speech.mp3`, sync_mode: 'cut_off' },
    });
    await sleep(2500);
    expect(await cp.eventsOf('fresh-lips-1')).toEqual([]);
    expect(await cp.jobsInQueue()).toBe(1);
    expect((await cp.jsm.consumers.info('MEDIA_JOBS', 'media-worker-lipsync')).delivered.consumer_seq).toBe(0);

    const installed = await new Promise<{ code: number | null; out: string }>((resolve) => {
      const child = spawn(
        process.execPath,
        [INSTALLER, '--url', `${base}/wav2lip.onnx`, '--sha256', sha256Hex(files['/wav2lip.onnx'] as Buffer)],
        {
          // The worker's environment (the local test server needs private addresses allowed).
          env: { ...process.env, ...env, MEDIA_WORKER_ALLOW_PRIVATE_URLS: '1' },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      let out = '';
      child.stdout?.on('data', (c: Buffer) => (out += c.toString()));
      child.stderr?.on('data', (c: Buffer) => (out += c.toString()));
      child.once('exit', (code) => resolve({ code, out }));
    });
    expect(installed).toEqual({ code: 0, out: expect.stringContaining('manifest written') });
    expect(existsSync(path.join(weights, 'wav2lip.onnx'))).toBe(true);
    expect(existsSync(path.join(manifests, 'wav2lip.json'))).toBe(true);

    const event = await waitFor('the lip-sync event', async () => (await cp.eventsOf('fresh-lips-1'))[0], 60_000);
    expect(event).toMatchObject({ status: 'completed', attempt: 1, result: { type: 'video' } });
    expect((await readyz(port)).body.kinds.lipsync?.ready).toBe(true);
    expect(s.log()).toContain('Serving lipsync jobs again: its checks pass');
  });
});

describe.runIf(process.getuid?.() === 0)('a read-only install', () => {
  it('serves an image job as an unprivileged user writing only the documented directories', async (ctx) => {
    const nobody = 65534;
    // A checkout under a private directory (a 0700 home or temp dir) cannot be run by another user at all.
    const probe = spawnSync(
      process.execPath,
      ['-e', `require('fs').accessSync(${JSON.stringify(CLI)}, require('fs').constants.R_OK)`],
      { uid: nobody, gid: nobody },
    );
    if (probe.status !== 0) return ctx.skip();
    const writable = await scratch('ro-var');
    const layout = {
      results: path.join(writable, 'results'),
      models: path.join(writable, 'models'),
      tmp: path.join(writable, 'tmp'),
    };
    for (const d of [writable, ...Object.values(layout)]) {
      await fs.mkdir(d, { recursive: true });
      await fs.chown(d, nobody, nobody);
    }
    // The install step (`models prepare` as root) left the default image network where the worker reads weights.
    await fs.copyFile(
      path.join(PACKAGE_ROOT, 'models', 'realesrgan-x4plus.onnx'),
      path.join(layout.models, 'realesrgan-x4plus.onnx'),
    );
    // The package (dist/, node_modules/, models/) stays root's: the worker cannot write there.
    const s = serve(
      {
        RESULTS_DIR: layout.results,
        MEDIA_WORKER_MODEL_FILES_DIR: layout.models,
        MEDIA_WORKER_TMP_DIR: layout.tmp,
        // One image network converted at start from its installed npm package, into the writable directory.
        MEDIA_WORKER_SR_MODELS: 'image:1=esrgan-slim-x2',
        HOME: '/nonexistent',
      },
      { uid: nobody, gid: nobody, cwd: '/' },
    );
    const port = await s.serving();
    expect((await readyz(port)).body.kinds.image?.ready).toBe(true);
    await cp.publishJob('image', 'vendor-image-upscale', {
      id: 'ro-1',
      model: 'vendor-image-upscale',
      input: { image_url: `${base}/chelsea.png`, upscale_factor: '2' },
    });
    const event = await waitFor('the event', async () => (await cp.eventsOf('ro-1'))[0], 60_000);
    expect(event).toMatchObject({ status: 'completed', result: { type: 'image', width: 160, height: 106 } });
    const [file] = await fs.readdir(path.join(layout.results, 'image', 'ro-1'));
    const stat = await fs.stat(path.join(layout.results, 'image', 'ro-1', file as string));
    expect(stat.uid).toBe(nobody);
    // The network converted at start went to the writable models directory, beside the installed one.
    expect((await fs.readdir(layout.models)).filter((n) => n.endsWith('.onnx')).sort()).toEqual([
      'esrgan-slim-x2.onnx',
      'realesrgan-x4plus.onnx',
    ]);
  });
});

/** A small tmpfs of our own, where the machine lets us mount one (root, no seccomp veto). */
function mountTmpfs(at: string, size: string): boolean {
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', at], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

describe.runIf(process.getuid?.() === 0)('a full temp file system (a real tmpfs)', () => {
  it('is a state: jobs wait in the stream while readiness says why, and run once space returns', async (ctx) => {
    const mount = await scratch('tmpfs');
    if (!mountTmpfs(mount, '420m')) return ctx.skip();
    try {
      // An image job can need its 1 MiB input plus a 96 MP output (384 MB): it fits 420 MB, not 420 - 100.
      const env = {
        MEDIA_WORKER_TMP_DIR: path.join(mount, 'tmp'),
        RESULTS_DIR: path.join(mount, 'results'),
        MEDIA_WORKER_MAX_IMAGE_BYTES: String(1024 * 1024),
        WORKER_DISK_RESERVE_MB: '0',
        WORKER_READINESS_INTERVAL_MS: '300',
      };
      const s = serve(env);
      const port = await s.serving();
      expect((await readyz(port)).status).toBe(200);
      const filler = path.join(mount, 'filler');
      await fs.writeFile(filler, Buffer.alloc(100 * 1024 * 1024));
      await waitFor('readiness to see the full disk', async () => (await readyz(port)).status === 503);
      const full = await readyz(port);
      expect(full.body.kinds.image?.reasons[0]).toMatch(
        /^disk-space: \d+ MiB free in the temp and results directories .* but a job can need \d+ MiB with the reserve$/,
      );
      await cp.publishJob('image', 'vendor-image-upscale', {
        id: 'full-1',
        model: 'vendor-image-upscale',
        input: { image_url: `${base}/chelsea.png`, upscale_factor: '2' },
      });
      await sleep(1500);
      // Not run (at most handed back unrun, if a pull asked for before the disk filled delivered it).
      expect(await cp.eventsOf('full-1')).toEqual([]);
      expect(await cp.jobsInQueue()).toBe(1);
      expect(await jobDirs(env.MEDIA_WORKER_TMP_DIR)).toEqual([]);

      await fs.rm(filler);
      const event = await waitFor('the event once space returns', async () => (await cp.eventsOf('full-1'))[0], 30_000);
      expect(event).toMatchObject({ status: 'completed' });
      expect(s.log()).toContain('Not serving image jobs');
      expect(s.log()).toContain('Serving image jobs again');
      s.child.kill('SIGTERM');
      expect(await exitedWithin(s, 20_000)).toBe(0);
    } finally {
      execFileSync('umount', ['-l', mount], { stdio: 'ignore' });
    }
  });
});

describe('a host configured for CUDA without it (this CPU-only machine)', () => {
  const quote = async (): Promise<{ hardware_class?: string; error?: { code: string } }> => {
    const reply = await cp.nc.request(
      'media.quote',
      JSON.stringify({
        model: 'vendor-image-upscale',
        input: { image_url: `${base}/chelsea.png`, upscale_factor: '4' },
      }),
      { timeout: 10_000 },
    );
    return reply.json();
  };
  const capabilities = async (): Promise<unknown> =>
    (await cp.nc.request('media.capabilities', '', { timeout: 5000 })).json();

  it('is not ready for image jobs and says why, announces the CPU it runs on, and says so in the metrics; CPU fallback allowed: ready, quoted as cpu', async () => {
    const env = {
      MEDIA_WORKER_EXECUTION_PROVIDERS: 'cuda,cpu',
      MEDIA_WORKER_TMP_DIR: await scratch('cuda-tmp'),
      RESULTS_DIR: await scratch('cuda-results'),
    };
    const s = serve(env);
    const port = await s.serving();
    const refused = await readyz(port);
    expect(refused.status).toBe(503);
    expect(refused.body.kinds.image?.ready).toBe(false);
    const reasons = refused.body.kinds.image?.reasons.join('\n') ?? '';
    expect(reasons).toContain('execution-provider: execution provider cuda could not start (cuda: ');
    expect(reasons).toContain('libonnxruntime_providers_cuda.so is not installed');
    expect(reasons).toContain('MEDIA_WORKER_CPU_FALLBACK');
    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    expect(metrics).toContain('media_worker_execution_provider_info{provider="cpu",requested="cuda,cpu"} 1');
    // WORKER_PRECISION=auto on the CPU that answered: no int8 gate passes, so float32 (issue 48).
    expect(metrics).toMatch(
      /media_worker_sr_precision_info\{network="realesrgan-x4fast",graph="realesrgan-x4fast",precision="fp32",requested="auto"\} 1/,
    );
    expect(s.log()).toMatch(/realesrgan-x4fast runs fp32 \(auto: int8 not offered, gate fails: lowest PSNR/);
    // Discovery says what runs; the quote of a kind no live worker runs is refused (docs/protocol.md).
    expect(await capabilities()).toMatchObject({
      hardwareClass: 'cpu',
      executionProvider: 'cpu',
      precision: {
        requested: 'auto',
        networks: expect.arrayContaining([
          expect.objectContaining({ network: 'realesrgan-x4plus', graph: 'realesrgan-x4plus', precision: 'fp32' }),
        ]),
      },
      kinds: { image: { ready: false } },
    });
    expect((await quote()).error).toMatchObject({ code: 'MODEL_UNAVAILABLE' });
    await cp.publishJob('image', 'vendor-image-upscale', {
      id: 'cuda-less-1',
      model: 'vendor-image-upscale',
      input: { image_url: `${base}/chelsea.png` },
    });
    await sleep(2000);
    expect(await cp.eventsOf('cuda-less-1')).toEqual([]);
    expect(await cp.jobsInQueue()).toBe(1);
    s.child.kill('SIGTERM');
    expect(await exitedWithin(s, 20_000)).toBe(0);

    const allowed = serve({ ...env, MEDIA_WORKER_CPU_FALLBACK: 'true' });
    const allowedPort = await allowed.serving();
    const ready = await readyz(allowedPort);
    expect(ready.body.kinds.image).toMatchObject({ ready: true, reasons: [] });
    expect((await quote()).hardware_class).toBe('cpu');
    const event = await waitFor('the image event', async () => (await cp.eventsOf('cuda-less-1'))[0], 60_000);
    expect(event).toMatchObject({ status: 'completed', attempt: 1 });
  });
});
