import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  ESTIMATE_CAP,
  createTerminalProgress,
  estimatedProgress,
  singularUnit,
  stepClockText,
} from '../../src/cli/progress.js';

function fakeStream(isTTY: boolean): { stream: NodeJS.WriteStream; lines: () => string[] } {
  let out = '';
  const stream = { isTTY, write: (chunk: string) => ((out += chunk), true) } as unknown as NodeJS.WriteStream;
  // Each redraw on a terminal starts with a carriage return and a clear; on a pipe each line ends with \n.
  return { stream, lines: () => out.split(/\r\x1b\[2K|\n/).filter(Boolean) };
}

const percentOf = (line: string): number => Number(/~?([\d.]+)%/.exec(line)?.[1] ?? NaN);

describe('the progress line while one long network call runs', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('estimatedProgress: moves with the clock, never past the step it waits for, and says when the estimate is passed', () => {
    expect(estimatedProgress(0, 1, 50, 0)).toEqual({ fraction: 0, remaining: 50 });
    expect(estimatedProgress(0, 1, 50, 25)).toEqual({ fraction: 0.5, remaining: 25 });
    // Past the estimate: still moving, ever slower, never at the step.
    const late = [50, 80, 200, 5000].map((t) => estimatedProgress(0, 1, 50, t).fraction);
    for (let i = 1; i < late.length; i++) expect(late[i]).toBeGreaterThan(late[i - 1]!);
    expect(late[0]).toBeCloseTo(0.91);
    expect(late.at(-1)).toBeLessThanOrEqual(ESTIMATE_CAP);
    expect(estimatedProgress(0, 1, 50, 80).remaining).toBe(-30);
    // With 2 of 4 steps done, the wait for the third fills at most that step's quarter.
    expect(estimatedProgress(2, 4, 10, 5).fraction).toBeCloseTo(0.625);
    expect(estimatedProgress(2, 4, 10, 100).fraction).toBeLessThan(0.75);
  });

  it('one tile, 50 s estimated: the line advances from the estimate, says so, and stops short of 100 % until the tile is done', () => {
    vi.useFakeTimers();
    const tty = fakeStream(true);
    const bar = createTerminalProgress(tty.stream, { estimateSeconds: 50 });
    bar.report({ stage: 'upscaling', done: 0, total: 1, unit: 'tiles' });
    expect(tty.lines().at(-1)).toMatch(/^upscaling \[\.+\] 0\.0% 0\/1 tiles/);

    vi.advanceTimersByTime(10_000);
    const at10 = tty.lines().at(-1)!;
    expect(at10).toContain('(estimate)');
    expect(at10).toMatch(
      /^upscaling \[#+\.+\] ~20\.0% \(estimate\) 0\/1 tiles, tile 1 running 10\.0s of ~50\.0s estimated, ETA ~40\.0s$/,
    );

    vi.advanceTimersByTime(30_000);
    const at40 = tty.lines().at(-1)!;
    expect(percentOf(at40)).toBeCloseTo(80, 0);
    expect(percentOf(at40)).toBeGreaterThan(percentOf(at10));

    vi.advanceTimersByTime(30_000);
    const at70 = tty.lines().at(-1)!;
    expect(percentOf(at70)).toBeGreaterThan(percentOf(at40));
    expect(percentOf(at70)).toBeLessThan(100);
    // Time against the estimate, moving though the count does not: not a hang.
    expect(at70).toContain(
      'tile 1 running 1m10s, 20.0s past its ~50.0s estimate: still working (a busy machine is slower)',
    );
    vi.advanceTimersByTime(60_000);
    expect(percentOf(tty.lines().at(-1)!)).toBeGreaterThan(percentOf(at70));

    bar.report({ stage: 'upscaling', done: 1, total: 1, unit: 'tiles' });
    expect(tty.lines().at(-1)).toMatch(/^upscaling \[#{24}\] 100\.0% 1\/1 tiles/);
    bar.close();
    const count = tty.lines().length;
    vi.advanceTimersByTime(10_000);
    expect(tty.lines().length).toBe(count);
  });

  it('after the first step the measured pace takes over from the estimate', () => {
    vi.useFakeTimers();
    const tty = fakeStream(true);
    const bar = createTerminalProgress(tty.stream, { estimateSeconds: 1000 });
    bar.report({ stage: 'upscaling', done: 0, total: 4, unit: 'tiles' });
    vi.advanceTimersByTime(10_000);
    bar.report({ stage: 'upscaling', done: 1, total: 4, unit: 'tiles' });
    vi.advanceTimersByTime(5_000);
    // 10 s a tile measured (not the estimate's 250 s): half of the second tile after 5 s.
    expect(tty.lines().at(-1)).toMatch(
      /~37\.5% \(estimate\) 1\/4 tiles, tile 2 running 5\.0s of ~10\.0s estimated, ETA ~25\.0s$/,
    );
  });

  it("on a pipe, a plain estimated line every 5 s; without an estimate, the counts and the step's clock", () => {
    vi.useFakeTimers();
    const pipe = fakeStream(false);
    const plain = createTerminalProgress(pipe.stream, { estimateSeconds: 60 });
    plain.report({ stage: 'upscaling', done: 0, total: 1, unit: 'tiles' });
    vi.advanceTimersByTime(30_000);
    const lines = pipe.lines();
    expect(lines.length).toBeGreaterThanOrEqual(6);
    expect(lines.length).toBeLessThanOrEqual(8);
    expect(lines.at(-1)).toBe(
      'upscaling ~50.0% (estimate) 0/1 tiles, tile 1 running 30.0s of ~1m00s estimated, ETA ~30.0s',
    );
    plain.close();

    const bare = fakeStream(false);
    const noEstimate = createTerminalProgress(bare.stream);
    noEstimate.report({ stage: 'upscaling', done: 0, total: 1, unit: 'tiles' });
    vi.advanceTimersByTime(30_000);
    expect(bare.lines().length).toBeGreaterThan(1);
    expect(bare.lines().at(-1)).toBe('upscaling 0.0% 0/1 tiles, tile 1 running 30.0s');
    noEstimate.close();
  });

  it('a stage that does not count says how long it has run', () => {
    vi.useFakeTimers();
    const pipe = fakeStream(false);
    const plain = createTerminalProgress(pipe.stream);
    plain.report({ stage: 'fetching and probing' });
    vi.advanceTimersByTime(12_000);
    expect(pipe.lines()[0]).toBe('fetching and probing…');
    expect(pipe.lines().at(-1)).toBe('fetching and probing… 10.0s');
    plain.close();
  });

  it('stepClockText: the unit, its clock, and the estimate it is measured against', () => {
    expect(singularUnit('tiles')).toBe('tile');
    expect(singularUnit(undefined)).toBe('step');
    expect(stepClockText('frames', { index: 3, elapsedSeconds: 2 })).toBe('frame 3 running 2.0s');
    expect(stepClockText('tiles', { index: 1, elapsedSeconds: 48, estimatedSeconds: 59 })).toBe(
      'tile 1 running 48.0s of ~59.0s estimated',
    );
    expect(stepClockText('tiles', { index: 1, elapsedSeconds: 209, estimatedSeconds: 59 })).toBe(
      'tile 1 running 3m29s, 2m30s past its ~59.0s estimate: still working (a busy machine is slower)',
    );
  });
});
