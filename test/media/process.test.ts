import { existsSync } from 'node:fs';
import { Readable } from 'node:stream';
import { text } from 'node:stream/consumers';
import { describe, expect, it } from 'vitest';
import { ProcessError, TailBuffer, ffmpegReason, runProcess, spawnProcess } from '../../src/media/process.js';

const SH = '/bin/sh';

/** True while the pid exists at all (a zombie still has a /proc entry). */
function pidExists(pid: number | undefined): boolean {
  return pid !== undefined && existsSync(`/proc/${pid}`);
}

describe('TailBuffer', () => {
  it('keeps only the last bytes', () => {
    const tail = new TailBuffer(10);
    tail.push(Buffer.from('0123456789abc'));
    expect(tail.toString()).toBe('3456789abc');
    tail.push(Buffer.from('XY'));
    expect(tail.toString()).toBe('56789abcXY');
    for (let i = 0; i < 100; i++) tail.push(Buffer.from('z'));
    expect(tail.toString()).toBe('zzzzzzzzzz');
  });
});

describe('ffmpegReason', () => {
  it.each([
    [
      'the last two lines, the path said as input',
      'a\n[mov,mp4 @ 0x1] moov atom not found\nfile:/tmp/x.mp4: Invalid data\n',
      'moov atom not found; input: Invalid data',
    ],
    ['the bare path too', '/tmp/x.mp4: No such file or directory\n\n', 'input: No such file or directory'],
    ['nothing useful', '\n  \n', 'no details'],
  ])('gives %s', (_what, tail, reason) => {
    expect(ffmpegReason(tail, [['/tmp/x.mp4', 'input']], 2)).toBe(reason);
  });
});

describe('runProcess', () => {
  it('collects stdout and the exit code', async () => {
    const result = await runProcess(SH, ['-c', 'printf hello; printf oops >&2']);
    expect(result.stdout.toString()).toBe('hello');
    expect(result.stderrTail).toBe('oops');
    expect(result.code).toBe(0);
  });

  it('feeds stdin from a buffer or a stream', async () => {
    expect((await runProcess('cat', [], { stdin: Buffer.from('abc') })).stdout.toString()).toBe('abc');
    expect((await runProcess('cat', [], { stdin: Readable.from(['x', 'y']) })).stdout.toString()).toBe('xy');
  });

  it('fails with a ProcessError carrying the code and a bounded stderr tail', async () => {
    const err = await runProcess(SH, ['-c', 'head -c 100000 /dev/zero | tr "\\0" a >&2; echo THE-END >&2; exit 3'], {
      stderrTailBytes: 8 * 1024,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProcessError);
    const pe = err as ProcessError;
    expect(pe.reason).toBe('exit');
    expect(pe.exitCode).toBe(3);
    expect(pe.message).toBe('sh exited with code 3');
    expect(pe.stderrTail.length).toBe(8 * 1024);
    expect(pe.stderrTail.endsWith('THE-END\n')).toBe(true);
  });

  it('kills a process that ignores SIGTERM with SIGKILL after the grace period, leaving no zombie', async () => {
    const started = Date.now();
    const proc = spawnProcess(SH, ['-c', 'trap "" TERM; while :; do sleep 0.05; done'], {
      timeoutMs: 200,
      killGraceMs: 200,
    });
    const pid = proc.child.pid;
    const err = await proc.done.catch((e: unknown) => e);
    expect(err).toMatchObject({ reason: 'timeout', signal: 'SIGKILL' });
    expect((err as Error).message).toBe('sh timed out after 200 ms');
    expect(Date.now() - started).toBeGreaterThanOrEqual(380);
    expect(pidExists(pid)).toBe(false);
  });

  it('rejects with the abort reason when the signal fires, and the child is gone', async () => {
    const controller = new AbortController();
    const promise = runProcess('sleep', ['30'], { signal: controller.signal });
    setTimeout(() => controller.abort(new Error('job cancelled')), 50);
    await expect(promise).rejects.toThrow('job cancelled');
  });

  it('refuses to start when the signal is already aborted', async () => {
    const controller = new AbortController();
    controller.abort(new Error('too late'));
    await expect(runProcess('true', [], { signal: controller.signal })).rejects.toThrow('too late');
  });

  it('kills a process that floods stdout past the cap', async () => {
    const err = await runProcess('cat', ['/dev/zero'], { maxStdoutBytes: 1024 * 1024 }).catch((e: unknown) => e);
    expect(err).toMatchObject({ reason: 'output-limit' });
  });

  it('reports a binary that cannot be started', async () => {
    const err = await runProcess('/nonexistent/ffmpeg', []).catch((e: unknown) => e);
    expect(err).toMatchObject({ reason: 'spawn' });
    expect((err as Error).message).toMatch(/^ffmpeg could not be started: /);
  });
});

describe('spawnProcess (streaming)', () => {
  it('exposes stdin and stdout as streams', async () => {
    const proc = spawnProcess('tr', ['a-z', 'A-Z'], { stdin: 'pipe' });
    proc.stdin?.end('stream me');
    expect(await text(proc.stdout ?? Readable.from([]))).toBe('STREAM ME');
    await expect(proc.done).resolves.toMatchObject({ code: 0 });
  });

  it('reports a child that dies while being written to through `done`, not as an uncaught EPIPE', async () => {
    const proc = spawnProcess(SH, ['-c', 'echo bad input >&2; exit 1'], { stdin: 'pipe' });
    const chunk = Buffer.alloc(64 * 1024);
    for (let i = 0; i < 64; i++) proc.stdin?.write(chunk);
    const err = await proc.done.catch((e: unknown) => e);
    expect(err).toMatchObject({ reason: 'exit', exitCode: 1, stderrTail: 'bad input\n' });
  });

  it('kill() stops the child and `done` settles', async () => {
    const proc = spawnProcess('sleep', ['30']);
    proc.kill();
    const err = await proc.done.catch((e: unknown) => e);
    expect(err).toMatchObject({ reason: 'signal', signal: 'SIGTERM' });
    expect(pidExists(proc.child.pid)).toBe(false);
  });
});
