/**
 * A progress message of a running job on core NATS (`media.progress.<task id>`, docs/protocol.md):
 * best effort, never stored. The worker publishes it (worker/progress.ts), the gateway relays it.
 */
import type { JobProgress } from '../jobs/index.js';

export interface ProgressMessage {
  id: string;
  model: string;
  stage: string;
  done?: number;
  total?: number;
  unit?: string;
  /** 0..100 with one decimal. */
  percent?: number;
  at: string;
}

export function progressMessage(taskId: string, model: string, progress: JobProgress, now: Date): ProgressMessage {
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
  };
}
