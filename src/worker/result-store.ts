/**
 * What every results store shares (docs/results-storage.md): the fixed key of a result file,
 * `<kind>/<task id>/<name>.<ext>`, what a store answers once a file is stored and confirmed, and
 * the interface the worker holds. The stores: results.ts (a local directory), s3-results.ts (a
 * bucket).
 */
import type { NatsConnection } from '@nats-io/transport-node';
import { JOB_KINDS, type JobKind } from '../jobs/index.js';
import { RESULT_CONTENT_TYPES, isTaskId, resultLifetimeMs } from '../protocol/index.js';

const NAME_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
const EXT_PATTERN = /^[a-z0-9]{1,8}$/;

export interface StoreOptions {
  taskId: string;
  kind: JobKind;
  /** File extension without the dot, lower case: `mp4`, `png`, `mp3`. */
  ext: string;
  /** File name without extension, for tasks with several files (a song and its cover: `song-1`, `cover-1`); default `output`. */
  name?: string;
}

export interface StoredResult {
  /** `<kind>/<task id>/<name>.<ext>`: the file's key under the results' root (RESULTS_DIR, or RESULTS_S3_PREFIX in the bucket). */
  key: string;
  /** Public URL of the file. */
  url: string;
  /** Bytes stored, confirmed from the stored copy. */
  size: number;
  /** sha256 of the stored bytes (hex). */
  sha256: string;
  /** ISO 8601 time after which the sweeper (or the bucket's lifecycle rule) deletes the file. */
  expiresAt: string;
}

/** What every results store does; createResultStore picks one by RESULTS_STORE. */
export interface ResultStore {
  /**
   * Stores a finished file at its fixed key and answers once the stored copy is confirmed. The
   * local file may be moved away. `signal` stops an upload (and aborts what it began).
   */
  storeResult(localPath: string, options: StoreOptions, signal?: AbortSignal): Promise<StoredResult>;
  /** Removes every result of a task: what a cancelled or failed run stored must not stay served. */
  discard(taskId: string): Promise<void>;
  /** Sweeps expired results now and then; returns the function that stops it. */
  startSweeper(intervalMs: number, observer?: SweepObserver): () => void;
  /**
   * Null when the store can take a file as far as a cheap request can tell (the bucket is there and
   * the credentials pass), else why not: a readiness check, so that a host whose store is gone pulls
   * no job only to fail it with a refund.
   */
  reachable?(): Promise<string | null>;
  /** A store that talks to the control plane (upload URLs) gets the worker's connection and host id. */
  connect?(nc: NatsConnection, hostId: string): void;
}

export interface SweepReport {
  removed: number;
  kept: number;
  /** Files that could not be checked or removed (logged): their lifetime may be over. */
  errors: number;
}

/** What the worker's metrics hear of each sweep. */
export interface SweepObserver {
  swept(report: SweepReport): void;
  failed(): void;
}

/** A task id that cannot leave the results directory, or a TypeError. */
export function checkTaskId(taskId: string): void {
  if (!isTaskId(taskId))
    throw new TypeError(
      `Expected taskId to be 1 to 128 characters of A-Z, a-z, 0-9, "_" or "-" but received ${JSON.stringify(taskId)}`,
    );
}

/** The relative location of a result; throws on a value that could leave the results directory. */
export function resultRelativePath(options: StoreOptions): string[] {
  const name = options.name ?? 'output';
  checkTaskId(options.taskId);
  if (!(JOB_KINDS as readonly string[]).includes(options.kind))
    throw new TypeError(
      `Expected kind to be one of ${JOB_KINDS.join(', ')} but received ${JSON.stringify(options.kind)}`,
    );
  if (!EXT_PATTERN.test(options.ext))
    throw new TypeError(
      `Expected ext to be 1 to 8 characters of a-z or 0-9 but received ${JSON.stringify(options.ext)}`,
    );
  if (!NAME_PATTERN.test(name))
    throw new TypeError(
      `Expected name to be 1 to 64 characters of A-Z, a-z, 0-9, "_" or "-" but received ${JSON.stringify(name)}`,
    );
  return [options.kind, options.taskId, `${name}.${options.ext}`];
}

/** The Content-Type a stored file is served with (`application/octet-stream` for an extension not listed). */
export function contentTypeOf(ext: string): string {
  return RESULT_CONTENT_TYPES[ext] ?? 'application/octet-stream';
}

/** When a result stored at `from` expires: its kind's lifetime (protocol/result-url.ts), as the event says it. */
export function resultExpiresAt(kind: JobKind, upscaleResultLifetimeDays: number, from: number = Date.now()): string {
  return new Date(from + resultLifetimeMs(kind, upscaleResultLifetimeDays)).toISOString();
}

/** How long a bucket store tries before the job fails, where RESULTS_STORE_DEADLINE_MS was not handed over (the 2 minutes). */
export const DEFAULT_STORE_DEADLINE_MS = 120_000;
