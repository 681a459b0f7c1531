import { describe, expect, it } from 'vitest';
import { formatLogLine } from '../../src/cli/human-log.js';
import { createTerminalProgress } from '../../src/cli/progress.js';
import { createTerminalLine } from '../../src/cli/terminal.js';
import { createLogger } from '../../src/logger.js';

function fakeStream(isTTY: boolean): { stream: NodeJS.WriteStream; written: () => string } {
  let out = '';
  const stream = { isTTY, write: (chunk: string) => ((out += chunk), true) } as unknown as NodeJS.WriteStream;
  return { stream, written: () => out };
}

describe('human log lines', () => {
  it('turns a pino record into level, message and the fields a person needs, task id first', () => {
    const json = JSON.stringify({
      level: 40,
      time: 1,
      pid: 7,
      hostname: 'h',
      service: 'media-worker',
      model: 'm',
      taskId: 't-1',
      msg: 'slow network',
    });
    expect(formatLogLine(json)).toBe('warn: slow network (taskId=t-1, model=m)');
    expect(
      formatLogLine(JSON.stringify({ level: 50, msg: 'failed', err: { message: 'disk full', stack: 'at x' } })),
    ).toBe('error: failed (err="disk full")');
    expect(formatLogLine('not json')).toBe('not json');
  });

  it('feeds the logger through the formatter: no JSON reaches the terminal', () => {
    const lines: string[] = [];
    const logger = createLogger('info', 'stderr', (json) => lines.push(formatLogLine(json)));
    logger.child({ taskId: 'a' }).warn({ file: 'x.png' }, 'converting');
    logger.debug('hidden');
    expect(lines).toEqual(['warn: converting (taskId=a, file=x.png)']);
  });
});

describe('the progress bar and log lines share stderr', () => {
  it('a line written while the bar is drawn clears it, then draws it again below', () => {
    const { stream, written } = fakeStream(true);
    const term = createTerminalLine(stream);
    term.bar('upscaling 50%');
    term.line('warn: something');
    expect(written()).toBe('\r\x1b[2Kupscaling 50%\r\x1b[2Kwarn: something\nupscaling 50%');
    term.clearBar();
    term.line('done');
    expect(written().endsWith('\r\x1b[2Kdone\n')).toBe(true);
  });

  it('the reporter draws through it; on a pipe it writes whole lines', () => {
    const tty = fakeStream(true);
    let t = 0;
    const bar = createTerminalProgress(tty.stream, { now: () => (t += 1000) });
    bar.report({ stage: 'upscaling', done: 1, total: 2, unit: 'tiles' });
    bar.close('done');
    expect(tty.written()).toMatch(/^\r\x1b\[2Kupscaling \[#+\.+\] 50\.0% 1\/2 tiles.*\r\x1b\[2Kdone \(\d+\.\ds\)\n$/);
    const pipe = fakeStream(false);
    const plain = createTerminalProgress(pipe.stream, { now: () => (t += 1000) });
    plain.report({ stage: 'upscaling', done: 2, total: 2, unit: 'tiles' });
    expect(pipe.written()).toMatch(/^upscaling 100\.0% 2\/2 tiles .*\n$/);
    expect(pipe.written()).not.toContain('\x1b');
  });
});
