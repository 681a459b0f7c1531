/**
 * `media-worker serve` as the tests start it: the built CLI (dist/) in a process of its own, its
 * stderr (the JSON log) kept, its exit, and a wait for its `media-worker serving` line (the state
 * a test needs before it sends work, never a sleep).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { PACKAGE_ROOT } from '../../src/paths.js';
import { waitFor } from '../worker/helpers/jetstream.js';

export const CLI = path.join(PACKAGE_ROOT, 'dist', 'src', 'cli.js');

export interface ServeProcess {
  child: ChildProcess;
  /** The exit code, or the signal's name. */
  exited: Promise<number | string>;
  log(): string;
  /** The health port, once `media-worker serving` is logged; fails, with the log's end, if serve exits first. */
  serving(timeoutMs?: number): Promise<number>;
}

export interface ServeOptions {
  cwd?: string;
  uid?: number;
  gid?: number;
}

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
  return {
    child,
    exited,
    log: () => log,
    serving: (timeoutMs = 60_000) =>
      waitFor(
        'serve to be serving',
        () => {
          if (child.exitCode !== null) throw new Error(`serve exited ${child.exitCode}: ${log.slice(-2000)}`);
          const line = log.split('\n').find((l) => l.includes('"msg":"media-worker serving"'));
          return line === undefined ? undefined : (JSON.parse(line) as { healthPort: number }).healthPort;
        },
        timeoutMs,
      ),
  };
}
