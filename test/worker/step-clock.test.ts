/**
 * The step clock (src/worker/step-clock.ts): where the unit being worked on stands by the clock, for
 * a counted stage whose unit takes long (a one-tile image), as the daemon's messages and the command
 * line's records carry it. The publisher on the wire: test/worker/stage-eta.test.ts.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { JobProgress } from '../../src/jobs/index.js';
import { QUIET_STEP_MS, stepTiming, withStepClock } from '../../src/worker/step-clock.js';

describe('stepTiming', () => {
  it.each([
    [
      'before the first unit: the stage estimate shared among its units',
      { done: 0, total: 4, countedSeconds: 0, sinceStep: 7, stageEstimateSeconds: 100 },
      { index: 1, elapsedSeconds: 7, estimatedSeconds: 25 },
    ],
    [
      'before the first unit, no estimate: the clock alone',
      { done: 0, total: 1, countedSeconds: 0, sinceStep: 7 },
      { index: 1, elapsedSeconds: 7 },
    ],
    [
      'after units are done: the pace measured, not the estimate',
      { done: 2, total: 4, countedSeconds: 30, sinceStep: 4, stageEstimateSeconds: 1000 },
      { index: 3, elapsedSeconds: 4, estimatedSeconds: 15 },
    ],
    [
      'a stage that does not count is its own one unit',
      { countedSeconds: 0, sinceStep: 12, stageEstimateSeconds: 60 },
      { index: 1, elapsedSeconds: 12 },
    ],
    ['every unit done: nothing runs', { done: 4, total: 4, countedSeconds: 30, sinceStep: 4 }, undefined],
    [
      'a clock that went back reads 0',
      { done: 0, total: 1, countedSeconds: 0, sinceStep: -3 },
      { index: 1, elapsedSeconds: 0 },
    ],
  ])('%s', (_what, state, expected) => {
    expect(stepTiming(state)).toEqual(expected);
  });
});

describe('withStepClock', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  function recorder(): {
    seen: JobProgress[];
    closed: (string | undefined)[];
    reporter: { report(p: JobProgress): void; close(m?: string): void };
  } {
    const seen: JobProgress[] = [];
    const closed: (string | undefined)[] = [];
    return { seen, closed, reporter: { report: (p) => seen.push(p), close: (m) => closed.push(m) } };
  }

  it("passes every report on as it is, and between them the running unit's clock every tick", () => {
    vi.useFakeTimers();
    const inner = recorder();
    const clock = withStepClock(inner.reporter, { tickMs: 1000, quietMs: 0 });
    clock.report({ stage: 'upscaling', done: 0, total: 2, unit: 'tiles', estimatedSeconds: 10 });
    vi.advanceTimersByTime(3000);
    clock.report({ stage: 'upscaling', done: 1, total: 2, unit: 'tiles', estimatedSeconds: 10 });
    vi.advanceTimersByTime(2000);
    expect(inner.seen.map((p) => [p.done, p.step])).toEqual([
      [0, undefined],
      [0, { index: 1, elapsedSeconds: 1, estimatedSeconds: 5 }],
      [0, { index: 1, elapsedSeconds: 2, estimatedSeconds: 5 }],
      [0, { index: 1, elapsedSeconds: 3, estimatedSeconds: 5 }],
      [1, undefined],
      [1, { index: 2, elapsedSeconds: 1, estimatedSeconds: 3 }],
      [1, { index: 2, elapsedSeconds: 2, estimatedSeconds: 3 }],
    ]);
    clock.close('done');
    vi.advanceTimersByTime(5000);
    expect(inner.seen).toHaveLength(7);
    expect(inner.closed).toEqual(['done']);
  });

  it('a new stage, or a count that goes back (a new pass), starts the clock again', () => {
    vi.useFakeTimers();
    const inner = recorder();
    const clock = withStepClock(inner.reporter, { tickMs: 1000, quietMs: 0, stageEstimateSeconds: 8 });
    clock.report({ stage: 'upscaling', done: 0, total: 4 });
    vi.advanceTimersByTime(2000);
    clock.report({ stage: 'upscaling', done: 3, total: 4 });
    clock.report({ stage: 'upscaling', done: 0, total: 16 });
    vi.advanceTimersByTime(1000);
    expect(inner.seen.at(-1)!.step).toEqual({ index: 1, elapsedSeconds: 1, estimatedSeconds: 0.5 });
    clock.report({ stage: 'encoding' });
    vi.advanceTimersByTime(1000);
    expect(inner.seen.at(-1)).toMatchObject({ stage: 'encoding', step: { index: 1, elapsedSeconds: 1 } });
    clock.close();
  });

  it('a unit shorter than a few seconds goes without a clock (QUIET_STEP_MS)', () => {
    vi.useFakeTimers();
    const inner = recorder();
    const clock = withStepClock(inner.reporter, { tickMs: 1000 });
    for (let done = 0; done < 10; done += 1) {
      clock.report({ stage: 'upscaling', done, total: 100, unit: 'frames' });
      vi.advanceTimersByTime(QUIET_STEP_MS - 1000);
    }
    expect(inner.seen.every((p) => p.step === undefined)).toBe(true);
    vi.advanceTimersByTime(1000);
    expect(inner.seen.at(-1)!.step).toMatchObject({ index: 10, elapsedSeconds: QUIET_STEP_MS / 1000 });
    clock.close();
  });
});
