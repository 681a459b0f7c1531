/**
 * Child processes (ffmpeg, ffprobe) with the guarantees every job needs: stderr is always drained
 * into a bounded tail (a full stderr pipe would stall ffmpeg), cancellation and timeouts send SIGTERM
 * and then SIGKILL after a grace period, and the returned promise settles only once the child has
 * exited and been reaped, so no zombie or orphan outlives the job.
 *
 * Failures are `ProcessError`s carrying exit code, signal and the stderr tail; whether a failure is
 * the input's fault (PROBE_FAILED) or the worker's is for the caller to decide. Cancellation through
 * the AbortSignal rejects with the signal's reason, like Node's own APIs.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import { abortReason } from '../errors.js';

export const DEFAULT_STDERR_TAIL_BYTES = 8 * 1024;
export const DEFAULT_KILL_GRACE_MS = 2_000;
export const DEFAULT_MAX_STDOUT_BYTES = 64 * 1024 * 1024;

export type ProcessFailure = 'exit' | 'signal' | 'timeout' | 'spawn' | 'output-limit';

export interface ProcessErrorDetails {
  command: string;
  args: readonly string[];
  reason: ProcessFailure;
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  stderrTail: string;
  cause?: unknown;
}

export class ProcessError extends Error {
  readonly command: string;
  readonly args: readonly string[];
  readonly reason: ProcessFailure;
  readonly exitCode: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stderrTail: string;

  constructor(message: string, details: ProcessErrorDetails) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.name = 'ProcessError';
    this.command = details.command;
    this.args = details.args;
    this.reason = details.reason;
    this.exitCode = details.exitCode;
    this.signal = details.signal;
    this.stderrTail = details.stderrTail;
  }
}

export function isProcessError(value: unknown): value is ProcessError {
  return value instanceof ProcessError;
}

/** Local paths that must not leak into error messages, with what to say instead ("input", "output"). */
export type PathNames = ReadonlyArray<readonly [path: string, name: string]>;

/**
 * Why ffmpeg or ffprobe failed, for the job's owner: the last `lines` meaningful stderr lines on
 * one line. Local paths mean nothing outside this host and are said by their names; the
 * "[h264 @ 0x55d2785140c0] " prefixes carry a heap address, noise for a reader. ffmpeg's cause
 * comes first ("moov atom not found"), its generic summary last.
 */
export function ffmpegReason(stderrTail: string, paths: PathNames, lines = 3): string {
  const cleaned = stderrTail
    .split('\n')
    .map((line) => {
      let text = line;
      for (const [path, name] of paths) text = text.split(`file:${path}`).join(name).split(path).join(name);
      return text.replace(/^\[[^\]]*@ 0x[0-9a-f]+\]\s*/, '').trim();
    })
    .filter((line) => line !== '');
  const kept = cleaned.slice(-lines);
  return kept.length > 0 ? kept.join('; ') : 'no details';
}

/** Keeps the last `limit` bytes written to it. */
export class TailBuffer {
  private chunks: Buffer[] = [];
  private size = 0;

  constructor(private readonly limit: number) {}

  push(chunk: Buffer): void {
    const piece = chunk.length > this.limit ? chunk.subarray(chunk.length - this.limit) : chunk;
    this.chunks.push(piece);
    this.size += piece.length;
    while (this.size - (this.chunks[0]?.length ?? 0) >= this.limit) {
      this.size -= this.chunks.shift()?.length ?? 0;
    }
  }

  toString(): string {
    const all = Buffer.concat(this.chunks);
    return all.subarray(Math.max(0, all.length - this.limit)).toString('utf8');
  }
}

export interface ProcessOptions {
  signal?: AbortSignal;
  /** Kill the process (SIGTERM, then SIGKILL) when it runs longer than this. */
  timeoutMs?: number;
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** Time between SIGTERM and SIGKILL. */
  killGraceMs?: number;
  stderrTailBytes?: number;
}

export interface RunProcessOptions extends ProcessOptions {
  /** Written to the child's stdin, which is then closed; without it stdin is /dev/null. */
  stdin?: Buffer | string | Readable;
  /** The process is killed and the call fails when stdout grows past this. */
  maxStdoutBytes?: number;
}

export interface ProcessResult {
  stdout: Buffer;
  stderrTail: string;
  code: number;
}

export interface StreamingProcess {
  readonly child: ChildProcess;
  /** The child's stdin (present when `stdin: 'pipe'`); write errors after the child died are expected and surface through `done`. */
  readonly stdin: Writable | null;
  /** The child's stdout (present when `stdout: 'pipe'`). */
  readonly stdout: Readable | null;
  /** Settles after the child exited and was reaped; rejects with ProcessError on failure, or the abort reason on cancel. */
  readonly done: Promise<{ code: number; stderrTail: string }>;
  /** SIGTERM now, SIGKILL after the grace period; `done` still settles once the child is gone. */
  kill(): void;
  /** The stderr tail so far (for progress parsing or logs). */
  stderrTail(): string;
}

export interface SpawnProcessOptions extends ProcessOptions {
  stdin?: 'pipe' | 'ignore';
  stdout?: 'pipe' | 'ignore';
  /** Called with each stderr chunk, e.g. to parse ffmpeg's progress lines. */
  onStderr?: (chunk: Buffer) => void;
}

function describe(command: string): string {
  const slash = command.lastIndexOf('/');
  return slash === -1 ? command : command.slice(slash + 1);
}

/**
 * Spawns a process whose stdin/stdout stay open as streams (the video pipeline's decode and encode
 * stages). The caller must consume stdout; `done` is the single place a failure is reported.
 */
