/**
 * Progress of a running job on core NATS (`media.progress.<task id>`): best effort, never stored,
 * never blocking the job. A new stage is sent at once; within a stage, at most one message per
 * interval, and the latest value is the one that goes out.
 */
import type { NatsConnection } from '@nats-io/transport-node';
import { z } from 'zod';
import type { JobProgress } from '../jobs/index.js';
import { protocolHeaders } from './protocol-version.js';
import { progressSubject } from './subjects.js';

/** A progress message (docs/protocol.md, "Progress"); its JSON Schema is generated from this. */
export const progressMessageSchema = z.object({
  id: z.string(),
  model: z.string(),
  /** `fetching and probing`, `upscaling`, `detecting faces`, `lip-syncing`, ... */
  stage: z.string(),
  done: z.number().nonnegative().optional(),
  total: z.number().nonnegative().optional(),
  /** What done and total count: `frames`, `tiles`, ... */
  unit: z.string().optional(),
  /** 0..100 with one decimal. */
  percent: z.number().min(0).max(100).optional(),
  at: z.string(),
});

export type ProgressMessage = z.infer<typeof progressMessageSchema>;

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

export interface ProgressReporter {
  report(progress: JobProgress): void;
  /** Stops the pending timer; nothing is sent after this. */
  close(): void;
}

export function createProgressReporter(nc: NatsConnection, taskId: string, model: string, intervalMs: number): ProgressReporter {
  const subject = progressSubject(taskId);
  let lastStage: string | undefined;
  let lastSentAt = 0;
  let pending: JobProgress | undefined;
  let timer: NodeJS.Timeout | undefined;
  let closed = false;

  const send = (progress: JobProgress): void => {
    lastStage = progress.stage;
    lastSentAt = Date.now();
    pending = undefined;
    try {
      nc.publish(subject, JSON.stringify(progressMessage(taskId, model, progress, new Date())), { headers: protocolHeaders() });
    } catch {
      // A closed or draining connection: progress is best effort and must never fail the job.
    }
  };

  return {
    report(progress) {
      if (closed) return;
      const elapsed = Date.now() - lastSentAt;
      if (progress.stage !== lastStage || elapsed >= intervalMs) {
        if (timer) clearTimeout(timer);
        timer = undefined;
        send(progress);
        return;
      }
      pending = progress;
      timer ??= setTimeout(() => {
        timer = undefined;
        if (!closed && pending) send(pending);
      }, intervalMs - elapsed);
    },
    close() {
      closed = true;
      if (timer) clearTimeout(timer);
      timer = undefined;
    },
  };
}
