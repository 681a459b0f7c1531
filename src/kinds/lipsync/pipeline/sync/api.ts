/**
 * sync.so's v2 generation API as a `sync-compatible` provider speaks it (docs/lipsync.md,
 * "Backends"): the body of POST /v2/generate, the Generation object GET /v2/generate/{id} answers,
 * its statuses, the Idempotency-Key a task sends, and what output a sync mode should give. Pure.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { SyncMode } from '../../../../jobs/index.js';

/** Still running: poll again. */
export const SYNC_IN_PROGRESS = ['PENDING', 'PROCESSING'] as const;
/** Final failures, the older CANCELED and TIMED_OUT included (CANCELLED as some proxies spell it). */
export const SYNC_FAILURES = ['FAILED', 'REJECTED', 'CANCELED', 'CANCELLED', 'TIMED_OUT'] as const;

/** HTTP statuses worth another try of the same call (with the same Idempotency-Key): 408, 409 (the same key still being processed), 429. */
export const SYNC_TRANSIENT_STATUSES = [408, 409, 429] as const;

export const generationSchema = z.object({
  id: z.string().min(1),
  status: z.string().min(1),
  model: z.string().nullish(),
  outputUrl: z.string().nullish(),
  outputDuration: z.number().nullish(),
  error: z.string().nullish(),
  error_code: z.string().nullish(),
  errorCode: z.string().nullish(),
});
export type Generation = z.infer<typeof generationSchema>;

export interface GenerateBody {
  model: string;
  input: [{ type: 'video'; url: string }, { type: 'audio'; url: string }];
  options: GenerateOptions;
}

export interface GenerateOptions {
  sync_mode: SyncMode;
  active_speaker_detection: { auto_detect: boolean };
}

/** The job's sync mode and active speaker, passed through (the spec's five modes are sync.so's). */
export function generateOptions(syncMode: SyncMode, activeSpeaker: boolean): GenerateOptions {
  return { sync_mode: syncMode, active_speaker_detection: { auto_detect: activeSpeaker } };
}

export function generateBody(
  model: string,
  videoUrl: string,
  audioUrl: string,
  options: GenerateOptions,
): GenerateBody {
  return {
    model,
    input: [
      { type: 'video', url: videoUrl },
      { type: 'audio', url: audioUrl },
    ],
    options,
  };
}

/**
 * The task's Idempotency-Key: a hash of its id, so the same task asks for the same generation
 * across retries of the POST, a worker's kill and the job's redelivery, and no two tasks share one.
 * sync.so takes 1-128 characters of [A-Za-z0-9._~-].
 */
export function idempotencyKey(taskId: string): string {
  return `media-worker-lipsync-${createHash('sha256').update(taskId).digest('hex')}`;
}

export type GenerationClass = 'completed' | 'progress' | 'failure';

/** An unknown status counts as running: the deadline ends it if it never settles. */
export function classifyGeneration(status: string): GenerationClass {
  if (status === 'COMPLETED') return 'completed';
  if ((SYNC_FAILURES as readonly string[]).includes(status)) return 'failure';
  return 'progress';
}

/** A failed generation in a line: its status, code and message. */
export function describeFailure(g: Generation): string {
  const code = g.error_code ?? g.errorCode;
  return `${g.status}${code ? ` (${code})` : ''}${g.error ? `: ${g.error}` : ''}`;
}

/** How far a provider's output may be from the expected length: a frame or two of rounding, and a provider's own framing. */
export function durationTolerance(expected: number): number {
  return Math.max(0.25, expected * 0.05);
}
