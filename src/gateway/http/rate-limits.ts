/**
 * Request rate limits with @fastify/rate-limit (its store and window logic; the answer is ours):
 * one budget per client address, checked before anything else (so a storm of bad keys costs no
 * NATS lookup), and one per account, checked right after authentication (an account's keys share
 * it, so minting keys does not multiply it). Over budget: 429 RATE_LIMITED with Retry-After.
 *
 * The counters live in this gateway's memory: with N gateways behind a load balancer a client gets
 * up to N times the budget (docs/operations.md, "Limits").
 */
import fastifyRateLimit, { type FastifyRateLimitStore, type FastifyRateLimitStoreCtor } from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError } from '../errors.js';

const MAX_KEYS = 100_000;

/**
 * A fixed window per key, like the plugin's own LocalStore, but each answer is a copy of the
 * counter: the LocalStore hands out the live object, so a burst of requests that all increment
 * before any reads the result are all counted as the burst's last (40 at once against a limit of
 * 25: all 40 refused instead of 15).
 */
class SnapshotStore implements FastifyRateLimitStore {
  private readonly windows = new Map<string, { count: number; startMs: number }>();

  /** The plugin passes each limiter's window along (its types omit the last two arguments). */
  incr(
    key: string,
    callback: (error: Error | null, result?: { current: number; ttl: number }) => void,
    timeWindow?: number,
  ): void {
    const now = Date.now();
    const span = timeWindow ?? 60_000;
    let w = this.windows.get(key);
    if (w === undefined || w.startMs + span <= now) {
      w = { count: 0, startMs: now };
      this.windows.delete(key); // re-inserted last: the map's order is the eviction order
      this.windows.set(key, w);
      if (this.windows.size > MAX_KEYS) this.windows.delete(this.windows.keys().next().value as string);
    }
    w.count += 1;
    callback(null, { current: w.count, ttl: w.startMs + span - now });
  }

  child(): FastifyRateLimitStore {
    return new SnapshotStore();
  }
}

export interface RateLimitSettings {
  windowMs: number;
  perAddress: number;
  perAccount: number;
}

export type LimitHook = (req: FastifyRequest) => Promise<void>;

/** Registers the plugin on `app` (no route limited by itself) and returns the two checks. */
export async function rateLimits(
  app: FastifyInstance,
  s: RateLimitSettings,
): Promise<{ byAddress: LimitHook; byAccount: LimitHook }> {
  await app.register(fastifyRateLimit, {
    global: false,
    timeWindow: s.windowMs,
    store: SnapshotStore as unknown as FastifyRateLimitStoreCtor,
  });
  const check = (max: number, key: (req: FastifyRequest) => string, who: string): LimitHook => {
    const limiter = app.createRateLimit({ max, timeWindow: s.windowMs, keyGenerator: key });
    return async (req) => {
      const outcome = await limiter(req);
      if (outcome.isAllowed || !outcome.isExceeded) return;
      throw ApiError.of(
        'RATE_LIMITED',
        `Expected at most ${max} requests per ${s.windowMs / 1000} s from one ${who} but received more; retry in ${outcome.ttlInSeconds} s`,
        {
          'retry-after': String(outcome.ttlInSeconds),
        },
      );
    };
  };
  return {
    byAddress: check(s.perAddress, (req) => `ip:${req.ip}`, 'client address'),
    byAccount: check(s.perAccount, (req) => `acct:${req.accountId}`, 'account'),
  };
}
