/**
 * One temporary directory per job, removed in `finally` whatever happens, so downloads and
 * intermediate files never outlive the job that made them. A process killed outright (SIGKILL,
 * the OOM killer) runs no `finally`: each directory's name therefore carries its owner
 * (owner.ts), and `sweepLeftovers` removes the ones whose owner is gone, never a live one, so
 * several workers may share one temp directory.
 *
 *   media-worker-<owner token>-<job id, cleaned>-<6 random characters>
 */
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ownerState, ownerToken, parseOwnerToken } from './owner.js';
import { isPartialName } from './partial-file.js';

export interface JobDirOptions {
  /** Parent directory for job directories (a setting; defaults to the OS temp directory). */
  root?: string;
}

export const JOB_DIR_PREFIX = 'media-worker-';

/** Leftovers whose owner cannot be judged from here (another container, an older version) are removed past this age. */
export const FOREIGN_LEFTOVER_MAX_AGE_MS = 24 * 60 * 60 * 1000;

/** Job ids come from the network: keep only characters that cannot escape or confuse a path. */
export function safeDirPrefix(prefix: string): string {
  const cleaned = prefix.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 48);
  return cleaned === '' ? 'job' : cleaned;
}

export async function withJobDir<T>(
  prefix: string,
  fn: (dir: string) => Promise<T>,
  opts: JobDirOptions = {},
): Promise<T> {
  const dir = await mkdtemp(join(opts.root ?? tmpdir(), `${JOB_DIR_PREFIX}${ownerToken()}-${safeDirPrefix(prefix)}-`));
  try {
    return await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true, maxRetries: 3 });
  }
}

/**
 * A temporary directory of this process that is not a job's (a readiness check's trial render, a
 * model download): named like a job directory, so the sweep of the directory it is in reclaims it
 * after a SIGKILL. The caller removes it when done.
 */
export async function ownedTempDir(root: string, label: string): Promise<string> {
  return mkdtemp(join(root, `${JOB_DIR_PREFIX}${ownerToken()}-${safeDirPrefix(label)}-`));
}

export interface LeftoverSweep {
  /** Directory whose entries are looked at (not recursively). */
  dir: string;
  /** Which entries are this program's temporaries (others are never touched). */
  matches(name: string): boolean;
}

export interface LeftoverReport {
  removed: string[];
  /** Entries whose owner still runs (or that are too young to judge). */
  kept: number;
}

/**
 * Removes the entries of `sweep.dir` that `matches` accepts and whose owner is gone: dead for sure
 * (this boot and pid namespace, no such process), or unjudgeable (another domain, no owner in the
 * name) and older than `foreignMaxAgeMs`. A missing directory is an empty one. Never throws for
 * one entry (it may vanish while we look: its owner finished).
 */
export async function sweepLeftovers(
  sweep: LeftoverSweep,
  opts: { now?: number; foreignMaxAgeMs?: number } = {},
): Promise<LeftoverReport> {
  const now = opts.now ?? Date.now();
  const foreignMaxAgeMs = opts.foreignMaxAgeMs ?? FOREIGN_LEFTOVER_MAX_AGE_MS;
  const report: LeftoverReport = { removed: [], kept: 0 };
  let names: string[];
  try {
    names = await readdir(sweep.dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return report;
    throw err;
  }
  for (const name of names) {
    if (!sweep.matches(name)) continue;
    const path = join(sweep.dir, name);
    const owner = parseOwnerToken(name);
    const state = owner === undefined ? 'foreign' : await ownerState(owner);
    let remove = state === 'dead';
    if (state === 'foreign') {
      const mtime = await stat(path).then(
        (s) => s.mtimeMs,
        () => undefined,
      );
      remove = mtime !== undefined && now - mtime >= foreignMaxAgeMs;
    }
    if (!remove) {
      report.kept += 1;
      continue;
    }
    await rm(path, { recursive: true, force: true, maxRetries: 3 }).then(
      () => report.removed.push(path),
      () => undefined,
    );
  }
  return report;
}

/**
 * The job directories of a temp root (MEDIA_WORKER_TMP_DIR): only names with an owner token, so
 * nothing else in a shared /tmp is ever touched.
 */
export function jobDirSweep(root: string): LeftoverSweep {
  return { dir: root, matches: (name) => name.startsWith(JOB_DIR_PREFIX) && parseOwnerToken(name) !== undefined };
}

/**
 * Temporaries in a model files directory: half-written weights (a partial file, partial-file.ts's
 * writeFileAtomic) and a model installer's work directories (`.install-<owner>-…`).
 */
export function modelTempSweep(filesDir: string): LeftoverSweep {
  return {
    dir: filesDir,
    matches: (name) => isPartialName(name) || (name.startsWith('.install-') && parseOwnerToken(name) !== undefined),
  };
}
