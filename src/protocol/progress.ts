/**
 * A progress message of a running job on core NATS (`media.progress.<task id>`, docs/protocol.md):
 * best effort, never stored. The worker publishes it (worker/progress.ts), the gateway relays it.
 */
import { z } from 'zod';
import type { JobProgress } from '../jobs/index.js';

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
});

export type ProgressMessage = z.infer<typeof progressMessageSchema>;

export function progressMessage(taskId: string, model: string, progress: JobProgress, now: Date, seq?: number, etaSeconds?: number): ProgressMessage {
  const percent = progress.percent ?? (progress.done !== undefined && progress.total ? (progress.done / progress.total) * 100 : undefined);
  return {
    id: taskId,
    model,
    stage: progress.stage,
    ...(progress.done === undefined ? {} : { done: progress.done }),
    ...(progress.total === undefined ? {} : { total: progress.total }),
    ...(progress.unit === undefined ? {} : { unit: progress.unit }),
    ...(percent === undefined || !Number.isFinite(percent) ? {} : { percent: Math.round(Math.min(100, Math.max(0, percent)) * 10) / 10 }),
    at: now.toISOString(),
    ...(seq === undefined ? {} : { seq }),
    ...(etaSeconds === undefined ? {} : { etaSeconds }),
  };
}
