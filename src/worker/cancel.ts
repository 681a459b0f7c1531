/**
 * Cancellation (docs/protocol.md, "Cancellation"). A control plane requests `media.cancel` with a
 * task id; one worker answers. Only the host whose claim holds a task can settle it
 * (protocol/claims.ts), so the answering host claims the task itself:
 *   - its claim holds (the job is queued, or its holder's lease lapsed): it marks the settlement and
 *     publishes the task's terminal event (`failed`, code CANCELLED, refund); a worker that pulls
 *     the job later finds the mark and the event, and acks it without running;
 *   - another host's claim holds (it is running there): `media.abort.<id>`, which every worker hears,
 *     stops that run, and that host publishes the CANCELLED event itself; the reply waits a moment
 *     for it;
 *   - this process or another of this host runs it (a host of several GPUs, a Deployment's pods):
 *     asked on `media.abort.<id>` with a reply subject, it stops the run, answers, removes what the
 *     run stored, and publishes the CANCELLED event itself (job-runner.ts): no result is served
 *     once the refund is final;
 *   - the settling host's event exists already: nothing changes.
 * The event says what is known of the task: a run in this process gives its delivery's attempt,
 * start and creation time (RunFacts); else the request's fields. A queued job is not read: workers
 * may not read the queue by sequence (docs/operations.md, "A worker host taken over").
 */
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import type { JobError } from '../errors.js';
import {
  ABORT_SUBJECT_PREFIX,
  abortSubject,
  cancelledError,
  failedEvent,
  protocolHeaders,
  settlingHost,
  timestamp,
  type ClaimOp,
  type ClaimResult,
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
  /** Stores this host's claim entry (claim, or settle) and returns the task's lease after it (protocol/claims.ts). */
  claim(taskId: string, op?: ClaimOp): Promise<ClaimResult>;
  /** How long to wait for the running host's own CANCELLED event before answering (default 5 s). */
  waitMs?: number;
  /** How long to wait for another process of this host to say it runs the task (default 0.5 s). */
  siblingAnswerMs?: number;
  /** What a run of the task in this process knows of it, if one runs (RunningTasks.facts). */
  runHere?(taskId: string): RunFacts | undefined;
  /** Removes what a run stored for the task (ResultStore.discard), before a cancel settles it here. */
  discardResults?(taskId: string): Promise<void>;
}

/** What one delivery of a task knows of it, for the event of a cancel that ends it. */
export interface RunFacts {
  model: unknown;
  credits: number | undefined;
  /** The job's `createdAt`, else when the stream stored it. */
  createdAt: Date;
  /** The delivery's number, as the server counts it. */
  attempt: number;
  /** When processing started; null until it does. */
  startedAt: Date | null;
}

const CANCEL_WAIT_MS = 5_000;
const CANCEL_POLL_MS = 200;
/** How long the first claimer waits for another process of its host to say it runs the task. */
const SIBLING_ANSWER_MS = 500;

/** Cancels the task as the holder of its claim, or stops the run of the host that holds it. Throws only when NATS fails. */
export async function cancelTask(rt: CancelRuntime, request: CancelRequest): Promise<CancelReply> {
  const lease = await rt.claim(request.id);
  const settler = settlingHost(lease);
  const settled = settler === null ? null : await rt.events.find(request.id, settler);
  if (settled !== null) return ended(rt, request.id, settled);
  const first = lease.holder ?? rt.hostId;
  const abort = async (): Promise<void> => {
    rt.nc.publish(abortSubject(request.id), abortBody(request), { headers: protocolHeaders() });
    await rt.nc.flush();
  };
  if (first !== rt.hostId) {
    await abort();
    const reply = await replyFromRunner(rt, request.id, first);
    if (reply !== null) return reply;
    // The host was told to stop; its event (CANCELLED, unless it finished at that very moment) follows.
    rt.logger.info(
      { taskId: request.id, claimedBy: first },
      'Task running on another host told to stop; its event follows',
    );
    return { id: request.id, cancelled: true, status: 'failed', code: 'CANCELLED' };
  }
  // This process or another of this host (one per GPU, pods of one Deployment) may run it: stopped,
  // the run removes what it stored, then publishes the CANCELLED event with its attempt and start,
  // so that no result is served once the refund is final.
  if (await stoppedBySibling(rt, request)) {
    const reply = await replyFromRunner(rt, request.id, first);
    if (reply !== null) return reply;
    rt.logger.warn(
      { taskId: request.id },
      'The process running the task stopped it but published no event in time: settling it here',
    );
    await rt.discardResults?.(request.id);
  }
  const mark = await rt.claim(request.id, 'settle');
  if (!(mark.settled && mark.holder === rt.hostId)) {
    // Taken over between the two entries (this host's lease lapsed): the holder's run answers for it.
    await abort();
    return (
      (await replyFromRunner(rt, request.id, mark.holder ?? first)) ?? {
        id: request.id,
        cancelled: true,
        status: 'failed',
        code: 'CANCELLED',
      }
    );
  }
  const event = await cancelEvent(rt, request);
  const result = await rt.events.publish(event);
  if (result === 'published') {
    await abort();
    rt.logger.info({ taskId: request.id }, 'Task cancelled: event published, running copies told to stop');
    return { id: request.id, cancelled: true, status: 'failed', code: 'CANCELLED' };
  }
  const existing = await rt.events.find(request.id, rt.hostId);
  return existing === null ? { id: request.id, cancelled: false, status: 'failed' } : ended(rt, request.id, existing);
}

