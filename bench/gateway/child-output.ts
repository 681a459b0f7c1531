/**
 * Waiting for a benchmark's child process (a gateway, a worker) to say it is ready: the first match
 * of `line` in its stdout or stderr, within two minutes; an exit before that fails with its tail.
 */
import type { ChildProcess } from 'node:child_process';

export async function started(child: ChildProcess, line: RegExp): Promise<RegExpExecArray> {
  let out = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`Timed out waiting for ${line}: ${out.slice(-2000)}`)), 120_000);
    const onData = (c: Buffer): void => {
      out += c.toString();
      const match = line.exec(out);
      if (match === null) return;
      clearTimeout(timer);
      // From here on the output is drained, not kept: a gateway logging every request would
      // otherwise grow this string (and the search through it) for the whole run.
      child.stdout?.off('data', onData).resume();
      child.stderr?.off('data', onData).resume();
      resolve(match);
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code) => reject(new Error(`exited with ${code}: ${out.slice(-2000)}`)));
  });
}
