/**
 * Finished results, stored before their completion event (docs/results-storage.md). Every store
 * keeps a file at the fixed key `<kind>/<task id>/<name>.<ext>`, so a redelivered job replaces
 * rather than adds, and answers only once the stored copy is confirmed: its size and sha256 go into
 * the event, where the gateway checks them against the store.
 *
 * This module is the local store: files under `<results dir>/<kind>/<task id>/<name>.<ext>`, served
 * by whatever serves that directory at the public base URL (the spec's {cdn_url}). A sweeper deletes
 * each file when its kind's lifetime has passed since it was stored: the spec's days for the kinds
 * that have them (section 8), upscales as configured (protocol/result-url.ts). The lifetime is read
 * from the directory a file lives in and its modification time, so no index has to survive
 * restarts. The bucket store is s3-results.ts; createResultStore picks by RESULTS_STORE.
 */
import { constants as fsConstants } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Logger } from 'pino';
import { fileDigest, ownerState, partialOwner, writeThenRename } from '../media/index.js';
import { JOB_KINDS } from '../jobs/index.js';
import { resultLifetimeMs, resultUrl, type ObjectStoreSettings } from '../protocol/index.js';
import {
  resultExpiresAt,
  checkTaskId,
  resultRelativePath,
  type ResultStore,
  type StoredResult,
  type StoreOptions,
  type SweepObserver,
  type SweepReport,
} from './result-store.js';
import { reachKillPoint } from './kill-point.js';
import { S3ResultStore } from './s3-results.js';
import { UploadUrlResultStore } from './upload-url-results.js';

export { resultLifetimeMs, resultRelativePath };
export type { ResultStore, StoredResult, StoreOptions, SweepObserver, SweepReport };

const DAY_MS = 24 * 60 * 60 * 1000;
/**
 * Half-written copies (partial files, media/partial-file.ts) are removed as soon as their owner process is
 * gone; those whose owner cannot be judged (another container) once older than this.
 */
const PARTIAL_MAX_AGE_MS = DAY_MS;
export interface ResultStoreSettings extends Partial<ObjectStoreSettings> {
  resultsDir: string;
  /** Unset: file:// URLs (local) or s3:// URLs (s3): development. */
  publicBaseUrl?: string | undefined;
  upscaleResultLifetimeDays: number;
  /** Default `local`. */
  resultsStore?: 'local' | 's3' | 'upload-url';
  /** RESULTS_STORE_DEADLINE_MS: how long one file's storing is retried (s3). */
  storeDeadlineMs?: number;
  /** RESULTS_S3_PART_MIB: the bucket store's part size. */
  s3PartMib?: number;
}

/** Where a local store put the file (its tests and the command line read it). */
export interface LocalStoredResult extends StoredResult {
  path: string;
}

export class LocalResultStore implements ResultStore {
  constructor(
    private readonly settings: ResultStoreSettings,
    private readonly logger?: Logger,
  ) {}

  /**
   * Moves a finished file into the results directory (rename when on the same file system, else
   * copy then remove the original) and returns where it is served. A second store for the same
   * task and name replaces the first: a redelivered job's result wins over a lost attempt's.
   */
  async storeResult(localPath: string, options: StoreOptions): Promise<LocalStoredResult> {
    const segments = resultRelativePath(options);
    const target = path.join(this.settings.resultsDir, ...segments);
    await fs.mkdir(path.dirname(target), { recursive: true });
    // A rename keeps the source's mtime; the lifetime counts from now.
    const now = new Date();
    const digest = await writeThenRename(target, async (partial) => {
      try {
        await fs.rename(localPath, partial);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EXDEV') throw err;
        await fs.copyFile(localPath, partial, fsConstants.COPYFILE_FICLONE);
        await fs.rm(localPath, { force: true });
      }
      await fs.utimes(partial, now, now);
      // Read back before it is named: the event says what the stored copy holds, not what was meant.
      return fileDigest(partial);
    });
    reachKillPoint('stored');
    const expiresAt = resultExpiresAt(options.kind, this.settings.upscaleResultLifetimeDays, now.getTime());
    const url =
      this.settings.publicBaseUrl === undefined
        ? pathToFileURL(target).toString()
        : resultUrl(this.settings.publicBaseUrl, segments);
    return { path: target, key: segments.join('/'), url, ...digest, expiresAt };
  }

