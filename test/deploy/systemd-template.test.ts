/**
 * systemd/media-worker@.service, one worker per GPU: read as systemd reads it (Environment= lines,
 * then the environment file, then what ExecStart's env(1) sets, with %i, %H and ${VAR} expanded),
 * every instance gets settings that exist, its own GPU, health port, temp, results and TensorRT
 * cache directories; and two instances started as the unit starts them (`serve`, their index and
 * name from the unit, a real nats-server with the shipped per-role users) say which device they run on and both take jobs from
 * the same stream.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, describe, expect, it } from 'vitest';
import { knownSettingNames, loadConfig, SETTINGS_SECTIONS } from '../../src/config.js';
import { PACKAGE_ROOT } from '../../src/paths.js';
import { capabilitiesSchema, CAPABILITIES_SUBJECT, type Capabilities } from '../../src/protocol/index.js';
import { workerSettingsFromEnv } from '../../src/worker/settings.js';
import { controlPlane, waitFor, type ControlPlane } from '../worker/helpers/jetstream.js';
import { provisionFromEnv } from '../helpers/provision.js';
import { startRoleNats, type RoleNats } from '../helpers/role-nats.js';

const read = (file: string): Promise<string> => readFile(path.join(PACKAGE_ROOT, file), 'utf8');
const CLI = path.join(PACKAGE_ROOT, 'dist', 'src', 'cli.js');

/** `A=1 B=two` words of a line, unquoted (the unit and the file use no quotes with spaces). */
function assignments(text: string): [string, string][] {
  return [...text.matchAll(/(?:^|\s)([A-Za-z_][A-Za-z0-9_]*)=(\S*)/g)].map((m) => [m[1] as string, m[2] as string]);
}

/** The unit for one instance: %i and %H replaced, continuation lines joined. */
function instanceUnit(template: string, index: number, hostname: string): string {
  return template.replace(/\\\n/g, ' ').replaceAll('%i', String(index)).replaceAll('%H', hostname);
}

/** The environment the instance's `node` gets: Environment=, then the file, then ExecStart's env(1) words, ${VAR} from what came before. */
function instanceEnv(unit: string, envFile: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const line of unit.split('\n').filter((l) => l.startsWith('Environment=')))
    Object.assign(env, Object.fromEntries(assignments(line.slice(12))));
  for (const line of envFile
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#')))
    Object.assign(env, Object.fromEntries(assignments(line)));
  const exec = /^ExecStart=\/usr\/bin\/env (.*?) \/usr\/bin\/node /m.exec(unit)?.[1];
  if (exec === undefined) throw new Error('Expected ExecStart=/usr/bin/env NAME=VALUE... /usr/bin/node ...');
  const base = { ...env };
  for (const [name, value] of assignments(exec))
    env[name] = value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, v: string) => base[v] ?? '');
  return env;
}

const template = await read('systemd/media-worker@.service');
const envFile = await read('systemd/media-worker.env');
const hostname = 'gpu-host-1';
const instances = [0, 1, 7].map((i) => ({ index: i, env: instanceEnv(instanceUnit(template, i, hostname), envFile) }));

