/** The built command line (dist/src/cli.js) in a child process, as a user runs it: exit code and both streams. */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { PACKAGE_ROOT } from '../../src/paths.js';

export const CLI = path.join(PACKAGE_ROOT, 'dist', 'src', 'cli.js');

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

export function runCli(
  args: string[],
  o: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): Promise<CliRun> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [CLI, ...args],
      { cwd: o.cwd ?? PACKAGE_ROOT, env: o.env ?? process.env, timeout: o.timeoutMs ?? 120_000 },
      (err, stdout, stderr) => {
        resolve({ code: err === null ? 0 : typeof err.code === 'number' ? err.code : 1, stdout, stderr });
      },
    );
  });
}
