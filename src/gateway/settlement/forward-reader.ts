/**
 * A stream read forward, each message once, when it is older than a grace: how the reconcilers
 * (debit-reconciler.ts, event-reconciler.ts) look again at what a consumer should have handled.
 * nats-server 2.10 can skip a replicated consumer's redelivery after a leader change
 * (nats-io/nats-server#6566, docs/operations.md "Network partitions"), so a message a consumer
 * failed once may never come back; reading the stream itself does not depend on the consumer.
 * Reading starts at the stream's end when the gateway started: what was stored before is the
 * consumers', and a restart does not re-read a stream's whole history.
 */
import type { StoredMsg } from '@nats-io/jetstream';
import type { Logger } from 'pino';
import { serialInterval } from './serial-interval.js';

export interface ForwardRead {
  /** The first message at or after `seq` that the reader is about, or null past the end. */
  next(seq: number): Promise<StoredMsg | null>;
  /** Handles one message older than the grace; true when it had to repair something. */
  handle(msg: StoredMsg, nowMs: number): Promise<boolean>;
}

/** One pass from `fromSeq` over messages stored before `nowMs - graceMs`; where the next pass starts and how many were repaired. */
export async function readForwardOnce(
  r: ForwardRead,
  fromSeq: number,
  nowMs: number,
  graceMs: number,
): Promise<{ nextSeq: number; repaired: number }> {
  let seq = fromSeq;
  let repaired = 0;
  for (;;) {
    const msg = await r.next(seq);
    if (msg === null || msg.time.getTime() > nowMs - graceMs) break;
    if (await r.handle(msg, nowMs)) repaired += 1;
    seq = msg.seq + 1;
  }
  return { nextSeq: seq, repaired };
}

export interface ForwardReader extends ForwardRead {
  /** The stream's last sequence now (reading starts after it). */
  lastSeq(): Promise<number>;
  graceMs: number;
  intervalMs: number;
  /** What is read, for the log ("the ledger for debits without a task"). */
  what: string;
  logger: Pick<Logger, 'warn'>;
}

export function startForwardReader(r: ForwardReader): { stop(): Promise<void> } {
  let from: number | undefined;
  const pass = async () => {
    try {
      from ??= (await r.lastSeq()) + 1;
      from = (await readForwardOnce(r, from, Date.now(), r.graceMs)).nextSeq;
    } catch (err) {
      r.logger.warn({ err }, `Reading ${r.what} failed; retried at the next interval`);
    }
  };
  // The first pass at once: it fixes where reading starts, the stream's end when the gateway started.
  return serialInterval(pass, r.intervalMs, { now: true });
}