describe('systemd/media-worker@.service', () => {
  it('sets only settings that exist, with values every command accepts, for each instance', () => {
    const known = new Set([...knownSettingNames(), 'npm_config_cache']);
    for (const { env } of instances) {
      expect(Object.keys(env).filter((n) => !known.has(n))).toEqual([]);
      for (const section of SETTINGS_SECTIONS) expect(() => section.load(env)).not.toThrow();
    }
  });

  it('gives each instance its own GPU, health port, temp, results and TensorRT cache directories, and name', () => {
    const per = instances.map(({ index, env }) => {
      const config = loadConfig(env);
      const worker = workerSettingsFromEnv(env);
      return {
        index,
        device: config.deviceIndex,
        port: worker.healthPort,
        tmp: config.tmpDir,
        results: worker.resultsDir,
        trt: config.tensorrtCacheDir,
        name: worker.natsName,
        url: worker.publicBaseUrl,
      };
    });
    expect(per.map((p) => p.device)).toEqual([0, 1, 7]);
    expect(per.map((p) => p.port)).toEqual([9470, 9471, 9477]);
    for (const key of ['port', 'tmp', 'results', 'trt', 'name', 'url'] as const)
      expect(new Set(per.map((p) => p[key])).size, key).toBe(per.length);
    expect(per[1]).toMatchObject({
      tmp: '/var/lib/media-worker/tmp/gpu1',
      results: '/var/lib/media-worker/results/gpu1',
      name: `media-worker@${hostname}-gpu1`,
    });
    // The static server keeps serving /var/lib/media-worker/results: each instance's URLs name its subdirectory.
    expect(per[1]?.url).toBe('https://cdn.example.com/results/gpu1');
    // Under the directories the sandbox lets it write, and stopped no sooner than the single unit.
    const writable = (/^ReadWritePaths=(.*)$/m.exec(template)?.[1] ?? '').split(/\s+/);
    for (const p of per)
      for (const dir of [p.tmp, p.results, p.trt])
        expect(
          writable.some((w) => dir?.startsWith(`${w}/`)),
          dir,
        ).toBe(true);
    expect(/^TimeoutStopSec=(\d+)$/m.exec(template)?.[1]).toBe('200');
  });
});

