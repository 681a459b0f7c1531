/**
 * Cancellation (docs/protocol.md, "Cancellation"). A control plane requests `media.cancel` with a
 * task id; one worker answers by publishing the task's terminal event itself (`failed`, code
 * CANCELLED, refund). The events stream keeps one event per task, so that publish decides
 * everything at once:
 *   - stored: the task is cancelled. A queued copy, when a worker pulls it, finds the event and is
 *     acked without running; a running one is stopped by the broadcast on `media.abort.<id>`, which
 *     every worker hears (its own event is then refused as a second one, and it terminates the job);
 *   - refused: the task already ended (completed, failed or cancelled before): nothing changes.
 */
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import type { JobError } from '../errors.js';
import {
  ABORT_SUBJECT_PREFIX,
  abortSubject,
  cancelledError,
  creationTime,
  failedEvent,
  protocolHeaders,
  type CancelReply,
  type CancelRequest,
  type TerminalEvent,
} from '../protocol/index.js';
import type { EventPublisher } from './event-publisher.js';

export interface CancelRuntime {
  nc: NatsConnection;
  events: EventPublisher;
  workerName: string;
  logger: Logger;
}

/** Publishes the cancel event (or finds the event that won) and stops any run of the task. Throws only when NATS fails. */
export async function cancelTask(rt: CancelRuntime, request: CancelRequest): Promise<CancelReply> {
  const now = new Date();
  const event = failedEvent(request.id, request.model, cancelledError(request.reason), request.credits, {
    createdAt: creationTime(request.createdAt, now),
    startedAt: null,
    finishedAt: now,
    attempt: 0,
    worker: rt.workerName,
  });
  const result = await rt.events.publish(event);
  if (result === 'published') {
    rt.nc.publish(abortSubject(request.id), JSON.stringify({ id: request.id }), { headers: protocolHeaders() });
    await rt.nc.flush();
    rt.logger.info({ taskId: request.id }, 'Task cancelled: event published, running copies told to stop');
    return { id: request.id, cancelled: true, status: 'failed', code: 'CANCELLED' };
  }
  const existing: TerminalEvent | null = await rt.events.find(request.id);
  rt.logger.info({ taskId: request.id, status: existing?.status }, 'Cancel of a task that had already ended: nothing changes');
  return {
    id: request.id,
    cancelled: false,
    status: existing?.status ?? 'failed',
    ...(existing?.error === undefined ? {} : { code: existing.error.code }),
  };
}

/**
 * Runs of tasks in this process, each with the controller that stops it. A task id may have more
 * than one (a redelivery waiting for an earlier run), so each run registers its own.
 */
export class RunningTasks {
  readonly #runs = new Map<string, Set<AbortController>>();

  /** Registers a run; returns the function that forgets it. */
  add(taskId: string, controller: AbortController): () => void {
    let set = this.#runs.get(taskId);
    if (set === undefined) {
      set = new Set();
      this.#runs.set(taskId, set);
    }
    set.add(controller);
    return () => {
      set.delete(controller);
      if (set.size === 0 && this.#runs.get(taskId) === set) this.#runs.delete(taskId);
    };
  }

  /** Aborts every run of the task with `reason`; returns how many there were. */
  abort(taskId: string, reason: JobError): number {
    const set = this.#runs.get(taskId);
    if (set === undefined) return 0;
    for (const controller of set) controller.abort(reason);
    return set.size;
  }
}

/** Every worker listens (no queue group): whichever runs the task stops it. */
export function listenForAborts(nc: NatsConnection, running: RunningTasks, logger: Logger): Subscription {
  return nc.subscribe(`${ABORT_SUBJECT_PREFIX}.*`, {
    callback: (err, msg) => {
      if (err) return;
      const taskId = msg.subject.slice(ABORT_SUBJECT_PREFIX.length + 1);
      const stopped = running.abort(taskId, cancelledError(undefined));
      if (stopped > 0) logger.info({ taskId, runs: stopped }, 'Stopping a cancelled task');
    },
  });
}
