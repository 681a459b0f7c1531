/**
 * Progress of a running job on core NATS (`media.progress.<task id>`): best effort, never stored,
 * never blocking the job. A new stage is sent at once; within a stage, at most one message per
 * interval, and the latest value is the one that goes out.
 */
import type { NatsConnection } from '@nats-io/transport-node';
import type { JobProgress } from '../jobs/index.js';
import { progressMessage, progressSubject, protocolHeaders } from '../protocol/index.js';

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
