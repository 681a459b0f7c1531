/**
 * At most `cap` quotes in flight per account on this gateway: a submission beyond it is refused at
 * once (429 TOO_MANY_QUOTES) instead of queueing, so one account cannot hold every worker's quote
 * slots with slow URLs. Per gateway: with several gateways an account may have `cap` on each, and
 * the worker's fair queue (src/worker/fair-queue.ts) still shares its slots between accounts.
 */
export interface QuoteGate {
  /** A release function when the account is under its cap, null when it is at it. */
  enter(accountId: string): (() => void) | null;
}

export function quoteGate(cap: number): QuoteGate {
  const inFlight = new Map<string, number>();
  return {
    enter(accountId) {
      const n = inFlight.get(accountId) ?? 0;
      if (n >= cap) return null;
      inFlight.set(accountId, n + 1);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        const left = (inFlight.get(accountId) ?? 1) - 1;
        if (left === 0) inFlight.delete(accountId);
        else inFlight.set(accountId, left);
      };
    },
  };
}
