/**
 * A bounded map of store values, each with the stream sequence it was read or heard at. A value
 * replaces the cached one only when its sequence is higher, so a watch message and a direct read
 * arriving in either order leave the newest. Bounded three ways: at most `maxEntries` (the least
 * recently used leave first), no entry older than `maxAgeMs` (re-read after that, so even a missed
 * update cannot last), and whatever `expired` says of a value (a finished task leaves sooner).
 *
 * A read from the store that began before a removal may carry a value older than one the removal
 * dropped; `fill` takes the epoch seen when the read began and stores nothing if any entry was
 * removed since (the answer is still right: the read was made after the request arrived).
 */
export interface CacheBounds<V> {
  maxEntries: number;
  maxAgeMs: number;
  /** Whether a value cached at `cachedAtMs` has outlived its own, shorter, lifetime. */
  expired?: (value: V, cachedAtMs: number, nowMs: number) => boolean;
}

interface Entry<V> {
  seq: number;
  value: V;
  atMs: number;
}

export class VersionedCache<V> {
  private readonly entries = new Map<string, Entry<V>>();
  private removals = 0;

  constructor(private readonly bounds: CacheBounds<V>) {}

  /** Counts removals (eviction, expiry, clear): see `fill`. */
  get epoch(): number {
    return this.removals;
  }

  get size(): number {
    return this.entries.size;
  }

  get(key: string, nowMs: number): V | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    if (nowMs - entry.atMs >= this.bounds.maxAgeMs || this.bounds.expired?.(entry.value, entry.atMs, nowMs) === true) {
      this.remove(key);
      return undefined;
    }
    return entry.value;
  }

  /** A value heard from the store's stream (a watch, this gateway's own write): kept if newer. */
  offer(key: string, seq: number, value: V, nowMs: number): void {
    const existing = this.entries.get(key);
    if (existing !== undefined && existing.seq >= seq) return;
    this.entries.delete(key); // re-inserted last: the map's order is the eviction order
    this.entries.set(key, { seq, value, atMs: nowMs });
    while (this.entries.size > this.bounds.maxEntries) this.remove(this.entries.keys().next().value as string);
  }

  /** A value read from the store by a request that began at `epoch`; the newest cached value is returned. */
  fill(key: string, seq: number, value: V, epoch: number, nowMs: number): V {
    if (epoch === this.removals) this.offer(key, seq, value, nowMs);
    const cached = this.entries.get(key);
    return cached !== undefined && cached.seq > seq ? cached.value : value;
  }

  /** Forgets everything: the watch that kept the values current was interrupted. */
  clear(): void {
    if (this.entries.size === 0) return;
    this.entries.clear();
    this.removals += 1;
  }

  private remove(key: string): void {
    this.entries.delete(key);
    this.removals += 1;
  }
}
