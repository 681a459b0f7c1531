/**
 * A throwaway nats-server for the worker's integration tests: JetStream on, a random port
 * (`-p -1`; `-p 0` would mean 4222), a store in a temp directory, the address read from the file
 * `--ports_file_dir` writes. When NATS_URL is set the tests use that server instead and the
 * restart test is skipped.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

export interface TestNatsServer {
  url: string;
  /** False when the suite runs against NATS_URL (it cannot be restarted or stopped). */
  owned: boolean;
  /** Stops the server (SIGTERM) and starts it again on the same port with the same store. */
  restart(downMs?: number): Promise<void>;
  stopProcess(): Promise<void>;
  startProcess(): Promise<void>;
  /** Stops the server and removes its store. */
  close(): Promise<void>;
}

const START_TIMEOUT_MS = 10_000;

export function natsServerBinary(): string {
  if (process.env.NATS_SERVER_BIN) return process.env.NATS_SERVER_BIN;
  return existsSync('/usr/sbin/nats-server') ? '/usr/sbin/nats-server' : 'nats-server';
}

export interface NatsServerOptions {
  /** A configuration file (`-c`), naming its store relative to the working directory; port and address come from the helper's flags, which win. */
  configFile?: string;
  /** Environment of the server (the configuration's `$VARIABLES`). */
  env?: NodeJS.ProcessEnv;
  /** Another nats-server than natsServerBinary() (the permission tests run on 2.9 and 2.10 alike). */
  binary?: string;
}

/** With `options`, always a server of its own (NATS_URL's server has another configuration). */
export async function startNatsServer(options: NatsServerOptions = {}): Promise<TestNatsServer> {
  const external = options.configFile === undefined ? process.env.NATS_URL : undefined;
  if (external) {
    // Test files run in parallel processes and all use the same stream names (their subjects may
    // not overlap), so on a shared server they take turns.
    const release = await lockSharedServer();
    const refuse = (): Promise<void> =>
      Promise.reject(new Error('Cannot restart or stop the server given by NATS_URL'));
    return { url: external, owned: false, restart: refuse, stopProcess: refuse, startProcess: refuse, close: release };
  }

  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'media-worker-nats-'));
  const binary = options.binary ?? natsServerBinary();
  let child: ChildProcess | undefined;
  let port = -1;
  let stderrTail = '';

  const startProcess = async (): Promise<void> => {
    // A configuration names its own store (relative, so under the server's working directory, `dir`).
    const store =
      options.configFile === undefined ? ['-js', '-sd', path.join(dir, 'store')] : ['-c', options.configFile];
    const proc = spawn(binary, [...store, '-p', String(port), '-a', '127.0.0.1', '--ports_file_dir', dir], {
      stdio: ['ignore', 'ignore', 'pipe'],
      cwd: dir,
      env: { ...process.env, ...options.env },
    });
    proc.stderr?.on('data', (chunk: Buffer) => {
      stderrTail = (stderrTail + chunk.toString()).slice(-4000);
    });
    child = proc;
    const portsFile = path.join(dir, `${path.basename(binary)}_${proc.pid}.ports`);
    const deadline = Date.now() + START_TIMEOUT_MS;
    for (;;) {
      if (proc.exitCode !== null) throw new Error(`nats-server exited with ${proc.exitCode}: ${stderrTail}`);
      try {
        const ports = JSON.parse(await fs.readFile(portsFile, 'utf8')) as { nats: string[] };
        const url = ports.nats[0];
        if (url) {
          port = Number(new URL(url).port);
          break;
        }
      } catch {
        // Not written yet (or half written): try again.
      }
      if (Date.now() > deadline) throw new Error(`nats-server did not write ${portsFile} in time: ${stderrTail}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  };

  const stopProcess = async (): Promise<void> => {
    const proc = child;
    child = undefined;
    if (!proc || proc.exitCode !== null) return;
    const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
    proc.kill('SIGTERM');
    const timer = setTimeout(() => proc.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
  };

  await startProcess();
  const url = `nats://127.0.0.1:${port}`;
  return {
    url,
    owned: true,
    startProcess,
    stopProcess,
    async restart(downMs = 0) {
      await stopProcess();
      if (downMs > 0) await new Promise((r) => setTimeout(r, downMs));
      await startProcess();
    },
    async close() {
      await stopProcess();
      await fs.rm(dir, { recursive: true, force: true });
    },
  };
}

const LOCK_FILE = path.join(os.tmpdir(), 'media-worker-tests-nats-url.lock');

/** A lock file holding the owner's pid; a lock whose owner died is taken over. */
async function lockSharedServer(timeoutMs = 110_000): Promise<() => Promise<void>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await fs.writeFile(LOCK_FILE, String(process.pid), { flag: 'wx' });
      return () => fs.rm(LOCK_FILE, { force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const owner = Number(await fs.readFile(LOCK_FILE, 'utf8').catch(() => ''));
    if (Number.isInteger(owner) && owner > 0 && !isAlive(owner)) await fs.rm(LOCK_FILE, { force: true });
    if (Date.now() > deadline) throw new Error(`Another test file holds ${LOCK_FILE} for too long`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