export function spawnProcess(
  command: string,
  args: readonly string[],
  opts: SpawnProcessOptions = {},
): StreamingProcess {
  const tail = new TailBuffer(opts.stderrTailBytes ?? DEFAULT_STDERR_TAIL_BYTES);
  const grace = opts.killGraceMs ?? DEFAULT_KILL_GRACE_MS;
  const name = describe(command);

  let stopReason: 'timeout' | 'aborted' | 'killed' | undefined;
  let killTimer: NodeJS.Timeout | undefined;
  let timeoutTimer: NodeJS.Timeout | undefined;
  let exited = false;

  const child = spawn(command, [...args], {
    cwd: opts.cwd,
    env: opts.env,
    stdio: [opts.stdin ?? 'ignore', opts.stdout ?? 'pipe', 'pipe'],
    // Own process group is not used: ffmpeg/ffprobe do not fork, and signalling the pid is enough.
  });

  const terminate = (): void => {
    if (exited) return;
    child.kill('SIGTERM');
    if (killTimer === undefined) {
      killTimer = setTimeout(() => {
        if (!exited) child.kill('SIGKILL');
      }, grace);
      killTimer.unref();
    }
  };

  child.stderr?.on('data', (chunk: Buffer) => {
    tail.push(chunk);
    opts.onStderr?.(chunk);
  });
  // EPIPE on stdin after the child exited is a symptom; the exit status reported by `done` is the cause.
  child.stdin?.on('error', () => {});

  const onAbort = (): void => {
    stopReason ??= 'aborted';
    terminate();
  };

  const done = new Promise<{ code: number; stderrTail: string }>((resolve, reject) => {
    let spawnError: Error | undefined;
    child.once('error', (err) => {
      // 'error' without a later 'close' happens only when spawning failed.
      spawnError = err;
      if (child.pid === undefined) finish(null, null);
    });
    child.once('close', (code, signal) => finish(code, signal));

    let settled = false;
    function finish(code: number | null, signal: NodeJS.Signals | null): void {
      if (settled) return;
      settled = true;
      exited = true;
      if (killTimer !== undefined) clearTimeout(killTimer);
      if (timeoutTimer !== undefined) clearTimeout(timeoutTimer);
      opts.signal?.removeEventListener('abort', onAbort);
      const stderrTail = tail.toString();
      const base = { command, args, exitCode: code, signal, stderrTail };

      if (spawnError !== undefined && child.pid === undefined) {
        reject(
          new ProcessError(`${name} could not be started: ${spawnError.message}`, {
            ...base,
            reason: 'spawn',
            cause: spawnError,
          }),
        );
      } else if (stopReason === 'aborted' && opts.signal !== undefined) {
        reject(abortReason(opts.signal));
      } else if (stopReason === 'timeout') {
        reject(new ProcessError(`${name} timed out after ${opts.timeoutMs} ms`, { ...base, reason: 'timeout' }));
      } else if (code === 0) {
        resolve({ code, stderrTail });
      } else if (code === null) {
        reject(new ProcessError(`${name} was killed by ${signal ?? 'a signal'}`, { ...base, reason: 'signal' }));
      } else {
        reject(new ProcessError(`${name} exited with code ${code}`, { ...base, reason: 'exit' }));
      }
    }
  });
  // The caller may only look at `done` after consuming the streams; never let it become an
  // unhandled rejection in between.
  done.catch(() => {});

  if (opts.signal !== undefined) {
    if (opts.signal.aborted) onAbort();
    else opts.signal.addEventListener('abort', onAbort, { once: true });
  }
  if (opts.timeoutMs !== undefined) {
    timeoutTimer = setTimeout(() => {
      stopReason ??= 'timeout';
      terminate();
    }, opts.timeoutMs);
  }

  return {
    child,
    stdin: child.stdin,
    stdout: child.stdout,
    done,
    kill: () => {
      stopReason ??= 'killed';
      terminate();
    },
    stderrTail: () => tail.toString(),
  };
}

/** Runs a process to completion, collecting stdout (bounded) and the stderr tail. */
export async function runProcess(
  command: string,
  args: readonly string[],
  opts: RunProcessOptions = {},
): Promise<ProcessResult> {
  if (opts.signal?.aborted) throw abortReason(opts.signal);
  const maxStdout = opts.maxStdoutBytes ?? DEFAULT_MAX_STDOUT_BYTES;
  const proc = spawnProcess(command, args, {
    ...opts,
    stdin: opts.stdin === undefined ? 'ignore' : 'pipe',
    stdout: 'pipe',
  });

  const chunks: Buffer[] = [];
  let size = 0;
  let overflow = false;
  proc.stdout?.on('data', (chunk: Buffer) => {
    if (overflow) return;
    size += chunk.length;
    if (size > maxStdout) {
      overflow = true;
      proc.kill();
      return;
    }
    chunks.push(chunk);
  });

  if (opts.stdin !== undefined && proc.stdin !== null) {
    const input = opts.stdin;
    if (typeof input === 'string' || Buffer.isBuffer(input)) proc.stdin.end(input);
    else input.pipe(proc.stdin);
  }

  try {
    const { code, stderrTail } = await proc.done;
    return { stdout: Buffer.concat(chunks), stderrTail, code };
  } catch (err) {
    if (overflow && isProcessError(err)) {
      throw new ProcessError(`${describe(command)} wrote more than ${maxStdout} bytes to stdout`, {
        command,
        args,
        reason: 'output-limit',
        exitCode: err.exitCode,
        signal: err.signal,
        stderrTail: err.stderrTail,
      });
    }
    throw err;
  }
}
