/**
 * Every terminal event settles its task. The events consumer (consumers.ts) settles each event as
 * it is stored; one it failed to handle is nak'd for a redelivery, which nats-server 2.10 can skip
 * (forward-reader.ts): the worker's result then stood in the events stream while the task stayed
 * pending until the pending sweep expired and refunded it (chaos:partitions, docs/operations.md).
 * So each gateway also reads the events stream forward and hands an event older than the grace
 * whose task is still pending to the consumer's own step (settle-event.ts: the same origin check,
 * the same idempotent settle). Reads use the stream leader's get, which the gateway user may make.
 */
import type { MsgRequest } from '@nats-io/jetstream';
import type { Logger } from 'pino';
import { EVENTS_SUBJECT_PREFIX, hostAndTask } from '../../protocol/index.js';
import { readForwardOnce, startForwardReader, type ForwardRead } from './forward-reader.js';
import { settleEventMessage, type EventSettling } from './settle-event.js';
import type { Tasks } from '../store/tasks.js';

/** An event younger than this is left to the events consumer. */
export const EVENT_GRACE_MS = 30_000;
export const EVENT_RECONCILE_INTERVAL_MS = 10_000;

export interface EventReconcileDeps extends EventSettling {
  eventsStream: string;
  tasks: Pick<Tasks, 'owner' | 'get'>;
}

function eventsOf(deps: EventReconcileDeps): ForwardRead {
  return {
    // The server takes next_by_subj on the leader's get since 2.9; the client's type lacks it.
    next: (seq) =>
      deps.jsm.streams.getMessage(deps.eventsStream, {
        seq,
        next_by_subj: `${EVENTS_SUBJECT_PREFIX}.>`,
      } as unknown as MsgRequest),
    handle: async (msg) => {
      const taskId = hostAndTask(EVENTS_SUBJECT_PREFIX, msg.subject)?.taskId;
      if (taskId === undefined) return false;
      const accountId = await deps.tasks.owner(taskId);
      const task = accountId === null ? null : await deps.tasks.get(accountId, taskId);
      if (task?.value.status !== 'pending') return false;
      const result = await settleEventMessage(deps, {
        subject: msg.subject,
        seq: msg.seq,
        json: () => msg.json(),
        header: (name) => msg.header.get(name),
      });
      if (result !== 'completed' && result !== 'failed') return false;
      deps.logger.warn(
        { taskId, eventSeq: msg.seq, result },
        "A stored event had not settled its task after the events consumer's time; it was settled",
      );
      return true;
    },
  };
}

/** One pass from events sequence `fromSeq` over events older than `graceMs`. */
export async function reconcileEventsOnce(
  deps: EventReconcileDeps,
  fromSeq: number,
  nowMs: number,
  graceMs = EVENT_GRACE_MS,
): Promise<{ nextSeq: number; repaired: number }> {
  return readForwardOnce(eventsOf(deps), fromSeq, nowMs, graceMs);
}

export function startEventReconciler(
  deps: EventReconcileDeps & { logger: Pick<Logger, 'error' | 'warn' | 'child'> },
  o: { intervalMs?: number; graceMs?: number } = {},
): { stop(): Promise<void> } {
  return startForwardReader({
    ...eventsOf(deps),
    lastSeq: async () => (await deps.jsm.streams.info(deps.eventsStream)).state.last_seq,
    graceMs: o.graceMs ?? EVENT_GRACE_MS,
    intervalMs: o.intervalMs ?? EVENT_RECONCILE_INTERVAL_MS,
    what: 'the events for tasks they did not settle',
    logger: deps.logger,
  });
}
