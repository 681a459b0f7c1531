/**
 * Finished results: files under `<results dir>/<kind>/<task id>/<name>.<ext>`, served by whatever
 * serves that directory at the public base URL (the spec's {cdn_url}). A sweeper deletes each file
 * when its kind's lifetime has passed since it was stored: the spec's days for the kinds that have
 * them (section 8), upscales as configured (protocol/result-url.ts). The lifetime is read from the directory a file lives
 * in and its modification time, so no index has to survive restarts.
 */
import { constants as fsConstants } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Logger } from 'pino';
import { ownerState, ownerToken, parseOwnerToken } from '../media/index.js';
import type { JobKind } from '../jobs/index.js';
import { JOB_KINDS } from '../jobs/index.js';
import { isTaskId, resultLifetimeMs, resultUrl } from '../protocol/index.js';

export { resultLifetimeMs };

const DAY_MS = 24 * 60 * 60 * 1000;
/**
 * Half-written copies (`.partial-<owner>-<time>`) are removed as soon as their owner process is
 * gone; those whose owner cannot be judged (another container) once older than this.
 */
const PARTIAL_MAX_AGE_MS = DAY_MS;
const NAME_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
const EXT_PATTERN = /^[a-z0-9]{1,8}$/;

export interface ResultStoreSettings {
  resultsDir: string;
  /** Unset: file:// URLs (development). */
  publicBaseUrl?: string | undefined;
  upscaleResultLifetimeDays: number;
}

export interface StoreOptions {
  taskId: string;
  kind: JobKind;
  /** File extension without the dot, lower case: `mp4`, `png`, `mp3`. */
  ext: string;
  /** File name without extension, for tasks with several files (a song and its cover: `song-1`, `cover-1`); default `output`. */
  name?: string;
}

export interface StoredResult {
  /** Absolute path of the stored file. */
  path: string;
  /** Public URL of the file. */
  url: string;
  /** ISO 8601 time after which the sweeper deletes the file. */
  expiresAt: string;
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
function checkTaskId(taskId: string): void {
  if (!isTaskId(taskId)) throw new TypeError(`Expected taskId to be 1 to 128 characters of A-Z, a-z, 0-9, "_" or "-" but received ${JSON.stringify(taskId)}`);
}

/** The relative location of a result; throws on a value that could leave the results directory. */
export function resultRelativePath(options: StoreOptions): string[] {
  const name = options.name ?? 'output';
  checkTaskId(options.taskId);
  if (!(JOB_KINDS as readonly string[]).includes(options.kind)) throw new TypeError(`Expected kind to be one of ${JOB_KINDS.join(', ')} but received ${JSON.stringify(options.kind)}`);
  if (!EXT_PATTERN.test(options.ext)) throw new TypeError(`Expected ext to be 1 to 8 characters of a-z or 0-9 but received ${JSON.stringify(options.ext)}`);
  if (!NAME_PATTERN.test(name)) throw new TypeError(`Expected name to be 1 to 64 characters of A-Z, a-z, 0-9, "_" or "-" but received ${JSON.stringify(name)}`);
  return [options.kind, options.taskId, `${name}.${options.ext}`];
}

export class ResultStore {
  constructor(
    private readonly settings: ResultStoreSettings,
    private readonly logger?: Logger,
  ) {}

  /**
   * Moves a finished file into the results directory (rename when on the same file system, else
   * copy then remove the original) and returns where it is served. A second store for the same
   * task and name replaces the first: a redelivered job's result wins over a lost attempt's.
   */
  async storeResult(localPath: string, options: StoreOptions): Promise<StoredResult> {
    const segments = resultRelativePath(options);
    const target = path.join(this.settings.resultsDir, ...segments);
    await fs.mkdir(path.dirname(target), { recursive: true });
    const partial = `${target}.partial-${ownerToken()}-${Date.now()}`;
    try {
      await fs.rename(localPath, partial);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EXDEV') throw err;
      await fs.copyFile(localPath, partial, fsConstants.COPYFILE_FICLONE);
      await fs.rm(localPath, { force: true });
    }
    try {
      // A rename keeps the source's mtime; the lifetime counts from now.
      const now = new Date();
      await fs.utimes(partial, now, now);
      await fs.rename(partial, target);
      const expiresAt = new Date(now.getTime() + resultLifetimeMs(options.kind, this.settings.upscaleResultLifetimeDays));
      const url = this.settings.publicBaseUrl === undefined ? pathToFileURL(target).toString() : resultUrl(this.settings.publicBaseUrl, segments);
      return { path: target, url, expiresAt: expiresAt.toISOString() };
    } catch (err) {
      await fs.rm(partial, { force: true });
      throw err;
    }
  }

  /**
   * Removes every result of a task (its folder under each kind): what a run stored before it was
   * cancelled or failed must not stay served (a predictable path, maybe on an unsigned CDN).
   */
  async discard(taskId: string): Promise<void> {
    checkTaskId(taskId);
    await Promise.all(JOB_KINDS.map((kind) => fs.rm(path.join(this.settings.resultsDir, kind, taskId), { recursive: true, force: true })));
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
            const partial = file.includes('.partial-');
            const owner = partial ? parseOwnerToken(file) : undefined;
            const state = owner === undefined ? 'foreign' : await ownerState(owner);
            const maxAge = partial ? PARTIAL_MAX_AGE_MS : lifetime;
            if ((partial && state === 'dead') || (!(partial && state === 'alive') && now.getTime() - stat.mtimeMs >= maxAge)) {
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

export function createResultStore(settings: ResultStoreSettings, logger?: Logger): ResultStore {
  return new ResultStore(settings, logger);
}

async function listDir(dir: string): Promise<string[]> {
  try {
    return await fs.readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
}
