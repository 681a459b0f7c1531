/**
 * At most `n` tasks at once, shared fairly between parties (the accounts of a control plane): the
 * waiting tasks form one queue per party and a free slot goes to the waiting party with the fewest
 * tasks running, and among those to the one served longest ago (round robin). One party flooding
 * the quote endpoint therefore waits behind its own requests, not in front of everybody else's.
 */
export type FairLimiter = (party: string, task: () => Promise<void>) => Promise<void>;

interface Waiting {
  start: () => void;
}

export function fairLimiter(n: number): FairLimiter {
  const running = new Map<string, number>();
  const waiting = new Map<string, Waiting[]>();
  /** When each party (running or waiting) last got a slot; -1: not yet. */
  const lastServed = new Map<string, number>();
  let active = 0;
  let starts = 0;

  const pickNext = (): { party: string; next: Waiting } | undefined => {
    let best: { party: string; next: Waiting; load: number; served: number } | undefined;
    for (const [party, queue] of waiting) {
      const load = running.get(party) ?? 0;
      const served = lastServed.get(party) ?? -1;
      if (best === undefined || load < best.load || (load === best.load && served < best.served))
        best = { party, next: queue[0]!, load, served };
    }
    return best;
  };

  const start = (party: string): void => {
    running.set(party, (running.get(party) ?? 0) + 1);
    lastServed.set(party, starts++);
  };

  const release = (party: string): void => {
    const left = (running.get(party) ?? 1) - 1;
    if (left > 0) running.set(party, left);
    else {
      running.delete(party);
      if (!waiting.has(party)) lastServed.delete(party); // a party with nothing left is forgotten: the maps stay bounded
    }
    const chosen = pickNext();
    if (chosen === undefined) {
      active -= 1;
      return;
    }
    // The slot passes straight to the chosen task, so an arrival in between cannot take it too.
    start(chosen.party);
    const queue = waiting.get(chosen.party)!;
    queue.shift();
    if (queue.length === 0) waiting.delete(chosen.party);
    chosen.next.start();
  };

  return async (party, task) => {
    if (active >= n) {
      await new Promise<void>((resolve) => {
        const queue = waiting.get(party) ?? [];
        queue.push({ start: resolve });
        waiting.set(party, queue);
      });
    } else {
      active += 1;
      start(party);
    }
    try {
      await task();
    } finally {
      release(party);
    }
  };
}
