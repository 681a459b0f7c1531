/**
 * At most `n` tasks at once, shared fairly between parties (the accounts of a control plane): the
 * waiting tasks form one queue per party and a free slot goes to the waiting party with the fewest
 * tasks running, oldest first among equals. One party flooding the quote endpoint therefore waits
 * behind its own requests, not in front of everybody else's.
 */
export type FairLimiter = (party: string, task: () => Promise<void>) => Promise<void>;

interface Waiting {
  enqueued: number;
  start: () => void;
}

export function fairLimiter(n: number): FairLimiter {
  const running = new Map<string, number>();
  const waiting = new Map<string, Waiting[]>();
  let active = 0;
  let arrivals = 0;

  const pickNext = (): { party: string; next: Waiting } | undefined => {
    let best: { party: string; next: Waiting; load: number } | undefined;
    for (const [party, queue] of waiting) {
      const next = queue[0]!;
      const load = running.get(party) ?? 0;
      if (best === undefined || load < best.load || (load === best.load && next.enqueued < best.next.enqueued)) best = { party, next, load };
    }
    return best;
  };

  const release = (party: string): void => {
    const left = (running.get(party) ?? 1) - 1;
    if (left === 0) running.delete(party);
    else running.set(party, left);
    const chosen = pickNext();
    if (chosen === undefined) {
      active -= 1;
      return;
    }
    // The slot passes straight to the chosen task, so an arrival in between cannot take it too.
    running.set(chosen.party, (running.get(chosen.party) ?? 0) + 1);
    const queue = waiting.get(chosen.party)!;
    queue.shift();
    if (queue.length === 0) waiting.delete(chosen.party);
    chosen.next.start();
  };

  return async (party, task) => {
    if (active >= n) {
      await new Promise<void>((resolve) => {
        const queue = waiting.get(party) ?? [];
        queue.push({ enqueued: arrivals++, start: resolve });
        waiting.set(party, queue);
      });
    } else {
      active += 1;
      running.set(party, (running.get(party) ?? 0) + 1);
    }
    try {
      await task();
    } finally {
      release(party);
    }
  };
}
