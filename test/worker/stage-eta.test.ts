/**
 * The ETA of progress messages (src/worker/stage-eta.ts): the pure estimate, the per-stage tracker,
 * the publisher that puts it on the wire, and the protocol schema that takes it as a claim.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { MAX_ETA_SECONDS, progressMessageSchema, type ProgressMessage } from '../../src/protocol/index.js';
import { createProgressPublisher } from '../../src/worker/progress.js';
import { stageEtaSeconds, stageEtaTracker } from '../../src/worker/stage-eta.js';

describe('stageEtaSeconds', () => {
  it.each([
    ['nothing done since the first report', { done: 0, atMs: 0 }, { done: 0, total: 10, atMs: 5000 }, 5000, undefined],
    ['no time since the first report', { done: 2, atMs: 1000 }, { done: 3, total: 10, atMs: 1000 }, 1000, undefined],
    ['4 of 10 in 8 s: 6 more at 2 s each', { done: 0, atMs: 0 }, { done: 4, total: 10, atMs: 8000 }, 8000, 12],
    [
      'the pace counts from the first report, not from zero units',
      { done: 1, atMs: 1000 },
      { done: 5, total: 9, atMs: 3000 },
      3000,
      2,
    ],
    [
      'time since the latest report is already spent',
      { done: 0, atMs: 0 },
      { done: 4, total: 10, atMs: 8000 },
      9500,
      11,
    ],
    ['rounded up: 0.2 s left is 1 s', { done: 0, atMs: 0 }, { done: 9, total: 10, atMs: 1800 }, 1800, 1],
    ['overrun: never negative', { done: 0, atMs: 0 }, { done: 9, total: 10, atMs: 1800 }, 60_000, 0],
    ['all done', { done: 0, atMs: 0 }, { done: 10, total: 10, atMs: 4000 }, 4000, 0],
    [
      'more done than the total says: unknown',
      { done: 0, atMs: 0 },
      { done: 11, total: 10, atMs: 4000 },
      4000,
      undefined,
    ],
    ['over a day: unknown', { done: 0, atMs: 0 }, { done: 1, total: 100_000, atMs: 1000 }, 1000, undefined],
    ['exactly a day', { done: 0, atMs: 0 }, { done: 1, total: MAX_ETA_SECONDS + 1, atMs: 1000 }, 1000, MAX_ETA_SECONDS],
  ])('%s', (_name, first, latest, now, expected) => {
    expect(stageEtaSeconds(first, latest, now)).toBe(expected);
  });
});

describe('stageEtaTracker', () => {
  it('measures each stage on its own and restarts when a count goes back', () => {
    const eta = stageEtaTracker();
    eta.observe({ stage: 'fetching and probing' }, 0);
    expect(eta.secondsLeft(0)).toBeUndefined();
    // The first counted report of a stage starts its clock, 30 s into the run.
    eta.observe({ stage: 'upscaling', done: 0, total: 8, unit: 'tiles' }, 30_000);
    expect(eta.secondsLeft(30_000)).toBeUndefined();
    eta.observe({ stage: 'upscaling', done: 2, total: 8, unit: 'tiles' }, 34_000);
    expect(eta.secondsLeft(34_000)).toBe(12);
    eta.observe({ stage: 'upscaling', done: 6, total: 8, unit: 'tiles' }, 42_000);
    expect(eta.secondsLeft(42_000)).toBe(4);
    // A new stage: the last one's pace says nothing about it.
    eta.observe({ stage: 'lip-syncing', done: 5, total: 100 }, 50_000);
    expect(eta.secondsLeft(50_000)).toBeUndefined();
    eta.observe({ stage: 'lip-syncing', done: 15, total: 100 }, 51_000);
    expect(eta.secondsLeft(51_000)).toBe(9);
    eta.observe({ stage: 'lip-syncing', done: 3, total: 100 }, 52_000);
    expect(eta.secondsLeft(52_000)).toBeUndefined();
    // A report without counts has no estimate.
    eta.observe({ stage: 'lip-syncing' }, 53_000);
    expect(eta.secondsLeft(53_000)).toBeUndefined();
  });

  it("restarts when a count goes back below the last one, even above the stage's first", () => {
    const eta = stageEtaTracker();
    eta.observe({ stage: 'upscaling', done: 2, total: 100 }, 0);
    eta.observe({ stage: 'upscaling', done: 40, total: 100 }, 10_000);
    expect(eta.secondsLeft(10_000)).toBe(16);
    // Back to 30 (a pass started over): 28 units since the first report would read as a pace it never had.
    eta.observe({ stage: 'upscaling', done: 30, total: 100 }, 11_000);
    expect(eta.secondsLeft(11_000)).toBeUndefined();
    eta.observe({ stage: 'upscaling', done: 35, total: 100 }, 21_000);
    // 5 units in 10 s since the new start: 65 left at 2 s each.
    expect(eta.secondsLeft(21_000)).toBe(130);
    // A report without counts in between does not hide a count that went back.
    eta.observe({ stage: 'upscaling' }, 22_000);
    eta.observe({ stage: 'upscaling', done: 31, total: 100 }, 23_000);
    expect(eta.secondsLeft(23_000)).toBeUndefined();
  });
});

describe('the publisher', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('sends etaSeconds once a unit of the stage is done, counted at the moment a held message goes out', () => {
    vi.useFakeTimers({ now: new Date('2025-01-01T00:00:00.000Z') });
    const sent: { stage: string; done?: number; etaSeconds?: number; step?: unknown }[] = [];
    const nc = { publish: (_subject: string, data: string) => sent.push(JSON.parse(data)) };
    const reporter = createProgressPublisher(nc as never, 't9', 'vendor-image-upscale', 1000);
    reporter.report({ stage: 'fetching and probing' });
    vi.advanceTimersByTime(5000);
    reporter.report({ stage: 'upscaling', done: 0, total: 10, unit: 'tiles' });
    vi.advanceTimersByTime(2000);
    reporter.report({ stage: 'upscaling', done: 1, total: 10, unit: 'tiles' });
    vi.advanceTimersByTime(400);
    reporter.report({ stage: 'upscaling', done: 2, total: 10, unit: 'tiles' });
    // Held by the throttle for 600 ms: 8 tiles at 1.2 s each, less the 0.6 s it waited.
    vi.advanceTimersByTime(600);
    reporter.close();
    // The step clock's messages (the fetch ran 5 s) repeat a count: they are read apart, below.
    expect(sent.filter((m) => m.step === undefined).map((m) => [m.stage, m.done, m.etaSeconds])).toEqual([
      ['fetching and probing', undefined, undefined],
      ['upscaling', 0, undefined],
      ['upscaling', 1, 18],
      ['upscaling', 2, 9],
    ]);
  });
});

describe('the step clock on the wire', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("a one-tile image moves while its tile runs: the seconds it has run against the quote's estimate, the count as reported", () => {
    vi.useFakeTimers({ now: new Date('2025-01-01T00:00:00.000Z') });
    const sent: ProgressMessage[] = [];
    const nc = {
      publish: (_subject: string, data: string) => sent.push(progressMessageSchema.parse(JSON.parse(data))),
    };
    const reporter = createProgressPublisher(nc as never, 't9', 'vendor-image-upscale', 1000);
    reporter.report({ stage: 'upscaling', done: 0, total: 1, unit: 'tiles', estimatedSeconds: 59 });
    vi.advanceTimersByTime(90_500);
    const steps = sent.filter((m) => m.step !== undefined);
    expect(steps.every((m) => m.done === 0 && m.percent === 0 && m.etaSeconds === undefined)).toBe(true);
    // Once a second (the interval) from the third second on (a shorter unit needs no clock).
    expect(steps.map((m) => m.step!.elapsedSeconds)).toEqual([...Array(88).keys()].map((i) => i + 3));
    expect(steps.at(-1)!.step).toEqual({ index: 1, elapsedSeconds: 90, estimatedSeconds: 59 });
    reporter.report({ stage: 'upscaling', done: 1, total: 1, unit: 'tiles', estimatedSeconds: 59 });
    vi.advanceTimersByTime(1000);
    const count = sent.length;
    vi.advanceTimersByTime(5000);
    // All done: nothing runs, nothing more is sent.
    expect(sent.length).toBe(count);
    expect(sent.at(-1)).toMatchObject({ done: 1, percent: 100 });
    expect(sent.at(-1)!.step).toBeUndefined();
    reporter.close();
  });

  it('after the first unit, the pace measured in the stage is the estimate; a step out of bounds is dropped whole', () => {
    vi.useFakeTimers({ now: new Date('2025-01-01T00:00:00.000Z') });
    const sent: ProgressMessage[] = [];
    const nc = {
      publish: (_subject: string, data: string) => sent.push(progressMessageSchema.parse(JSON.parse(data))),
    };
    const reporter = createProgressPublisher(nc as never, 't9', 'vendor-image-upscale', 1000);
    reporter.report({ stage: 'upscaling', done: 0, total: 4, unit: 'tiles', estimatedSeconds: 400 });
    vi.advanceTimersByTime(20_000);
    reporter.report({ stage: 'upscaling', done: 1, total: 4, unit: 'tiles', estimatedSeconds: 400 });
    vi.advanceTimersByTime(3_000);
    expect(sent.at(-1)!.step).toEqual({ index: 2, elapsedSeconds: 3, estimatedSeconds: 20 });
    reporter.close();
    const base = { id: 't1', model: 'vendor-image-upscale', stage: 'upscaling', at: '2026-03-01T12:00:30.000Z' };
    expect(progressMessageSchema.parse({ ...base, step: { index: 0, elapsedSeconds: 3 } }).step).toBeUndefined();
    expect(progressMessageSchema.parse({ ...base, step: { index: 1, elapsedSeconds: 2.5 } })).toEqual(base);
    expect(progressMessageSchema.parse({ ...base, step: { index: 1, elapsedSeconds: 3 } }).step).toEqual({
      index: 1,
      elapsedSeconds: 3,
    });
  });
});

describe('the progress schema takes the ETA as a claim', () => {
  const message = {
    id: 't1',
    model: 'vendor-image-upscale',
    stage: 'upscaling',
    done: 3,
    total: 8,
    unit: 'tiles',
    at: '2026-03-01T12:00:30.000Z',
    seq: 3,
  };

  it('keeps one in bounds, and a message without one (an older worker)', () => {
    expect(progressMessageSchema.parse({ ...message, etaSeconds: 18 }).etaSeconds).toBe(18);
    expect(progressMessageSchema.parse({ ...message, etaSeconds: 0 }).etaSeconds).toBe(0);
    expect(progressMessageSchema.parse(message)).toEqual(message);
  });

  it.each([-1, 2.5, MAX_ETA_SECONDS + 1, '18', null, 1e308])(
    'drops etaSeconds %o and keeps the rest of the message',
    (etaSeconds) => {
      const parsed = progressMessageSchema.parse({ ...message, etaSeconds });
      expect(parsed.etaSeconds).toBeUndefined();
      expect(JSON.parse(JSON.stringify(parsed))).toEqual(message);
    },
  );
});
