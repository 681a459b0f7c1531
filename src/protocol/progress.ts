/**
 * A progress message of a running job on core NATS (`media.progress.<task id>`, docs/protocol.md):
 * best effort, never stored. The worker publishes it (worker/progress.ts), the gateway relays it.
 */
import { z } from 'zod';
import type { JobProgress, ProgressStep } from '../jobs/index.js';

/** The longest ETA a progress message carries: a day. Further than that the figure says nothing, and a reader drops it. */
export const MAX_ETA_SECONDS = 86_400;

/** A progress message (docs/protocol.md, "Progress"); its JSON Schema is generated from this. */
export const progressMessageSchema = z.object({
  id: z.string(),
  model: z.string(),
  /** `fetching and probing`, `upscaling`, `detecting faces`, ... (each pipeline names its own) */
  stage: z.string(),
  done: z.number().nonnegative().optional(),
  total: z.number().nonnegative().optional(),
  /** What done and total count: `frames`, `tiles`, ... */
  unit: z.string().optional(),
  /** 0..100 with one decimal. */
  percent: z.number().min(0).max(100).optional(),
  at: z.string(),
  /** 1, 2, 3, ... per attempt of the job: with `at`, orders the messages (the gateway's event ids, docs/contract.md). */
  seq: z.number().int().positive().optional(),
  /**
   * Seconds left in this stage at `at`, from the pace the worker measured in it (worker/stage-eta.ts);
   * absent until it can tell. A claim of the sender: a reader drops one out of bounds and keeps the rest.
   */
  etaSeconds: z.number().int().nonnegative().max(MAX_ETA_SECONDS).optional().catch(undefined),
  /**
   * The unit being worked on, by the clock (worker/step-clock.ts): sent again while one unit runs
   * longer than the interval, so a one-tile image moves though `done` stays 0. Time against an
   * estimate, not a count; a claim of the sender, dropped whole when out of bounds.
   */
  step: z
    .object({
      /** 1-based: done + 1 (1 in a stage that does not count). */
      index: z.number().int().positive(),
      /** Whole seconds this unit has run at `at`. */
      elapsedSeconds: z.number().int().nonnegative().max(MAX_ETA_SECONDS),
      /** Whole seconds one unit is estimated to take: the stage's measured pace, or before its first unit the quote's estimate shared among its units. */
      estimatedSeconds: z.number().int().nonnegative().max(MAX_ETA_SECONDS).optional(),
    })
    .optional()
    .catch(undefined),
});

export type ProgressMessage = z.infer<typeof progressMessageSchema>;

export function progressMessage(
  taskId: string,
  model: string,
  progress: JobProgress,
  now: Date,
  seq?: number,
  etaSeconds?: number,
): ProgressMessage {
  const percent =
    progress.percent ??
    (progress.done !== undefined && progress.total ? (progress.done / progress.total) * 100 : undefined);
  return {
    id: taskId,
    model,
    stage: progress.stage,
    ...(progress.done === undefined ? {} : { done: progress.done }),
    ...(progress.total === undefined ? {} : { total: progress.total }),
    ...(progress.unit === undefined ? {} : { unit: progress.unit }),
    ...(percent === undefined || !Number.isFinite(percent)
      ? {}
      : { percent: Math.round(Math.min(100, Math.max(0, percent)) * 10) / 10 }),
    at: now.toISOString(),
    ...(seq === undefined ? {} : { seq }),
    ...(etaSeconds === undefined ? {} : { etaSeconds }),
    ...(progress.step === undefined ? {} : { step: wireStep(progress.step) }),
  };
}

/** A step in whole seconds (elapsed rounded down, the estimate up), capped as the ETA is. */
function wireStep(step: ProgressStep): NonNullable<ProgressMessage['step']> {
  const seconds = (n: number, round: (n: number) => number): number => Math.min(MAX_ETA_SECONDS, Math.max(0, round(n)));
  return {
    index: Math.max(1, Math.floor(step.index)),
    elapsedSeconds: seconds(step.elapsedSeconds, Math.floor),
    ...(step.estimatedSeconds === undefined || !Number.isFinite(step.estimatedSeconds)
      ? {}
      : { estimatedSeconds: seconds(step.estimatedSeconds, Math.ceil) }),
  };
}
