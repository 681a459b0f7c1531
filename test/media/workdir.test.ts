import { existsSync } from 'node:fs';
import { readdir, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { safeDirPrefix, withJobDir } from '../../src/media/workdir.js';
import { makeTempDir } from './helpers.js';

let root: string;
let cleanup: () => Promise<void>;
beforeAll(async () => {
  ({ dir: root, cleanup } = await makeTempDir('workdir'));
});
afterAll(async () => {
  await cleanup();
});

describe('withJobDir', () => {
  it('gives the job its own directory under the root and removes it afterwards', async () => {
    let seen = '';
    const result = await withJobDir('task-1', async (dir) => {
      seen = dir;
      expect(dirname(dir)).toBe(root);
      expect(basename(dir)).toMatch(/^media-worker-task-1-/);
      await writeFile(join(dir, 'input.bin'), 'data');
      return 42;
    }, { root });
    expect(result).toBe(42);
    expect(existsSync(seen)).toBe(false);
    expect(await readdir(root)).toEqual([]);
  });

  it('removes the directory when the job throws', async () => {
    let seen = '';
    await expect(
      withJobDir('task-2', async (dir) => {
        seen = dir;
        await writeFile(join(dir, 'partial.bin'), 'data');
        throw new Error('boom');
      }, { root }),
    ).rejects.toThrow('boom');
    expect(existsSync(seen)).toBe(false);
    expect(await readdir(root)).toEqual([]);
  });

  it.each([
    ['../../etc', '______etc'],
    ['a/b', 'a_b'],
    ['', 'job'],
    ['x'.repeat(100), 'x'.repeat(48)],
    ['job_9-A', 'job_9-A'],
  ])('keeps network-supplied ids from escaping the root: %s -> %s', async (id, prefix) => {
    expect(safeDirPrefix(id)).toBe(prefix);
    await withJobDir(id, async (dir) => {
      expect(dirname(dir)).toBe(root);
    }, { root });
  });
});