/** The reply once the host running the task has published its event (up to waitMs), or null. */
async function replyFromRunner(rt: CancelRuntime, taskId: string, host: string): Promise<CancelReply | null> {
  const deadline = Date.now() + (rt.waitMs ?? CANCEL_WAIT_MS);
  for (;;) {
    const event = await rt.events.find(taskId, host);
    if (event !== null) {
      const cancelled = event.error?.code === 'CANCELLED';
      rt.logger.info(
        { taskId, claimedBy: host, status: event.status },
        cancelled ? 'Task cancelled by the process running it' : 'Task ended before the cancel reached it',
      );
      return cancelled
        ? { id: taskId, cancelled: true, status: 'failed', code: 'CANCELLED' }
        : ended(rt, taskId, event);
    }
    if (Date.now() >= deadline) return null;
    await sleep(CANCEL_POLL_MS);
  }
}

/**
 * Asks `media.abort.<task id>` with a reply subject: a worker that runs the task stops it and
 * answers (listenForAborts). True when one did within SIBLING_ANSWER_MS; a worker that predates
 * the answer is taken as not running it.
 */
async function stoppedBySibling(rt: CancelRuntime, request: CancelRequest): Promise<boolean> {
  try {
    await rt.nc.request(abortSubject(request.id), abortBody(request), {
      timeout: rt.siblingAnswerMs ?? SIBLING_ANSWER_MS,
      headers: protocolHeaders(),
    });
    return true;
  } catch (err) {
    if (noAnswer(err)) return false;
    throw err;
  }
}

/** `media.abort.<task id>`'s body: the task and the cancel's reason, which the running process's event says. */
function abortBody(request: CancelRequest): string {
  return JSON.stringify({ id: request.id, ...(request.reason === undefined ? {} : { reason: request.reason }) });
}

/** The reason an abort message carries, if it is one (bounded as a cancel request's). */
function abortReason(data: string): string | undefined {
  try {
    const reason = (JSON.parse(data) as { reason?: unknown }).reason;
    return typeof reason === 'string' && reason.length <= 500 ? reason : undefined;
  } catch {
    return undefined;
  }
}

/** A request that nobody answered (timeout, or no subscriber at all), as @nats-io/nats-core names it. */
function noAnswer(err: unknown): boolean {
  const e = err instanceof Error && err.name === 'RequestError' && err.cause instanceof Error ? err.cause : err;
  return e instanceof Error && (e.name === 'TimeoutError' || e.name.startsWith('NoResponders'));
}

/**
 * The CANCELLED event of a task no process of this host runs (or whose run published nothing in
 * time), published before it tells other hosts to stop (so that a run that starts meanwhile finds
 * it). A run here tells its attempt and start; else the task was never delivered (attempt 0,
 * startedAt null). The creation time is the run's or the request's, else the cancel's: the first
 * the protocol heard of the task.
 */
async function cancelEvent(rt: CancelRuntime, request: CancelRequest): Promise<TerminalEvent> {
  const run = rt.runHere?.(request.id);
  const now = new Date();
  return failedEvent(
    request.id,
    run?.model ?? request.model,
    cancelledError(request.reason),
    request.credits ?? run?.credits,
    {
      createdAt: run?.createdAt ?? timestamp(request.createdAt) ?? now,
      startedAt: run?.startedAt ?? null,
      finishedAt: now,
      attempt: run?.attempt ?? 0,
      worker: rt.workerName,
    },
  );
}

function ended(rt: CancelRuntime, id: string, existing: TerminalEvent): CancelReply {
  rt.logger.info({ taskId: id, status: existing.status }, 'Cancel of a task that had already ended: nothing changes');
  return {
    id,
    cancelled: false,
    status: existing.status,
    ...(existing.error === undefined ? {} : { code: existing.error.code }),
  };
}

/**
 * Runs of tasks in this process, each with the controller that stops it. A task id may have more
 * than one (a redelivery waiting for an earlier run), so each run registers its own.
 */
export class RunningTasks {
  readonly #runs = new Map<string, Map<AbortController, RunFacts>>();

  /** Registers a run and what it knows of its task; returns the function that forgets it. */
  add(taskId: string, controller: AbortController, facts: RunFacts): () => void {
    let runs = this.#runs.get(taskId);
    if (runs === undefined) {
      runs = new Map();
      this.#runs.set(taskId, runs);
    }
    runs.set(controller, facts);
    return () => {
      runs.delete(controller);
      if (runs.size === 0 && this.#runs.get(taskId) === runs) this.#runs.delete(taskId);
    };
  }

  /** The facts of the task's run that got furthest (processing, else the latest delivery); undefined when none runs here. */
  facts(taskId: string): RunFacts | undefined {
    const runs = [...(this.#runs.get(taskId)?.values() ?? [])];
    return runs.find((run) => run.startedAt !== null) ?? runs.at(-1);
  }

  /** Aborts every run of the task with `reason`; returns how many there were. */
  abort(taskId: string, reason: JobError): number {
    const runs = this.#runs.get(taskId);
    if (runs === undefined) return 0;
    for (const controller of runs.keys()) controller.abort(reason);
    return runs.size;
  }
}

/** Every worker listens (no queue group): whichever runs the task stops it. */
export function listenForAborts(nc: NatsConnection, running: RunningTasks, logger: Logger): Subscription {
  return nc.subscribe(`${ABORT_SUBJECT_PREFIX}.*`, {
    callback: (err, msg) => {
      if (err) return;
      const taskId = msg.subject.slice(ABORT_SUBJECT_PREFIX.length + 1);
      const stopped = running.abort(taskId, cancelledError(abortReason(msg.string())));
      if (stopped === 0) return;
      logger.info({ taskId, runs: stopped }, 'Stopping a cancelled task');
      // The cancelling process of this host waits for this: the event will come from here.
      if (msg.reply) msg.respond(JSON.stringify({ id: taskId, stopping: stopped }), { headers: protocolHeaders() });
    },
  });
}
