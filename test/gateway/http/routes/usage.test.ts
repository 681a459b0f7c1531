/** GET /api/v1/usage's paging over a ledger (src/gateway/http/routes/usage.ts), on an in-memory ledger. */
import { describe, expect, it } from 'vitest';
import {
  USAGE_SCAN_LIMIT,
  usagePage,
  usageQuerySchema,
  type UsageSources,
} from '../../../../src/gateway/http/routes/usage.js';
import type { LedgerEntry } from '../../../../src/gateway/store/records.js';

/** `n` top-ups of 1 credit a minute apart from 2026-01-01, at sequences 1..n. */
function ledger(n: number): UsageSources & { reads: number } {
  const entries = Array.from({ length: n }, (_, i) => ({
    seq: i + 1,
    value: {
      type: 'topup',
      amount: 1,
      balance: i + 1,
      at: new Date(Date.UTC(2026, 0, 1) + i * 60_000).toISOString(),
    } satisfies LedgerEntry,
  }));
  const sources = {
    reads: 0,
    async entries(after: number, limit: number) {
      sources.reads += 1;
      return entries.filter((e) => e.seq > after).slice(0, limit);
    },
    async taskModel() {
      return undefined;
    },
  };
  return sources;
}

describe('usage pages', () => {
  it('a narrow range late in a long ledger is reached through short pages, each reading a bounded number of entries', async () => {
    const source = ledger(2500);
    const query = usageQuerySchema.parse({
      from: new Date(Date.UTC(2026, 0, 1) + 2400 * 60_000).toISOString(),
      limit: '100',
    });
    const first = await usagePage(query, source);
    expect(first).toEqual({ movements: [], nextCursor: `u${USAGE_SCAN_LIMIT}` });
    const second = await usagePage({ ...query, cursor: first.nextCursor! }, source);
    expect(second).toEqual({ movements: [], nextCursor: `u${2 * USAGE_SCAN_LIMIT}` });
    const third = await usagePage({ ...query, cursor: second.nextCursor! }, source);
    expect(third.movements).toHaveLength(100);
    expect(third.movements[0]).toMatchObject({ type: 'topup', credits: 1, balance: 2401 });
    expect(third.nextCursor).toBeNull();
  });

  it('a full page ends with a cursor; the last page with null; the movements add up to the last balance', async () => {
    const source = ledger(5);
    const first = await usagePage(usageQuerySchema.parse({ limit: '3' }), source);
    expect(first.nextCursor).toBe('u3');
    const rest = await usagePage(usageQuerySchema.parse({ limit: '3', cursor: 'u3' }), source);
    expect(rest.nextCursor).toBeNull();
    expect([...first.movements, ...rest.movements].reduce((s, m) => s + m.credits, 0)).toBe(5);
  });
});
