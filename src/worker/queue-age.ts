/**
 * No job waits for ever: a job older than its kind's WORKER_MAX_QUEUE_AGE_MS when a worker pulls
 * it is ended with a failure event (QUEUE_TIMEOUT, refund) instead of running. The age counts from
 * when the stream stored the job (the server's clock, not the control plane's `createdAt`), so
 * time spent waiting for a retry counts too.
 */
import { JobError } from '../errors.js';
import type { JobKind } from '../jobs/index.js';

export function queueAgeMs(storedAt: Date, now: Date): number {
  return Math.max(0, now.getTime() - storedAt.getTime());
}

export function queueAgeError(kind: JobKind, waitedMs: number, limitMs: number): JobError {
  return new JobError(
    'QUEUE_TIMEOUT',
    `The ${kind} job waited ${formatSeconds(waitedMs)} in the queue, longer than the ${formatSeconds(limitMs)} allowed (WORKER_MAX_QUEUE_AGE_MS)`,
  );
}

function formatSeconds(ms: number): string {
  return `${Math.round(ms / 100) / 10} s`;
}
