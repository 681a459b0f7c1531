/**
 * The one narrow interface between the daemon and the pipelines: a job in, a result or a JobError
 * out, progress through a callback. The daemon never imports a pipeline; the application layer
 * (app/daemon.ts) hands it an executor that quotes, processes and stores (docs/protocol.md).
 */
import type { Logger } from 'pino';
import type { JobKind, Quote, Job, JobProgress, TaskResult } from '../jobs/index.js';
import type { ResultFile } from '../protocol/index.js';

export interface JobContext {
  taskId: string;
  kind: JobKind;
  /** 1 on the first delivery, 2 on the first redelivery, ... */
  attempt: number;
  /**
   * Aborted when the watchdog fires or a drain runs out of grace. Its `reason` is a JobError
   * (watchdog) or a DOMException named `AbortError` (drain); pass it to every process and loop.
   */
  signal: AbortSignal;
  /** Child logger carrying taskId and model. */
  logger: Logger;
  onProgress(progress: JobProgress): void;
}

export interface JobOutput {
  /** Credits the task costs (the quote's figure). */
  creditsUsed: number;
  /** The spec 2.3 `result` object, with URLs from `ResultStore.storeResult`. */
  result: TaskResult;
  /** Every file the result names, stored and confirmed (the completion event carries them). */
  files?: readonly ResultFile[];
}

/**
 * Runs one job. Throws a JobError on failure: `retryable: true` means another attempt later could
 * succeed (download timeout, out of memory) and the job is handed back with a delay; otherwise the
 * task fails for good with that code. Anything else thrown counts as a permanent failure of the
 * kind's processing code (its descriptor's `failure.code`: UPSCALE_FAILED, ...).
 */
export type JobExecutor = (job: Job, ctx: JobContext) => Promise<JobOutput>;

/** Validates, probes and prices without processing; throws JobError. Backs the quote service. */
export type QuoteFunction = (job: Job, signal: AbortSignal) => Promise<Quote>;

export type { WorkerState } from './lifecycle.js';
