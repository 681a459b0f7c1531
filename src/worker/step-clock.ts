/**
 * Progress inside a step (issue 56). A counted stage reports when a unit is done, and one unit can
 * take minutes (a 512x512 photo is one tile of x4plus: about a minute on two idle CPU cores, several
 * on a busy machine), so a reader sees nothing move and takes the job for a hung one. While a unit
 * runs past a few seconds, a reporter wrapped here sends the stage's last report again every tick with `step`: which
 * unit, the seconds it has run, and what one unit is estimated to take (the pace measured in this
 * stage, or before its first unit the stage's estimate shared among its units). Time against an
 * estimate, marked as such: `done`, `total` and `percent` stay what the job reported. A stage that
 * does not count is its own one unit (its seconds so far, no estimate).
 *
 * The daemon's progress messages (worker/progress.ts) and the command line's JSON records
 * (cli/progress.ts) both go through it; the terminal's line reads the same `stepTiming`.
 */
import { definedFields } from '../defined-fields.js';
import type { JobProgress, ProgressReporter, ProgressStep } from '../jobs/index.js';

/** Where a stage stands when a tick falls, in seconds. */
export interface StepState {
  /** Counts of the stage's last report; undefined in a stage that does not count. */
  done?: number;
  total?: number;
  /** From the stage's start to its last counted unit: `done` units took this long. */
  countedSeconds: number;
  /** How long the unit being worked on has run. */
  sinceStep: number;
  /** The whole stage's estimate, when one is known. */
  stageEstimateSeconds?: number;
}

/** The step of `s`; undefined once every unit is done. Pure: the reporters and their tests share it. */
export function stepTiming(s: StepState): ProgressStep | undefined {
  const elapsedSeconds = Math.max(0, s.sinceStep);
  if (s.done === undefined || s.total === undefined || !(s.total > 0)) return { index: 1, elapsedSeconds };
  if (!(s.done >= 0) || s.done >= s.total) return undefined;
  const estimate = s.stageEstimateSeconds;
  const pace =
    s.done > 0 ? s.countedSeconds / s.done : estimate !== undefined && estimate > 0 ? estimate / s.total : undefined;
  const step: ProgressStep = { index: Math.floor(s.done) + 1, elapsedSeconds };
  if (pace !== undefined && pace > 0) step.estimatedSeconds = pace;
  return step;
}

/** A unit shorter than this goes without a clock: its count moves soon enough, and the clock would only take the receiver's throttle. */
export const QUIET_STEP_MS = 3000;

export interface StepClockOptions {
  /** How often a running unit is reported again (the receiver's own throttle still applies). */
  tickMs: number;
  /** How long a unit runs before its clock is sent (default QUIET_STEP_MS). */
  quietMs?: number;
  now?: () => number;
  /** The whole stage's estimate; a report's `estimatedSeconds` when absent. */
  stageEstimateSeconds?: number;
}

/** `inner`, told every `tickMs` how long the current unit has run (the report again, with `step`). */
export function withStepClock(inner: ProgressReporter, opts: StepClockOptions): ProgressReporter {
  const now = opts.now ?? Date.now;
  let stage: string | undefined;
  let stageStartedAt = 0;
  let stepStartedAt = 0;
  let current: JobProgress | undefined;
  let timer: NodeJS.Timeout | undefined;

  const tick = (): void => {
    const p = current;
    if (p === undefined) return;
    const at = now();
    if (at - stepStartedAt < Math.max(opts.tickMs, opts.quietMs ?? QUIET_STEP_MS)) return;
    const step = stepTiming({
      ...definedFields({
        done: p.done,
        total: p.total,
        stageEstimateSeconds: opts.stageEstimateSeconds ?? p.estimatedSeconds,
      }),
      countedSeconds: (stepStartedAt - stageStartedAt) / 1000,
      sinceStep: (at - stepStartedAt) / 1000,
    });
    if (step !== undefined) inner.report({ ...p, step });
  };

  return {
    report(p) {
      const at = now();
      // A count that goes back is a new start (tiling again with a smaller tile): the pace before it says nothing.
      const restarted = p.done !== undefined && current?.done !== undefined && p.done < current.done;
      if (p.stage !== stage || restarted) {
        stage = p.stage;
        stageStartedAt = at;
        stepStartedAt = at;
      } else if (p.done !== undefined && p.done !== current?.done) {
        stepStartedAt = at;
      }
      current = p;
      // unref: a waiting clock never keeps the process alive.
      timer ??= setInterval(tick, opts.tickMs).unref();
      inner.report(p);
    },
    close(message) {
      clearInterval(timer);
      timer = undefined;
      current = undefined;
      inner.close(message);
    },
  };
}
