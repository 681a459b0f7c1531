/**
 * Cancellation (docs/protocol.md, "Cancellation"). A control plane requests `media.cancel` with a
 * task id; one worker answers. Only the host that claimed a task first can settle it
 * (protocol/claims.ts), so the answering host claims the task itself:
 *   - first claimer (the job is queued): it publishes the task's terminal event (`failed`, code
 *     CANCELLED, refund); a worker that pulls the job later finds the event, or the claim, and acks
 *     it without running;
 *   - another host claimed it (it is running there): `media.abort.<id>`, which every worker hears,
 *     stops that run, and that host publishes the CANCELLED event itself; the reply waits a moment
 *     for it;
 *   - the first claimer's event exists already: nothing changes.
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
import { sleep } from '../sleep.js';

export interface CancelRuntime {
  nc: NatsConnection;
  events: EventPublisher;
  workerName: string;
  logger: Logger;
  /** This host's WORKER_HOST_ID. */
  hostId: string;
  /** Records this host's claim; returns the first claimer (protocol/claims.ts). */
  claim(taskId: string): Promise<string>;
  /** How long to wait for the running host's own CANCELLED event before answering (default 5 s). */
  waitMs?: number;
}

const CANCEL_WAIT_MS = 5_000;
const CANCEL_POLL_MS = 200;

/** Cancels the task as its first claimer, or stops the run of the host that claimed it first. Throws only when NATS fails. */
export async function cancelTask(rt: CancelRuntime, request: CancelRequest): Promise<CancelReply> {
  const first = await rt.claim(request.id);
  const settled = await rt.events.find(request.id, first);
  if (settled !== null) return ended(rt, request.id, settled);
  const abort = async (): Promise<void> => {
    rt.nc.publish(abortSubject(request.id), JSON.stringify({ id: request.id }), { headers: protocolHeaders() });
    await rt.nc.flush();
  };
  if (first !== rt.hostId) {
    await abort();
    const deadline = Date.now() + (rt.waitMs ?? CANCEL_WAIT_MS);
    for (;;) {
      const event = await rt.events.find(request.id, first);
      if (event !== null) {
        const cancelled = event.error?.code === 'CANCELLED';
        rt.logger.info({ taskId: request.id, claimedBy: first, status: event.status }, cancelled ? 'Task cancelled by the host running it' : 'Task ended before the cancel reached it');
        return cancelled ? { id: request.id, cancelled: true, status: 'failed', code: 'CANCELLED' } : ended(rt, request.id, event);
      }
      if (Date.now() >= deadline) break;
      await sleep(CANCEL_POLL_MS);
    }
    // The host was told to stop; its event (CANCELLED, unless it finished at that very moment) follows.
    rt.logger.info({ taskId: request.id, claimedBy: first }, 'Task running on another host told to stop; its event follows');
    return { id: request.id, cancelled: true, status: 'failed', code: 'CANCELLED' };
  }
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
    await abort();
    rt.logger.info({ taskId: request.id }, 'Task cancelled: event published, running copies told to stop');
    return { id: request.id, cancelled: true, status: 'failed', code: 'CANCELLED' };
  }
  const existing = await rt.events.find(request.id, rt.hostId);
  return existing === null ? { id: request.id, cancelled: false, status: 'failed' } : ended(rt, request.id, existing);
}

function ended(rt: CancelRuntime, id: string, existing: TerminalEvent): CancelReply {
  rt.logger.info({ taskId: id, status: existing.status }, 'Cancel of a task that had already ended: nothing changes');
  return { id, cancelled: false, status: existing.status, ...(existing.error === undefined ? {} : { code: existing.error.code }) };
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
