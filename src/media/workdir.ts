/**
 * One temporary directory per job, removed in `finally` whatever happens, so downloads and
 * intermediate files never outlive the job that made them.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface JobDirOptions {
  /** Parent directory for job directories (a setting; defaults to the OS temp directory). */
  root?: string;
}

/** Job ids come from the network: keep only characters that cannot escape or confuse a path. */
export function safeDirPrefix(prefix: string): string {
  const cleaned = prefix.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 48);
  return cleaned === '' ? 'job' : cleaned;
}

export async function withJobDir<T>(prefix: string, fn: (dir: string) => Promise<T>, opts: JobDirOptions = {}): Promise<T> {
  const dir = await mkdtemp(join(opts.root ?? tmpdir(), `media-worker-${safeDirPrefix(prefix)}-`));
  try {
    return await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true, maxRetries: 3 });
  }
}
