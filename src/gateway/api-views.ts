/**
 * What the API shows of a task: pure functions from the stored record to the spec's objects
 * (2.2 at submission, 2.3 when polled), and of an estimate (POST /api/v1/estimate).
 */
import type { Job } from '../jobs/index.js';
import { resultLifetimeMs } from '../protocol/index.js';
import { signUrlsUnder, type LinkSigner } from './results/links.js';
import { taskResultsPrefix } from './results/result-check.js';
import type { TaskRecord } from './store/records.js';

export function pollUrl(taskId: string): string {
  return `/api/v1/tasks/${taskId}`;
}

/**
 * The submission response (2.2): the short object for the unified endpoint, and what a tool
 * endpoint adds (its `echo`: `pollUrl` and `duration`, or the `input` echo).
 */
export function submissionView(task: TaskRecord, creditsRemaining: number): Record<string, unknown> {
  return {
    id: task.id,
    model: task.model,
    status: 'pending',
    creditsUsed: task.creditsUsed,
    creditsRemaining,
    createdAt: task.createdAt,
    ...(task.extras.pollUrl === undefined ? {} : { pollUrl: task.extras.pollUrl }),
    ...(task.extras.duration === undefined ? {} : { duration: task.extras.duration }),
    ...(task.extras.input === undefined ? {} : { input: task.extras.input }),
  };
}

export interface EstimatedQuote {
  creditsUsed: number;
  duration?: number | undefined;
  input: Record<string, unknown>;
}

/** What a submission would cost, with what the tool endpoints echo, and whether the balance covers it now. */
export function estimateView(job: Job, quoted: EstimatedQuote, balance: number): Record<string, unknown> {
  return {
    model: job.model,
    creditsUsed: quoted.creditsUsed,
    ...(quoted.duration === undefined ? {} : { duration: quoted.duration }),
    input: quoted.input,
    balance,
    sufficient: balance >= quoted.creditsUsed,
  };
}

/** The polled task (2.3). A failed task shows its error and what was refunded. */
export function taskView(task: TaskRecord): Record<string, unknown> {
  switch (task.status) {
    case 'pending':
      return {
        id: task.id,
        model: task.model,
        status: 'pending',
        creditsUsed: task.creditsUsed,
        createdAt: task.createdAt,
      };
    case 'completed':
      return {
        id: task.id,
        model: task.reportedModel ?? task.model,
        status: 'completed',
        ...(task.mediaType === undefined ? {} : { mediaType: task.mediaType }),
        result: task.result ?? null,
        creditsUsed: task.creditsUsed,
        createdAt: task.createdAt,
      };
    case 'failed':
      return {
        id: task.id,
        model: task.model,
        status: 'failed',
        error: task.error ?? { code: 'INTERNAL_ERROR', message: 'failed' },
        creditsUsed: 0,
        creditsRefunded: task.creditsRefunded ?? task.creditsUsed,
        createdAt: task.createdAt,
      };
  }
}

/**
 * A completed task's result with its links to files this gateway serves signed, expiring when the
 * worker deletes the file: the kind's result lifetime after the task finished (the spec's days,
 * or RESULTS_UPSCALE_LIFETIME_DAYS: protocol/result-url.ts), the same link at
 * every poll. Only URLs under the task's own results folder are signed: the gateway never signs
 * a URL it did not build for that task (an upload, another task's result).
 */
export function withSignedLinks(
  view: Record<string, unknown>,
  task: TaskRecord,
  links: { signer: LinkSigner; base: string; upscaleResultLifetimeDays: number } | undefined,
): Record<string, unknown> {
  if (links === undefined || task.status !== 'completed' || view['result'] === undefined) return view;
  const finished = Date.parse(task.finishedAt ?? task.createdAt);
  const expiresAt = finished + resultLifetimeMs(task.kind, links.upscaleResultLifetimeDays);
  const own = taskResultsPrefix(links.base, task.kind, task.id);
  return { ...view, result: signUrlsUnder(view['result'], own, (url) => links.signer.sign(url, expiresAt)) };
}
