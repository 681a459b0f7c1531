/**
 * The latest progress of running tasks, from the workers' `media.progress.<task id>` (core NATS,
 * best effort, docs/protocol.md). Every gateway subscribes (no queue group), so whichever one a
 * poll reaches knows it. Held in memory only, bounded, and dropped when a task settles: it is a
 * hint for the caller, never state. The same one subscription feeds the live task events
 * (task-events/hub.ts) through `onMessage`: no NATS subscription per open stream.
 */
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { PROGRESS_SUBJECT_PREFIX, progressMessageSchema, type ProgressMessage } from '../protocol/index.js';

/** What a poll of a pending task shows (its `progress`). */
export interface TaskProgress {
  stage: string;
  percent?: number;
  /** Seconds left in the stage at `at`, as the worker estimated them (protocol/progress.ts). */
  etaSeconds?: number;
  at: string;
}

const MAX_TRACKED = 10_000;

export interface ProgressBoard {
  get(taskId: string): TaskProgress | undefined;
  /** The whole latest message (the live events' first event of a new stream). */
  latest(taskId: string): ProgressMessage | undefined;
  forget(taskId: string): void;
  /** Called with every message heard, after it is recorded. */
  onMessage(listener: (message: ProgressMessage) => void): void;
  stop(): void;
}

export function watchProgress(nc: NatsConnection): ProgressBoard {
  const latest = new Map<string, ProgressMessage>();
  const listeners: ((message: ProgressMessage) => void)[] = [];
  const sub: Subscription = nc.subscribe(`${PROGRESS_SUBJECT_PREFIX}.>`, {
    callback: (err, msg) => {
      if (err) return;
      let parsed;
      try {
        parsed = progressMessageSchema.safeParse(msg.json());
      } catch {
        return;
      }
      if (!parsed.success) return;
      const message = parsed.data;
      latest.delete(message.id); // re-inserted last: the map's order is the eviction order
      latest.set(message.id, message);
      if (latest.size > MAX_TRACKED) latest.delete(latest.keys().next().value as string);
      for (const listener of listeners) listener(message);
    },
  });
  return {
    get(taskId) {
      const message = latest.get(taskId);
      if (message === undefined) return undefined;
      const { stage, percent, etaSeconds, at } = message;
      return {
        stage,
        ...(percent === undefined ? {} : { percent }),
        ...(etaSeconds === undefined ? {} : { etaSeconds }),
        at,
      };
    },
    latest: (taskId) => latest.get(taskId),
    forget: (taskId) => void latest.delete(taskId),
    onMessage: (listener) => void listeners.push(listener),
    stop: () => sub.unsubscribe(),
  };
}
