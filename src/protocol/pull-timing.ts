/**
 * How a long-lived `consume()` of a JetStream consumer keeps pulling when the consumer's leader
 * moves (a node that rejoins after a partition forces elections; a node restarts or is upgraded).
 * Pull requests wait on the leader only: the new leader knows none of them, and the client learns
 * nothing but a 409 that `consume()` answers by waiting for two missed idle heartbeats before it
 * pulls again. With the client's defaults (pulls of 30 s, a heartbeat every 15 s) that wait was
 * 30-45 s, during which the gateway settled no task (npm run chaos:partitions: recoveries of 35-42 s
 * after an isolated leader node came back; test/scenarios/protocol/pull-leader-change.test.ts).
 */
import type { ConsumeMessages } from '@nats-io/jetstream';

/** The server's idle heartbeat on an open pull: two missed and the client pulls again. */
export const PULL_HEARTBEAT_MS = 1000;
/** One pull's lifetime; also the client's wait between two failed checks of the consumer (during an election). */
export const PULL_EXPIRES_MS = 5000;

/** `consume()` options for a consumer that must keep being served across leader changes. */
export function consumeOptions(maxMessages: number): ConsumeMessages {
  return { max_messages: maxMessages, expires: PULL_EXPIRES_MS, idle_heartbeat: PULL_HEARTBEAT_MS };
}
