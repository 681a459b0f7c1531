/** The poll view's bounded cache (src/gateway/poll-view/versioned-cache.ts): newest sequence wins, and memory stays bounded. */
import { describe, expect, it } from 'vitest';
import { VersionedCache } from '../../../src/gateway/poll-view/versioned-cache.js';

const bounds = { maxEntries: 3, maxAgeMs: 10_000 };

describe('VersionedCache', () => {
  it('keeps the value with the highest sequence whichever arrives first', () => {
    const cache = new VersionedCache<string>(bounds);
    cache.offer('k', 5, 'v5', 0);
    cache.offer('k', 3, 'v3', 1);
    expect(cache.get('k', 2)).toBe('v5');
    cache.offer('k', 7, 'v7', 3);
    expect(cache.get('k', 4)).toBe('v7');
  });

  it('answers a store read with the newer value a watch delivered meanwhile', () => {
    const cache = new VersionedCache<string>(bounds);
    const epoch = cache.epoch;
    cache.offer('k', 9, 'from the watch', 0);
    expect(cache.fill('k', 4, 'from the read', epoch, 1)).toBe('from the watch');
    expect(cache.get('k', 2)).toBe('from the watch');
  });

  it('does not cache a read that began before an entry was removed (it may be older than what was dropped)', () => {
    const cache = new VersionedCache<string>(bounds);
    cache.offer('other', 1, 'x', 0);
    const epoch = cache.epoch;
    cache.clear();
    expect(cache.fill('k', 4, 'read', epoch, 1)).toBe('read');
    expect(cache.get('k', 2)).toBeUndefined();
    expect(cache.fill('k', 4, 'read', cache.epoch, 3)).toBe('read');
    expect(cache.get('k', 4)).toBe('read');
  });

  it('holds at most maxEntries, the least recently written leaving first', () => {
    const cache = new VersionedCache<number>(bounds);
    for (let i = 1; i <= 5; i++) cache.offer(`k${i}`, i, i, i);
    expect(cache.size).toBe(3);
    expect(cache.get('k1', 6)).toBeUndefined();
    expect(cache.get('k2', 6)).toBeUndefined();
    expect([cache.get('k3', 6), cache.get('k4', 6), cache.get('k5', 6)]).toEqual([3, 4, 5]);
  });

  it('forgets an entry after maxAgeMs, and sooner when the value says it has expired', () => {
    const cache = new VersionedCache<{ done: boolean }>({
      ...bounds,
      expired: (v, at, now) => v.done && now - at >= 100,
    });
    cache.offer('pending', 1, { done: false }, 0);
    cache.offer('done', 2, { done: true }, 0);
    expect(cache.get('done', 99)).toEqual({ done: true });
    expect(cache.get('done', 100)).toBeUndefined();
    expect(cache.get('pending', 9_999)).toEqual({ done: false });
    expect(cache.get('pending', 10_000)).toBeUndefined();
    expect(cache.size).toBe(0);
  });
});
