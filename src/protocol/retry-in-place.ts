/**
 * Retries a NATS operation in place until a deadline. Most failures are the server away for a
 * moment (timeouts, no responders while JetStream elects, a reconnect in progress), and giving up
 * early only trades a retry here for a redelivery, which nats-server 2.10 can skip after a leader
 * change (docs/operations.md, "Network partitions"). A closed connection, or `signal`, ends it.
 */
import type { NatsConnection } from '@nats-io/transport-node';
import { sleep } from '../sleep.js';

export interface RetryInPlace {
  nc: Pick<NatsConnection, 'isClosed'>;
  /** How long from the first attempt to keep trying. */
  deadlineMs: number;
  /** Told of each failure that is retried. */
  onRetry(err: unknown, attempt: number, waitMs: number): void;
  signal?: AbortSignal;
}

export async function retryInPlace<T>(o: RetryInPlace, operation: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + o.deadlineMs;
  for (let attempt = 1; ; attempt++) {
    try {
      return await operation();
    } catch (err) {
      if (o.nc.isClosed() || o.signal?.aborted === true || Date.now() >= deadline) throw err;
      const waitMs = Math.min(200 * 2 ** (attempt - 1), 2000, Math.max(0, deadline - Date.now()));
      o.onRetry(err, attempt, waitMs);
      await sleep(waitMs);
    }
  }
}
