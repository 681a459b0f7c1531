/**
 * Write to a temporary name beside the target, then rename into place: a reader (or a crash)
 * never sees half a file, and two writers each leave a whole one. Every such file of the project
 * has one name, `.<target's name>.<owner>.<random>.partial` in the target's directory: hidden,
 * named after the process that writes it (media/owner.ts), so a sweep removes what a killed
 * process left and never what a live one is writing.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ownerToken, parseOwnerToken, type ProcessOwner } from './owner.js';

const SUFFIX = '.partial';

/** A fresh temporary name beside `target`, owned by this process. */
export function partialPathFor(target: string): string {
  const name = `.${path.basename(target)}.${ownerToken()}.${randomBytes(4).toString('hex')}${SUFFIX}`;
  return path.join(path.dirname(target), name);
}

/** Whether a directory entry is a partial file (of any process), and whose. */
export function partialOwner(name: string): ProcessOwner | undefined {
  return name.startsWith('.') && name.endsWith(SUFFIX) ? parseOwnerToken(name) : undefined;
}

export function isPartialName(name: string): boolean {
  return partialOwner(name) !== undefined;
}

/**
 * Runs `write` on a partial name beside `target` and renames it into place when it resolves;
 * removes the partial file when it rejects (the error goes on). `partial`: a name from
 * partialPathFor that the caller needed before (other files named after it, error messages).
 */
export async function writeThenRename<T>(
  target: string,
  write: (partial: string) => Promise<T>,
  partial: string = partialPathFor(target),
): Promise<T> {
  try {
    const out = await write(partial);
    await rename(partial, target);
    return out;
  } catch (err) {
    await rm(partial, { force: true });
    throw err;
  }
}

/** `bytes` written to `target` through a partial file, its directory made when missing. */
export async function writeFileAtomic(target: string, bytes: Uint8Array | string): Promise<void> {
  await mkdir(path.dirname(target), { recursive: true });
  await writeThenRename(target, (partial) => writeFile(partial, bytes));
}
