import { afterEach, describe, expect, it, vi } from 'vitest';
import { throttle } from '../src/throttle.js';

describe('throttle', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('sends the first value, drops the rest of the interval, sends urgent values at once', () => {
    let t = 0;
    const sent: number[] = [];
    const th = throttle((v: number) => sent.push(v), 1000, { now: () => t });
    th.push(1);
    t = 500;
    th.push(2);
    th.push(3, true);
    t = 1499;
    th.push(4);
    t = 1500;
    th.push(5);
    expect(sent).toEqual([1, 3, 5]);
  });

  it('with trailing, sends the latest held value when the interval ends, and nothing after close', () => {
    vi.useFakeTimers();
    const sent: string[] = [];
    const th = throttle((v: string) => sent.push(v), 1000, { trailing: true });
    th.push('a');
    th.push('b');
    th.push('c');
    vi.advanceTimersByTime(1000);
    expect(sent).toEqual(['a', 'c']);
    th.push('d');
    th.close();
    vi.advanceTimersByTime(5000);
    th.push('e', true);
    expect(sent).toEqual(['a', 'c']);
  });

  it('never lets a failing send reach the caller', () => {
    const th = throttle(() => {
      throw new Error('connection closed');
    }, 0);
    expect(() => th.push(1)).not.toThrow();
  });
});
