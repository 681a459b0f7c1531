/**
 * Follows new messages of a store stream through an ordered consumer (the client re-creates it from
 * the last sequence seen after any gap, so nothing stored is skipped), and says whether it is
 * following right now: it counts as live while the server has been heard (a message or an idle
 * heartbeat) within LIVENESS_MS and the connection is up. The caches built on it are trusted only
 * while it is live; `onInterrupt` tells them to forget what they hold when it stops being so.
 */
import { DeliverPolicy, type JetStreamClient, type JsMsg } from '@nats-io/jetstream';
import { nuid, type NatsConnection } from '@nats-io/transport-node';
// Each pull lasts this long, and a watch whose consumer could not be checked (an election) tries again after it.
import { PULL_EXPIRES_MS } from '../../protocol/index.js';

/** The server sends a heartbeat this often while nothing else arrives (the client's minimum). */
const HEARTBEAT_MS = 500;
/** Three heartbeats missed: the watch may be behind, so nothing it fed is served. */
export const LIVENESS_MS = 3 * HEARTBEAT_MS;
/** An abandoned watch's consumer (its gateway died) is removed by the server after this (the client re-creates one with 5 min). */
const INACTIVE_THRESHOLD_MS = 60_000;

export interface StreamWatch {
  /** Whether the stream is being followed right now (see the module comment). */
  live(nowMs: number): boolean;
  stop(): Promise<void>;
}

export interface WatchOptions {
  stream: string;
  filter: string;
  onMessage(subject: string, seq: number, data: unknown): void;
  /** The watch may have missed messages (connection lost, heartbeats missed, consumer re-created). */
  onInterrupt(): void;
  onError(err: unknown): void;
}

export async function watchStream(
  nc: NatsConnection,
  js: JetStreamClient,
  options: WatchOptions,
): Promise<StreamWatch> {
  const consumer = await js.consumers.get(options.stream, {
    name_prefix: `view_${nuid.next()}`,
    filter_subjects: options.filter,
    deliver_policy: DeliverPolicy.New,
    inactive_threshold: INACTIVE_THRESHOLD_MS,
  });
  const messages = await consumer.consume({
    expires: PULL_EXPIRES_MS,
    idle_heartbeat: HEARTBEAT_MS,
    max_messages: 512,
  });
  let heardAtMs = Date.now();
  let connected = true;
  let wasLive = true;
  const interrupt = (): void => {
    heardAtMs = 0;
    wasLive = false;
    options.onInterrupt();
  };
  const live = (nowMs: number): boolean => {
    const now = connected && nowMs - heardAtMs < LIVENESS_MS;
    // A silent stall is noticed by the first request after it: what was cached may be behind.
    if (!now && wasLive) interrupt();
    wasLive = now;
    return now;
  };

  void (async () => {
    for await (const status of messages.status()) {
      if (status.type === 'heartbeat') heardAtMs = Date.now();
      else if (
        status.type === 'heartbeats_missed' ||
        status.type === 'reset' ||
        status.type === 'ordered_consumer_recreated'
      )
        interrupt();
    }
  })().catch(options.onError);
  void (async () => {
    for await (const status of nc.status()) {
      if (status.type === 'disconnect') {
        connected = false;
        interrupt();
      } else if (status.type === 'reconnect') connected = true;
    }
  })().catch(options.onError);
  const done = (async () => {
    for await (const msg of messages) {
      heardAtMs = Date.now();
      deliver(msg, options);
    }
  })().catch(options.onError);

  return {
    live,
    async stop() {
      await messages.close().catch(() => undefined);
      await done;
    },
  };
}

function deliver(msg: JsMsg, options: WatchOptions): void {
  let data: unknown;
  try {
    data = msg.json();
  } catch {
    return; // not JSON: no record of ours; the store's own readers refuse it too
  }
  options.onMessage(msg.subject, msg.seq, data);
}
