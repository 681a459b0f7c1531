/**
 * Job directories carry their owner; the sweep removes those of processes that are gone and
 * never a live one (another live process's, or this process's own).
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  currentOwner,
  ownerState,
  ownerToken,
  parseOwnerToken,
  startTimeOf,
  type ProcessOwner,
} from '../../src/media/owner.js';
import { jobDirSweep, modelTempSweep, safeDirPrefix, sweepLeftovers, withJobDir } from '../../src/media/workdir.js';
import { writeFileAtomic } from '../../src/inference/index.js';

let root: string;
beforeEach(async () => {
  root = await fs.mkdtemp(path.join(os.tmpdir(), 'workdir-test-'));
});
afterEach(async () => {
  await fs.rm(root, { recursive: true, force: true });
});

/** A real other process (a sleeping node) and its owner identity, read from /proc like the code does. */
async function otherProcess(): Promise<{ owner: ProcessOwner; kill(): Promise<void> }> {
  const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
  await new Promise((r) => child.once('spawn', r));
  const start = startTimeOf(await fs.readFile(`/proc/${child.pid}/stat`, 'utf8')) ?? 0;
  const owner = { pid: child.pid as number, start, domain: currentOwner().domain };
  return {
    owner,
    kill: async () => {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGKILL');
      await exited;
    },
  };
}

describe('owner tokens', () => {
  it('read the start time after a command name holding spaces and parentheses', () => {
    const line = '4242 (node (worker) x) S 1 4242 4242 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 11 0 987654 1000 50';
    expect(startTimeOf(line)).toBe(987654);
  });

  it('round-trip through a name, and this process is alive', async () => {
    const token = ownerToken();
    expect(token).toMatch(/^p\d+s\d+d[0-9a-f]{8}$/);
    expect(parseOwnerToken(`media-worker-${token}-task_1-AbC123`)).toEqual(currentOwner());
    expect(await ownerState(currentOwner())).toBe('alive');
  });

  it('a reused pid (same pid, another start time) is a dead owner; another domain is foreign', async () => {
    const me = currentOwner();
    expect(await ownerState({ ...me, start: me.start + 1 })).toBe('dead');
    expect(await ownerState({ ...me, domain: '00000000' === me.domain ? '11111111' : '00000000' })).toBe('foreign');
  });
});

describe('sweepLeftovers', () => {
  it("removes the job directory of a killed process, keeps a live process's and this one's, touches nothing else", async () => {
    const other = await otherProcess();
    const theirs = path.join(root, `media-worker-${ownerToken(other.owner)}-task_a-AAAAAA`);
    await fs.mkdir(theirs);
    await fs.writeFile(path.join(theirs, 'input.mp4'), 'x');
    const unrelated = path.join(root, 'media-worker-tests-nats-url.lock');
    await fs.writeFile(unrelated, '1');

    let mine = '';
    await withJobDir(
      'task_b',
      async (dir) => {
        mine = dir;
        expect(path.basename(dir)).toMatch(new RegExp(`^media-worker-${ownerToken()}-task_b-`));
        // Two workers sharing the temp dir: each sweeps while the other's job runs.
        const first = await sweepLeftovers(jobDirSweep(root));
        expect(first.removed).toEqual([]);
        expect(first.kept).toBe(2);
        await other.kill();
        const second = await sweepLeftovers(jobDirSweep(root));
        expect(second.removed).toEqual([theirs]);
        expect(existsSync(dir)).toBe(true);
      },
      { root },
    );
    expect(existsSync(mine)).toBe(false);
    expect(existsSync(unrelated)).toBe(true);
  });

  it('removes leftovers of another domain only once older than any job lasts', async () => {
    const foreign = path.join(
      root,
      `media-worker-p1s1d${currentOwner().domain === 'abcdef01' ? 'abcdef02' : 'abcdef01'}-t-XXXXXX`,
    );
    await fs.mkdir(foreign);
    expect((await sweepLeftovers(jobDirSweep(root))).removed).toEqual([]);
    expect((await sweepLeftovers(jobDirSweep(root), { now: Date.now() + 25 * 3600 * 1000 })).removed).toEqual([
      foreign,
    ]);
  });

  it('removes half-written model files and installer work directories of a dead process', async () => {
    const other = await otherProcess();
    const half = path.join(root, `.esrgan-slim-x2.onnx.${ownerToken(other.owner)}.1234abcd.partial`);
    const install = path.join(root, `.install-${ownerToken(other.owner)}-00ff00ff`);
    await fs.writeFile(half, 'half');
    await fs.mkdir(install);
    await writeFileAtomic(path.join(root, 'done.onnx'), new Uint8Array([1, 2]));
    expect((await sweepLeftovers(modelTempSweep(root))).removed).toEqual([]);
    await other.kill();
    expect((await sweepLeftovers(modelTempSweep(root))).removed.sort()).toEqual([install, half].sort());
    expect(await fs.readdir(root)).toEqual(['done.onnx']);
  });
});

describe('withJobDir', () => {
  it('gives the job its own directory under the root, named after its owner, and removes it afterwards', async () => {
    let seen = '';
    const result = await withJobDir(
      'task-1',
      async (dir) => {
        seen = dir;
        expect(path.dirname(dir)).toBe(root);
        expect(path.basename(dir)).toMatch(new RegExp(`^media-worker-${ownerToken()}-task-1-`));
        await fs.writeFile(path.join(dir, 'input.bin'), 'data');
        return 42;
      },
      { root },
    );
    expect(result).toBe(42);
    expect(existsSync(seen)).toBe(false);
    expect(await fs.readdir(root)).toEqual([]);
  });

  it('removes the directory when the job throws', async () => {
    let seen = '';
    await expect(
      withJobDir(
        'task-2',
        async (dir) => {
          seen = dir;
          await fs.writeFile(path.join(dir, 'partial.bin'), 'data');
          throw new Error('boom');
        },
        { root },
      ),
    ).rejects.toThrow('boom');
    expect(existsSync(seen)).toBe(false);
    expect(await fs.readdir(root)).toEqual([]);
  });

  it.each([
    ['../../etc', '______etc'],
    ['a/b', 'a_b'],
    ['', 'job'],
    ['x'.repeat(100), 'x'.repeat(48)],
    ['job_9-A', 'job_9-A'],
  ])('keeps network-supplied ids from escaping the root: %s -> %s', async (id, prefix) => {
    expect(safeDirPrefix(id)).toBe(prefix);
    await withJobDir(
      id,
      async (dir) => {
        expect(path.dirname(dir)).toBe(root);
      },
      { root },
    );
  });
});