describe('two instances on one host', () => {
  let roles: RoleNats | undefined;
  let cp: ControlPlane | undefined;
  let http: Server | undefined;
  let dir = '';
  const daemons: { proc: ChildProcess; stderr: string }[] = [];

  afterAll(async () => {
    await Promise.all(
      daemons
        .filter((d) => d.proc.exitCode === null)
        .map((d) => {
          const exited = new Promise((resolve) => d.proc.once('exit', resolve));
          d.proc.kill('SIGKILL');
          return exited;
        }),
    );
    await cp?.close();
    await roles?.close();
    http?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('start with their own index and name, say which device they run on, and both take jobs from the same stream', async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'media-worker-gpus-'));
    const png = await sharp({ create: { width: 24, height: 16, channels: 3, background: { r: 200, g: 90, b: 40 } } })
      .png()
      .toBuffer();
    http = createServer((_req, res) => res.writeHead(200, { 'content-type': 'image/png' }).end(png));
    await new Promise<void>((resolve) => http!.listen(0, '127.0.0.1', resolve));
    const imageUrl = `http://127.0.0.1:${(http.address() as AddressInfo).port}/p.png`;
    // The shipped per-role users: the instances as their host's user, the operator's step at install
    // (docs/operations.md, "Who creates what") as operator: instances only bind.
    roles = await startRoleNats(await mkdtemp(path.join(dir, 'nats-')));
    await provisionFromEnv(roles.env('operator'));

    for (const { index, env } of instances.slice(0, 2)) {
      // The unit's per-instance values, with the host's paths and NATS replaced by this test's (port 0: any free one).
      const proc = spawn(process.execPath, [CLI, 'serve'], {
        env: {
          ...process.env,
          ...roles.env('worker-host1'),
          LOG_LEVEL: 'info',
          LOG_FORMAT: 'json',
          MEDIA_WORKER_ALLOW_PRIVATE_URLS: '1',
          MEDIA_WORKER_DEVICE_INDEX: env['MEDIA_WORKER_DEVICE_INDEX'],
          NATS_CONNECTION_NAME: env['NATS_CONNECTION_NAME'],
          MEDIA_WORKER_TMP_DIR: path.join(dir, 'tmp', `gpu${index}`),
          RESULTS_DIR: path.join(dir, 'results', `gpu${index}`),
          RESULTS_BASE_URL: env['RESULTS_BASE_URL'],
          WORKER_HEALTH_PORT: '0',
          WORKER_CONCURRENCY: 'image=1,video=0,lipsync=0,music=0,music-video=0',
          MEDIA_WORKER_SR_MODELS: 'image=realesrgan-x4fast',
          MEDIA_WORKER_THREADS: '1',
        },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      const daemon = { proc, stderr: '' };
      proc.stderr?.on('data', (chunk: Buffer) => (daemon.stderr += chunk.toString()));
      daemons.push(daemon);
    }
    const serving = await Promise.all(
      daemons.map((d, i) =>
        waitFor(
          `instance ${i} to serve`,
          () => {
            if (d.proc.exitCode !== null)
              throw new Error(`instance ${i} exited ${d.proc.exitCode}: ${d.stderr.slice(-2000)}`);
            const line = d.stderr.split('\n').find((l) => l.includes('"media-worker serving"'));
            return line === undefined
              ? undefined
              : (JSON.parse(line) as {
                  healthPort: number;
                  deviceIndex: number;
                  device: { kind: string; note?: string };
                });
          },
          90_000,
          200,
        ),
      ),
    );
    // Each says its index; on this CPU machine the device is the CPU, and it says so.
    expect(serving.map((s) => s.deviceIndex)).toEqual([0, 1]);
    for (const [i, s] of serving.entries()) {
      expect(s.device).toMatchObject({ kind: 'cpu', provider: 'cpu', index: null });
      expect(s.device.note).toContain(`MEDIA_WORKER_DEVICE_INDEX=${i}`);
      const ready = (await (await fetch(`http://127.0.0.1:${s.healthPort}/readyz`)).json()) as {
        status: string;
        device: unknown;
      };
      expect(ready.status).toBe('ready');
      expect(ready.device).toEqual(s.device);
    }

    cp = await controlPlane(
      roles.url,
      { jobsStream: 'MEDIA_JOBS', eventsStream: 'MEDIA_EVENTS' },
      roles.auth('operator'),
    );
    // Discovery names each instance and its device.
    const replies: Capabilities[] = [];
    const inbox = cp.nc.subscribe(`_INBOX.gpus.${Date.now()}`);
    const collecting = (async () => {
      for await (const msg of inbox) replies.push(capabilitiesSchema.parse(msg.json()));
    })();
    cp.nc.publish(CAPABILITIES_SUBJECT, '', { reply: inbox.getSubject() });
    await waitFor('both capabilities', () => replies.length >= 2 || undefined, 5000);
    inbox.unsubscribe();
    await collecting;
    expect(replies.map((r) => r.worker).sort()).toEqual(
      instances
        .slice(0, 2)
        .map((x) => x.env['NATS_CONNECTION_NAME'])
        .sort(),
    );
    for (const r of replies) expect(r.device?.kind).toBe('cpu');

    const jobs = Array.from({ length: 8 }, (_, n) => `gpus-${n}`);
    for (const id of jobs)
      await cp.publishJob('image', 'vendor-image-upscale', {
        id,
        model: 'vendor-image-upscale',
        input: { image_url: imageUrl, upscale_factor: '2' },
      });
    const events = await waitFor(
      'every event',
      async () => {
        const all = await cp!.events();
        return all.length >= jobs.length ? all : undefined;
      },
      120_000,
      200,
    );
    expect(events.map((e) => e.id).sort()).toEqual([...jobs].sort());
    expect(events.every((e) => e.status === 'completed')).toBe(true);
    // Both instances took jobs from the one stream, and stored them in their own results directory.
    const byWorker = new Map<string, number>();
    for (const e of events) byWorker.set(String(e.worker), (byWorker.get(String(e.worker)) ?? 0) + 1);
    expect([...byWorker.keys()].sort()).toEqual(
      instances
        .slice(0, 2)
        .map((x) => x.env['NATS_CONNECTION_NAME'])
        .sort(),
    );
    for (const e of events) {
      const gpu = String(e.worker).endsWith('-gpu1') ? 'gpu1' : 'gpu0';
      expect(
        (e.result as { url: string }).url.startsWith(`https://cdn.example.com/results/${gpu}/image/${e.id}/`),
      ).toBe(true);
    }
  });
});
