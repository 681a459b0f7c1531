/**
 * Write-then-rename (src/media/partial-file.ts): the one naming scheme of half-written files, the
 * rename on success and the partial file removed on failure.
 */
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  isPartialName,
  ownerToken,
  partialOwner,
  partialPathFor,
  writeFileAtomic,
  writeThenRename,
} from '../../src/media/index.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'mw-partial-'));
});
afterEach(async () => rm(dir, { recursive: true, force: true }));

describe('partial files', () => {
  it('are hidden, beside the target, named after it and after this process', () => {
    const partial = partialPathFor(path.join(dir, 'out.mp4'));
    expect(path.dirname(partial)).toBe(dir);
    const name = path.basename(partial);
    expect(name.startsWith(`.out.mp4.${ownerToken()}.`)).toBe(true);
    expect(name.endsWith('.partial')).toBe(true);
    expect(partialOwner(name)?.pid).toBe(process.pid);
    expect(partialPathFor(path.join(dir, 'out.mp4'))).not.toBe(partial);
  });

  it('are told from other names: a result, a file without an owner, an owner without the suffix', () => {
    expect(isPartialName(path.basename(partialPathFor('/x/a.png')))).toBe(true);
    expect(isPartialName('a.png')).toBe(false);
    expect(isPartialName('.a.png.1234.partial')).toBe(false);
    expect(isPartialName(`.a.png.${ownerToken()}.ab12cd34.tmp`)).toBe(false);
  });

  it('become the target only when the write resolves', async () => {
    const target = path.join(dir, 'model.onnx');
    let seen = '';
    const out = await writeThenRename(target, async (partial) => {
      seen = partial;
      await writeFile(partial, 'whole');
      expect(await readdir(dir)).toEqual([path.basename(partial)]);
      return 42;
    });
    expect(out).toBe(42);
    expect(await readFile(target, 'utf8')).toBe('whole');
    expect(await readdir(dir)).toEqual(['model.onnx']);
    expect(isPartialName(path.basename(seen))).toBe(true);
  });

  it('are removed, and the target left alone, when the write rejects', async () => {
    const target = path.join(dir, 'out.png');
    await writeFile(target, 'old');
    const failing = writeThenRename(target, async (partial) => {
      await writeFile(partial, 'half');
      throw new Error('encoder died');
    });
    await expect(failing).rejects.toThrow('encoder died');
    expect(await readdir(dir)).toEqual(['out.png']);
    expect(await readFile(target, 'utf8')).toBe('old');
  });

  it('writeFileAtomic makes the directory and leaves one whole file', async () => {
    const target = path.join(dir, 'a', 'b', 'weights.bin');
    await writeFileAtomic(target, new Uint8Array([1, 2, 3]));
    expect([...(await readFile(target))]).toEqual([1, 2, 3]);
    expect(await readdir(path.dirname(target))).toEqual(['weights.bin']);
  });
});
