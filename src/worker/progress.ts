/**
 * Progress of a running job on core NATS (`media.progress.<task id>`): best effort, never stored,
 * never blocking the job. A new stage is sent at once; within a stage, at most one message per
 * interval, and the latest value is the one that goes out, with the stage's ETA (stage-eta.ts); while
 * a unit runs, its clock (step-clock.ts).
 */
import type { NatsConnection } from '@nats-io/transport-node';
import type { JobProgress, ProgressReporter } from '../jobs/index.js';
import { throttle } from '../throttle.js';
import { progressMessage, progressSubject, protocolHeaders } from '../protocol/index.js';
import { stageEtaTracker } from './stage-eta.js';
import { withStepClock } from './step-clock.js';

/** Progress messages of one task, at most one per interval within a stage (the latest goes out), a new stage at once. */
export function createProgressPublisher(
  nc: NatsConnection,
  taskId: string,
  model: string,
  intervalMs: number,
): ProgressReporter {
  const subject = progressSubject(taskId);
  let lastStage: string | undefined;
  let seq = 0;
  const eta = stageEtaTracker();
  const messages = throttle(
    (progress: JobProgress) => {
      const now = new Date();
      nc.publish(
        subject,
        JSON.stringify(progressMessage(taskId, model, progress, now, ++seq, eta.secondsLeft(now.getTime()))),
        { headers: protocolHeaders() },
      );
    },
    intervalMs,
    { trailing: true },
  );
  // While one unit runs longer than the interval, its clock goes out (`step`, worker/step-clock.ts).
  return withStepClock(
    {
      report(progress) {
        const newStage = progress.stage !== lastStage;
        lastStage = progress.stage;
        // A clock's report repeats the last count: a sample of it would slow the measured pace.
        if (progress.step === undefined) eta.observe(progress, Date.now());
        messages.push(progress, newStage);
      },
      close: () => messages.close(),
    },
    { tickMs: intervalMs },
  );
}
