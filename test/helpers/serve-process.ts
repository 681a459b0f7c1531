/**
 * `media-worker serve` as the tests start it: the built CLI (dist/) in a process of its own, its
 * stderr (the JSON log) kept, its exit, and waits for its `media-worker serving` line and for a
 * kind's readiness (the state a test needs before it sends work, never a sleep). `serveEnv` is the
 * environment the scenarios start from; `serveGroup` keeps the processes a file starts, to stop them.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { PACKAGE_ROOT } from '../../src/paths.js';
import { waitFor } from '../worker/helpers/jetstream.js';
import type { RoleNats } from './role-nats.js';

export const CLI = path.join(PACKAGE_ROOT, 'dist', 'src', 'cli.js');

export interface ServeProcess {
  child: ChildProcess;
  /** The exit code, or the signal's name. */
  exited: Promise<number | string>;
  log(): string;
  /** The health port, once `media-worker serving` is logged; fails, with the log's end, if serve exits first. */
  serving(timeoutMs?: number): Promise<number>;
  /** The health port, once serving and /readyz says `kind` is ready; fails, with the log's end, if serve exits first. */
  ready(kind: string, timeoutMs?: number): Promise<number>;
  /** SIGKILL, unless it has exited; resolves with its exit. */
  stop(): Promise<number | string>;
}

export interface ServeOptions {
  cwd?: string;
  uid?: number;
  gid?: number;
}

/** GET /readyz of a serve's health port. */
export interface Readiness {
  status: number;
  body: { status: string; kinds: Record<string, { ready: boolean; reasons: string[] }> };
}

export async function readyz(port: number): Promise<Readiness> {
  const res = await fetch(`http://127.0.0.1:${port}/readyz`);
  return { status: res.status, body: (await res.json()) as Readiness['body'] };
}

/**
 * What every scenario's `serve` starts from, as a whole environment (process.env under it): worker
 * host `host1` of the role NATS, an info log (tests read its lines), the health server on a free
 * loopback port (`serving()` reads it from the log), results named under a CDN that does not exist,
 * inputs fetched from the test's own servers on 127.0.0.1.
 */
export function serveEnv(roles: RoleNats): NodeJS.ProcessEnv {
  return {
    ...process.env,
    ...roles.env('worker-host1'),
    LOG_LEVEL: 'info',
    MEDIA_WORKER_ALLOW_PRIVATE_URLS: '1',
    WORKER_HEALTH_PORT: '0',
    WORKER_HEALTH_HOST: '127.0.0.1',
    RESULTS_BASE_URL: 'https://cdn.example.test/results',
  };
}

/**
 * Protocol timings for the tests that kill a worker or wait on a retry: a job a dead worker held is
 * delivered again within seconds, a retry within a moment (provision with them too).
 */
export const QUICK_REDELIVERY = {
  WORKER_ACK_WAIT_MS: '3000',
  WORKER_HEARTBEAT_MS: '500',
  WORKER_PULL_EXPIRES_MS: '1000',
  WORKER_NAK_DELAYS_MS: '200',
} as const;

/**
 * Starts `media-worker serve` under `env`, the whole environment (not laid over process.env, so that
 * a test can leave a setting out). TEST_WORKER_LOG=1 copies its log to the test's stderr.
 */
export function spawnServe(env: NodeJS.ProcessEnv, options: ServeOptions = {}): ServeProcess {
  const child = spawn(process.execPath, [CLI, 'serve'], {
    env,
    stdio: ['ignore', 'ignore', 'pipe'],
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
    ...(options.uid === undefined ? {} : { uid: options.uid, gid: options.gid }),
  });
  let log = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    log += chunk.toString();
    if (process.env['TEST_WORKER_LOG']) process.stderr.write(chunk);
  });
  const exited = new Promise<number | string>((resolve) =>
    child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)),
  );
  const exitedEarly = Symbol('exited');
  /** `probe`'s value, waited for as waitFor does; fails at once, with the log's end, if serve exits first. */
  const whileRunning = async <T>(
    what: string,
    probe: () => Promise<T | undefined | false> | T | undefined | false,
    timeoutMs: number,
  ): Promise<T> => {
    const got = await waitFor<T | typeof exitedEarly>(
      what,
      () => (child.exitCode !== null || child.signalCode !== null ? exitedEarly : probe()),
      timeoutMs,
    );
    if (got === exitedEarly) throw new Error(`serve exited ${child.exitCode ?? child.signalCode}: ${log.slice(-2000)}`);
    return got;
  };
  const serving = (timeoutMs = 60_000): Promise<number> =>
    whileRunning(
      'serve to be serving',
      () => {
        const line = log.split('\n').find((l) => l.includes('"msg":"media-worker serving"'));
        return line === undefined ? undefined : (JSON.parse(line) as { healthPort: number }).healthPort;
      },
      timeoutMs,
    );
  return {
    child,
    exited,
    log: () => log,
    serving,
    async ready(kind, timeoutMs = 60_000) {
      const port = await serving(timeoutMs);
      await whileRunning(
        `${kind} to be ready`,
        async () => (await readyz(port)).body.kinds[kind]?.ready === true,
        timeoutMs,
      );
      return port;
    },
    stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      return exited;
    },
  };
}

/** The serves a test file starts: each under `base()` and the test's own settings, stopped together. */
export interface ServeGroup {
  /** `media-worker serve` under `base()` with `env` laid over it. */
  start: (env?: NodeJS.ProcessEnv, options?: ServeOptions) => ServeProcess;
  /** Stops every serve started (SIGKILL where still running) and waits for each exit: a file's afterEach or afterAll. */
  stopAll: () => Promise<void>;
}

export function serveGroup(base: () => NodeJS.ProcessEnv): ServeGroup {
  const running: ServeProcess[] = [];
  return {
    start(env = {}, options = {}) {
      const s = spawnServe({ ...base(), ...env }, options);
      running.push(s);
      return s;
    },
    async stopAll() {
      await Promise.all(running.splice(0).map((s) => s.stop()));
    },
  };
}