  /**
   * Removes every result of a task (its folder under each kind): what a run stored before it was
   * cancelled or failed must not stay served (a predictable path, maybe on an unsigned CDN).
   */
  async discard(taskId: string): Promise<void> {
    checkTaskId(taskId);
    await Promise.all(
      JOB_KINDS.map((kind) =>
        fs.rm(path.join(this.settings.resultsDir, kind, taskId), { recursive: true, force: true }),
      ),
    );
  }

  /** Deletes expired results (and empty task directories); never throws for one bad entry. */
  async sweep(now: Date = new Date()): Promise<SweepReport> {
    const report: SweepReport = { removed: 0, kept: 0, errors: 0 };
    for (const kind of JOB_KINDS) {
      const lifetime = resultLifetimeMs(kind, this.settings.upscaleResultLifetimeDays);
      const kindDir = path.join(this.settings.resultsDir, kind);
      for (const taskDir of await listDir(kindDir)) {
        const dir = path.join(kindDir, taskDir);
        const files = await listDir(dir);
        for (const file of files) {
          const filePath = path.join(dir, file);
          try {
            const stat = await fs.stat(filePath);
            if (!stat.isFile()) continue;
            const owner = partialOwner(file);
            const partial = owner !== undefined;
            const state = owner === undefined ? 'foreign' : await ownerState(owner);
            const maxAge = partial ? PARTIAL_MAX_AGE_MS : lifetime;
            if (
              (partial && state === 'dead') ||
              (!(partial && state === 'alive') && now.getTime() - stat.mtimeMs >= maxAge)
            ) {
              await fs.rm(filePath, { force: true });
              report.removed += 1;
            } else {
              report.kept += 1;
            }
          } catch (err) {
            report.errors += 1;
            this.logger?.warn({ err, path: filePath }, 'Could not sweep a result file');
          }
        }
        // Fails harmlessly (ENOTEMPTY) while the directory still holds something.
        await fs.rmdir(dir).catch(() => undefined);
      }
    }
    return report;
  }

  /** Sweeps now and then every `intervalMs`; returns the function that stops it. */
  startSweeper(intervalMs: number, observer?: SweepObserver): () => void {
    let running = false;
    const run = (): void => {
      if (running) return;
      running = true;
      this.sweep()
        .then((r) => {
          observer?.swept(r);
          if (r.removed > 0) this.logger?.info(r, 'Swept expired results');
        })
        .catch((err: unknown) => {
          observer?.failed();
          this.logger?.error({ err }, 'Result sweep failed');
        })
        .finally(() => {
          running = false;
        });
    };
    run();
    const timer = setInterval(run, intervalMs);
    timer.unref();
    return () => clearInterval(timer);
  }
}

/** The store RESULTS_STORE names: the local directory (default) or the bucket. */
export function createResultStore(settings: ResultStoreSettings, logger?: Logger): ResultStore {
  if (settings.resultsStore === 'upload-url') {
    return new UploadUrlResultStore(
      {
        upscaleResultLifetimeDays: settings.upscaleResultLifetimeDays,
        ...(settings.storeDeadlineMs === undefined ? {} : { storeDeadlineMs: settings.storeDeadlineMs }),
      },
      logger,
    );
  }
  if (settings.resultsStore === 's3') {
    return new S3ResultStore(
      {
        s3Bucket: settings.s3Bucket,
        s3Endpoint: settings.s3Endpoint,
        s3Region: settings.s3Region ?? 'us-east-1',
        s3Prefix: settings.s3Prefix ?? '',
        s3ForcePathStyle: settings.s3ForcePathStyle ?? false,
        publicBaseUrl: settings.publicBaseUrl,
        upscaleResultLifetimeDays: settings.upscaleResultLifetimeDays,
        ...(settings.storeDeadlineMs === undefined ? {} : { storeDeadlineMs: settings.storeDeadlineMs }),
        ...(settings.s3PartMib === undefined ? {} : { upload: { partSize: settings.s3PartMib * 1024 * 1024 } }),
      },
      logger,
    );
  }
  return new LocalResultStore(settings, logger);
}

async function listDir(dir: string): Promise<string[]> {
  try {
    return await fs.readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
}
