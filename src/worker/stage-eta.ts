/**
 * The ETA a progress message carries (`etaSeconds`, docs/protocol.md "Progress"): the seconds left
 * in the current stage at the pace the worker measured in that stage. Per stage, because stages run
 * at unrelated paces (fetching, tiles, then frames of another pass): a rate over the whole run's
 * percent would mix them. The pace counts from the stage's first counted report, so units done
 * before it (a video reports its first frame once written) do not inflate it.
 */
import type { JobProgress } from '../jobs/index.js';
import { MAX_ETA_SECONDS } from '../protocol/index.js';

/** A counted report of a stage: units done by a moment (milliseconds). */
export interface StageSample {
  done: number;
  atMs: number;
}

/**
 * Seconds left (rounded up) when `latest.total` units are done at the pace from `first` to `latest`,
 * counted at `nowMs`. Undefined until a unit is done after the first report, and beyond
 * MAX_ETA_SECONDS (too far to say anything).
 */
export function stageEtaSeconds(
  first: StageSample,
  latest: StageSample & { total: number },
  nowMs: number,
): number | undefined {
  const units = latest.done - first.done;
  const elapsedMs = latest.atMs - first.atMs;
  if (!(units > 0) || !(elapsedMs > 0) || !(latest.total >= latest.done)) return undefined;
  // A message held back by the throttle goes out later than its report: that wait is already spent.
  const leftMs = ((latest.total - latest.done) * elapsedMs) / units - Math.max(0, nowMs - latest.atMs);
  const seconds = Math.ceil(Math.max(0, leftMs) / 1000);
  return Number.isFinite(seconds) && seconds <= MAX_ETA_SECONDS ? seconds : undefined;
}

/** The reports of one job, stage by stage: what `stageEtaSeconds` needs for the latest one. */
export interface StageEtaTracker {
  observe(progress: JobProgress, atMs: number): void;
  secondsLeft(nowMs: number): number | undefined;
}

export function stageEtaTracker(): StageEtaTracker {
  let stage: string | undefined;
  let first: StageSample | undefined;
  let latest: (StageSample & { total: number }) | undefined;
  /** The stage's last count, kept across a report without one. */
  let lastDone: number | undefined;
  return {
    observe(progress, atMs) {
      if (progress.stage !== stage) {
        stage = progress.stage;
        first = undefined;
        lastDone = undefined;
      }
      if (progress.done === undefined || progress.total === undefined) {
        latest = undefined;
        return;
      }
      latest = { done: progress.done, total: progress.total, atMs };
      // A count that goes back (below the stage's last one, not only its first) is a new start:
      // the pace before it says nothing about what follows.
      if (first === undefined || (lastDone !== undefined && progress.done < lastDone)) first = latest;
      lastDone = progress.done;
    },
    secondsLeft: (nowMs) =>
      first === undefined || latest === undefined ? undefined : stageEtaSeconds(first, latest, nowMs),
  };
}
