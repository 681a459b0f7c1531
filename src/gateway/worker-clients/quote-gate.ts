/**
 * At most `cap` quotes in flight per account on this gateway: a submission beyond it is refused at
 * once (429 TOO_MANY_QUOTES) instead of queueing, so one account cannot hold every worker's quote
 * slots with slow URLs. The deployment's cap is shared out between its gateways (perGatewayCap),
 * so it holds across them with no shared state to lose or to grant NATS permissions for; the
 * worker then holds each account to its share of its slots (src/worker/quote-service.ts).
 */
export interface QuoteGate {
  /** A release function when the account is under its cap, null when it is at it. */
  enter(accountId: string): (() => void) | null;
}

/**
 * This gateway's part of the deployment's per-account cap: the cap divided by the gateways, at
 * least 1 (with more gateways than the cap, the cap is effectively the number of gateways).
 */
export function perGatewayCap(deploymentCap: number, gateways: number): number {
  return Math.max(1, Math.floor(deploymentCap / gateways));
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
