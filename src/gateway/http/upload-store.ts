/**
 * Uploads on disk: `RESULTS_DIR/uploads/<account id>/<upload id>.<ext>`, so the owner is the
 * folder, an account's usage is one folder's listing (at most GATEWAY_UPLOAD_QUOTA_FILES files),
 * and expiry is a file's age. Files being written are partial files (media's partialPathFor) and count toward nothing.
 */
import { readdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';

export interface UploadUsage {
  bytes: number;
  files: number;
}

const PART_MAX_AGE_MS = 60 * 60 * 1000;

export async function accountUsage(accountDir: string): Promise<UploadUsage> {
  const names = await readdir(accountDir).catch(() => [] as string[]);
  let bytes = 0;
  let files = 0;
  for (const name of names) {
    if (name.startsWith('.')) continue;
    const s = await stat(path.join(accountDir, name)).catch(() => null);
    if (s?.isFile()) {
      bytes += s.size;
      files += 1;
    }
  }
  return { bytes, files };
}

/** Deletes uploads older than `maxAgeMs` (and partial files left by a crash); returns how many. */
export async function sweepUploads(uploadsDir: string, maxAgeMs: number, nowMs: number): Promise<number> {
  let removed = 0;
  for (const account of await readdir(uploadsDir).catch(() => [] as string[])) {
    const dir = path.join(uploadsDir, account);
    for (const name of await readdir(dir).catch(() => [] as string[])) {
      const file = path.join(dir, name);
      const s = await stat(file).catch(() => null);
      if (s === null || !s.isFile()) continue;
      const limit = name.startsWith('.') ? PART_MAX_AGE_MS : maxAgeMs;
      if (nowMs - s.mtimeMs < limit) continue;
      await rm(file, { force: true });
      removed += 1;
    }
  }
  return removed;
}
