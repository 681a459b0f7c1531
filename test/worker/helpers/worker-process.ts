/**
 * Starts and stops worker daemons in child processes (fixtures/worker-process.ts, transpiled once
 * per test file) so that tests can SIGKILL or SIGTERM a real process.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { ExecutionRecord } from '../fixtures/test-double-executor.js';
import { REPO_ROOT, transpileForNode, type TranspiledEntry } from './transpile.js';

export interface WorkerProcess {
  child: ChildProcess;
  healthPort: number;
  /** Resolves with the exit code (or the signal's name) once the process has exited. */
  exited: Promise<number | string>;
  /** The last lines of its log (stderr). */
  logTail(): string;
}

export async function buildWorkerFixture(): Promise<TranspiledEntry> {
  return transpileForNode(path.join(REPO_ROOT, 'test/worker/fixtures/worker-process.ts'));
}

export async function spawnWorker(entry: string, env: Record<string, string>): Promise<WorkerProcess> {
  const child = spawn(process.execPath, [entry], {
    env: { ...process.env, LOG_LEVEL: process.env.TEST_WORKER_LOG_LEVEL ?? 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    log = (log + chunk.toString()).slice(-20_000);
    if (process.env.TEST_WORKER_LOG) process.stderr.write(chunk);
  });
  const exited = new Promise<number | string>((resolve) =>
    child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)),
  );
  const healthPort = await new Promise<number>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`worker did not start in time:\n${log}`)), 20_000);
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = /READY (\d+)/.exec(out);
      if (match) {
        clearTimeout(timer);
        resolve(Number(match[1]));
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`worker exited (${code}) before it was ready:\n${log}`));
    });
  });
  return { child, healthPort, exited, logTail: () => log.split('\n').slice(-40).join('\n') };
}

export function readRecords(file: string): ExecutionRecord[] {
  let text = '';
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return [];
  }
  return text
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as ExecutionRecord);
}
