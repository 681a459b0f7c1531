import { describe, expect, it } from 'vitest';
import { KeyedQueue } from '../../../src/gateway/store/keyed-queue.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('KeyedQueue', () => {
  it('runs tasks of one key one at a time in order, other keys alongside, and goes on after a failure', async () => {
    const q = new KeyedQueue();
    const log: string[] = [];
    const task =
      (name: string, ms: number, fail = false) =>
      async () => {
        log.push(`${name}+`);
        await sleep(ms);
        log.push(`${name}-`);
        if (fail) throw new Error(name);
        return name;
      };
    const results = await Promise.allSettled([
      q.run('a', task('a1', 30, true)),
      q.run('a', task('a2', 5)),
      q.run('b', task('b1', 5)),
    ]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'fulfilled', 'fulfilled']);
    expect(log.indexOf('a1-')).toBeLessThan(log.indexOf('a2+'));
    expect(log.indexOf('b1-')).toBeLessThan(log.indexOf('a1-'));
  });
});
