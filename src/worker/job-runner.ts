/**
 * One delivery of one job, from the message to its ack. The order is what makes billing safe:
 *
 *   read the task id ─► claim ─► the first claimer's event already there? ─yes─► ack (no work)
 *                              │no
 *                        first claimer another host? ─yes─► nak(retry delay), unrun
 *                              │no
 *                        validate ─fail─► failure event ─► term
 *                              │
 *                        run (heartbeats, watchdog, progress)
 *                              │
 *        completed ─► event ─► ack      permanent failure ─► failure event ─► term
 *        transient failure ─► nak(delay)          drain ran out of grace ─► nak(0)
 *
 * A job is acked or terminated only after its event is stored; a worker killed in between leaves
 * the job to redelivery, which finds the event and acks without work. This function never throws.
 */
import type { JsMsg } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import { JobError } from '../errors.js';
import {
  asJobError,
  checkJobEnvelope,
  deadlineError,
  expectedText,
  expectedValue,
  kindOfModel,
  parseJob,
  type Job,
  type JobKind,
  type StopReason,
} from '../jobs/index.js';
import {
  MSG_ID_HEADER,
  PROTOCOL_HEADER,
  bodyCredits,
  bodyField,
  completedEvent,
  creationTime,
  failedEvent,
  invalidTaskIdSubject,
  protocolMismatch,
  readTaskId,
  retryInPlace,
  type EventTiming,
  type TerminalEvent,
} from '../protocol/index.js';
import type { RunFacts, RunningTasks } from './cancel.js';
import type { EventPublisher, PublishResult } from './event-publisher.js';
import type { WorkerMetrics } from './metrics.js';
import { reachKillPoint } from './kill-point.js';
import { decideFailure } from './outcome.js';
import { createProgressPublisher } from './progress.js';
import { queueAgeError, queueAgeMs } from './queue-age.js';
import { resultLifetimeMs } from './results.js';
import { sleep } from '../sleep.js';
import { withParentFrom, withSpan } from '../telemetry/index.js';
import type { WorkerSettings } from './settings.js';
import type { JobExecutor, JobOutput } from './types.js';

/** How long an aborted executor may take to return before its slot is freed anyway. */
const ABORTED_EXECUTOR_GRACE_MS = 10_000;
/**
 * How long a stopped run's failure event (a cancel's refund, say) waits for the executor to return
 * and its results to be removed: within the 5 s a cancel waits for the running process's event.
 */
const STOPPED_EXECUTOR_WAIT_MS = 4_000;
const ACK_TIMEOUT_MS = 5_000;

export type RunnerSettings = Pick<
  WorkerSettings,
  'heartbeatMs' | 'maxDeliver' | 'nakDelaysMs' | 'watchdogMs' | 'progressIntervalMs' | 'maxQueueAgeMs' | 'upscaleResultLifetimeDays' | 'publishDeadlineMs'
>;

export interface Runtime {
  settings: RunnerSettings;
  nc: NatsConnection;
  events: EventPublisher;
  executor: JobExecutor;
  logger: Logger;
  metrics: WorkerMetrics;
  /** Connection name, reported as `worker` in events. */
  workerName: string;
  /**
   * Tasks running in this process. A redelivery of a task that is still running here (its ack
   * wait ran out while the server was away) waits for that run instead of starting a second one.
   */
  inFlight: Map<string, Promise<void>>;
  /** Aborted when a drain runs out of grace: running jobs are handed back to other workers. */
  drainSignal: AbortSignal;
  /** Runs of this process by task id, so that a cancel (cancel.ts) can stop them. */
  running: RunningTasks;
  /** This host's WORKER_HOST_ID. */
  hostId: string;
  /** Records this host's claim of a task; returns the host that claimed it first (protocol/claims.ts). */
  claim(taskId: string): Promise<string>;
  /** Removes what a run of the task stored (ResultStore.discard): a task that did not complete delivers nothing. */
  discardResults(taskId: string): Promise<void>;
}

type Settlement = 'ack' | 'term';

export async function handleJobMessage(rt: Runtime, msg: JsMsg, kind: JobKind): Promise<void> {
  const attempt = msg.info.deliveryCount;
  const reading = readTaskId(msg.headers, msg.data);
  if (!reading.ok) {
    if (reading.claimed !== undefined) {
      await refuseInvalidTaskId(rt, msg, kind, reading.claimed, reading.reason, reading.body);
      return;
    }
    rt.logger.error(
      { subject: msg.subject, seq: msg.info.streamSequence, attempt, reason: reading.reason },
      'Job without a readable task id: terminated without an event (there is no task to bill or refund)',
    );
    await terminate(rt, msg);
    rt.metrics.recordJob(kind, 'unidentified');
    return;
  }

  const taskId = reading.id;
  const model = bodyField(reading.body, 'model');
  const log = rt.logger.child({ taskId, model: typeof model === 'string' ? model : undefined, kind, attempt });

  const earlier = rt.inFlight.get(taskId);
  let release!: () => void;
  const mine = new Promise<void>((resolve) => (release = resolve));
  rt.inFlight.set(taskId, mine);
  try {
    if (earlier) {
      log.warn('Task is already running in this worker: waiting for it before deciding on this delivery');
      await withHeartbeat(msg, rt.settings.heartbeatMs, earlier);
    }
    // The job's span descends from the gateway's request through the message's traceparent (none or malformed: a trace of its own).
    const attributes = { 'media.task.id': taskId, 'media.kind': kind, 'media.attempt': attempt, 'messaging.system': 'nats', 'messaging.destination.name': msg.subject, ...(typeof model === 'string' ? { 'media.model': model } : {}) };
    await withParentFrom((name) => msg.headers?.get(name), () => withSpan(`job ${kind}`, { kind: 'consumer', attributes }, () => runTask(rt, { msg, kind, taskId, reading, log })));
  } catch (err) {
    // Only a bug gets here; the job is left to redelivery, which is safe.
    log.error({ err }, 'Unexpected error while handling a job; leaving it to redelivery');
  } finally {
    if (rt.inFlight.get(taskId) === mine) rt.inFlight.delete(taskId);
    release();
  }
}

/** One delivery of an identified task, as the steps below share it. */
interface Delivery {
  msg: JsMsg;
  kind: JobKind;
  taskId: string;
  reading: { source: 'header' | 'body'; body: unknown };
  log: Logger;
}

async function runTask(rt: Runtime, delivery: Delivery): Promise<void> {
  const { msg, kind, taskId, reading, log } = delivery;
  const attempt = msg.info.deliveryCount;
  const createdAt = creationTime(bodyField(reading.body, 'createdAt'), msg.time);
  const credits = bodyCredits(reading.body);
  const timing = (startedAt: Date | null) => ({ createdAt, startedAt, finishedAt: new Date(), attempt, worker: rt.workerName });

  // Registered before the lookup: a cancel that lands between the lookup and the start still stops it,
  // and its event tells this delivery's facts (cancel.ts).
  const controller = new AbortController();
  const facts: RunFacts = { model: bodyField(reading.body, 'model'), credits, createdAt, attempt, startedAt: null };
  const unregister = rt.running.add(taskId, controller, facts);
  try {
    // Claimed before anything runs: only the first claimer's event settles the task.
    let firstHost: string;
    let existing: TerminalEvent | null;
    try {
      // Retried here, not left to a redelivery: a claim stored whose answer was lost in an election
      // left its job unrun for good when nats-server 2.10 skipped the redelivery (chaos:partitions).
      const retry = { nc: rt.nc, deadlineMs: rt.settings.publishDeadlineMs, signal: rt.drainSignal, onRetry: (err: unknown, n: number, waitMs: number) => log.warn({ err, retry: n, waitMs }, 'Could not claim the task; retrying') };
      firstHost = await withHeartbeat(msg, rt.settings.heartbeatMs, retryInPlace(retry, () => rt.claim(taskId)));
      reachKillPoint('claimed');
      // The first claimer's event only: another host's (a compromised one's) must not make the
      // claimer's host drop the job unrun.
      existing = await withHeartbeat(msg, rt.settings.heartbeatMs, rt.events.find(taskId, firstHost));
    } catch (err) {
      log.error({ err }, 'Could not claim the task or look up its terminal event; leaving the job to redelivery');
      rt.metrics.recordJob(kind, 'unpublished');
      return;
    }
    if (existing !== null) {
      log.info({ status: existing.status, host: firstHost }, 'Terminal event already published: acking this delivery without running the job');
      await acknowledge(rt, msg, log);
      rt.metrics.recordJob(kind, 'duplicate');
      return;
    }
    if (firstHost !== rt.hostId) {
      // Its event from here would not be believed: the task is the first claimer's. Handed back, not
      // acked, so that the claimer's host (restarted, or a sibling process under the same
      // WORKER_HOST_ID) can still run it; the last delivery's advisory or the control plane's expiry
      // settles it otherwise (docs/protocol.md, "Who settles a task").
      const delayMs = claimedElsewhereDelayMs(attempt, rt.settings.nakDelaysMs);
      log.warn({ claimedBy: firstHost, delayMs }, 'Task was claimed first by another host: handing this delivery back without running the job');
      msg.nak(delayMs);
      await flush(rt);
      rt.metrics.recordJob(kind, 'claimed-elsewhere');
      return;
    }
    await decideTask(rt, delivery, controller, timing, facts);
  } finally {
    unregister();
  }
}

/** Queue age, validation, the run and its outcome: a delivery whose task has no event yet. */
async function decideTask(
  rt: Runtime,
  delivery: Delivery,
  controller: AbortController,
  timing: (startedAt: Date | null) => EventTiming,
  facts: RunFacts,
): Promise<void> {
  const { msg, kind, taskId, reading, log } = delivery;
  const credits = facts.credits;
  const attempt = msg.info.deliveryCount;
  const waitedMs = queueAgeMs(msg.time, new Date());
  if (waitedMs > rt.settings.maxQueueAgeMs[kind]) {
    const error = queueAgeError(kind, waitedMs, rt.settings.maxQueueAgeMs[kind]);
    log.warn({ waitedMs, code: error.code }, 'Job waited too long in the queue: publishing a failure event and terminating it');
    const event = failedEvent(taskId, bodyField(reading.body, 'model'), error, credits, timing(null));
    if (await publishAndSettle(rt, msg, event, 'term', log)) rt.metrics.recordJob(kind, 'failed');
    return;
  }

  let job: Job;
  try {
    job = validate(reading, taskId, kind, msg.subject, msg.headers?.get(PROTOCOL_HEADER));
  } catch (err) {
    const error = asJobError(err, kind);
    log.warn({ code: error.code, err: error }, 'Invalid job: publishing a failure event and terminating it');
    const event = failedEvent(taskId, bodyField(reading.body, 'model'), error, credits, timing(null));
    if (await publishAndSettle(rt, msg, event, 'term', log)) rt.metrics.recordJob(kind, 'failed');
    return;
  }

  const startedAt = new Date();
  facts.startedAt = startedAt;
  rt.metrics.inFlight.inc({ kind });
  const run = runExecutor(rt, job, msg, kind, taskId, attempt, log, controller);
  try {
    const outcome = await run.outcome;
    const seconds = (Date.now() - startedAt.getTime()) / 1000;

    if (outcome.type === 'completed') {
      reachKillPoint('ran');
      const expiresAt = new Date(startedAt.getTime() + resultLifetimeMs(kind, rt.settings.upscaleResultLifetimeDays));
      const event = completedEvent(taskId, job.model, outcome.output, timing(startedAt), expiresAt);
      const published = await publishAndSettle(rt, msg, event, 'ack', log);
      // Another event of this host came first (a cancel settled it meanwhile): the result goes.
      if (published === 'already-published') await discardUnlessCompleted(rt, taskId, log);
      if (published !== null) {
        log.info({ creditsUsed: outcome.output.creditsUsed, seconds }, 'Job completed');
        rt.metrics.recordJob(kind, 'completed', seconds);
      } else {
        rt.metrics.recordJob(kind, 'unpublished', seconds);
      }
      return;
    }

    // Not completed (failed, cancelled, past its deadline, handed back): what the run stored must go
    // before its event settles the task (a refund final while the picture is still served is the
    // customer's to keep), and again whenever an executor that ignored the stop returns later.
    await run.settled(log, STOPPED_EXECUTOR_WAIT_MS);
    await discardUnlessCompleted(rt, taskId, log);
    void run.done.then(() => discardUnlessCompleted(rt, taskId, log));

    if (outcome.type === 'interrupted') {
      log.warn('Drain grace period over: handing the job back to another worker');
      msg.nak();
      await flush(rt);
      rt.metrics.recordJob(kind, 'interrupted', seconds);
      return;
    }

    const disposition = decideFailure(outcome.error, attempt, rt.settings.maxDeliver, rt.settings.nakDelaysMs);
    if (disposition.action === 'retry') {
      log.warn({ code: disposition.error.code, err: disposition.error, delayMs: disposition.delayMs }, 'Transient failure: retrying later');
      msg.nak(disposition.delayMs);
      await flush(rt);
      rt.metrics.recordJob(kind, 'retried', seconds);
      return;
    }
    log.warn({ code: disposition.error.code, err: disposition.error }, 'Job failed: publishing a failure event and terminating it');
    const event = failedEvent(taskId, job.model, disposition.error, credits, timing(startedAt));
    rt.metrics.recordJob(kind, (await publishAndSettle(rt, msg, event, 'term', log)) ? 'failed' : 'unpublished', seconds);
  } finally {
    run.heartbeat.stop();
    await run.settled(log, ABORTED_EXECUTOR_GRACE_MS);
    rt.metrics.inFlight.dec({ kind });
  }
}

/**
 * Removes the task's results unless this host's event for it says completed (another process of
 * this host, sharing RESULTS_DIR, may have completed it). Never throws: the sweeper is the backstop.
 */
async function discardUnlessCompleted(rt: Runtime, taskId: string, log: Logger): Promise<void> {
  try {
    const own = await rt.events.find(taskId, rt.hostId);
    if (own?.status !== 'completed') await rt.discardResults(taskId);
  } catch (err) {
    log.warn({ err }, 'Could not remove the results of a task that did not complete');
  }
}

/** The transient-retry schedule (WORKER_NAK_DELAYS_MS): the claimer's host gets the same time to come back. */
export function claimedElsewhereDelayMs(attempt: number, nakDelaysMs: readonly number[]): number {
  return nakDelaysMs[Math.min(Math.max(attempt, 1), nakDelaysMs.length) - 1] ?? 0;
}

function validate(reading: { source: 'header' | 'body'; body: unknown }, taskId: string, kind: JobKind, subject: string, protocol: string | undefined): Job {
  const mismatch = protocolMismatch(protocol);
  if (mismatch !== null) throw new JobError('INVALID_JOB', mismatch);
  if (reading.body === undefined) {
    throw new JobError('INVALID_JOB', expectedText('job', 'a JSON object', 'bytes that are not UTF-8 JSON'));
  }
  checkJobEnvelope(reading.body);
  const job = parseJob(reading.body);
  if (reading.source === 'header' && job.id !== undefined && job.id !== taskId) {
    throw new JobError('INVALID_JOB', expectedValue('id', `absent or ${JSON.stringify(taskId)} (the ${MSG_ID_HEADER} header)`, job.id));
  }
  if (kindOfModel(job.model) !== kind) {
    throw new JobError('INVALID_JOB', expectedValue('model', `a ${kind} model (the job was published on ${subject})`, job.model));
  }
  return job;
}

type ExecutionOutcome =
  | { type: 'completed'; output: JobOutput }
  | { type: 'failed'; error: JobError }
  | { type: 'interrupted' };

interface Execution {
  outcome: Promise<ExecutionOutcome>;
  heartbeat: Heartbeat;
  /** Waits (up to `waitMs`) for the executor to return, so a slot is not reused while it still holds the GPU. */
  settled(log: Logger, waitMs: number): Promise<void>;
  /** Resolves when the executor has returned, however late. */
  done: Promise<void>;
}

function runExecutor(
  rt: Runtime,
  job: Job,
  msg: JsMsg,
  kind: JobKind,
  taskId: string,
  attempt: number,
  log: Logger,
  controller: AbortController,
): Execution {
  const heartbeat = startHeartbeat(msg, rt.settings.heartbeatMs);
  // Why the job was stopped, if it was: decided here, where the stop is, and read back by fromStop.
  let stopped: StopReason | undefined;
  const stop = (reason: StopReason): void => {
    if (stopped !== undefined || controller.signal.aborted) return;
    stopped = reason;
    controller.abort(reason.why === 'drain' ? rt.drainSignal.reason : reason.error);
  };
  const limitMs = rt.settings.watchdogMs[kind];
  const watchdog = setTimeout(() => stop({ why: 'deadline', error: deadlineError(kind, limitMs) }), limitMs);
  const onDrain = (): void => stop({ why: 'drain' });
  rt.drainSignal.addEventListener('abort', onDrain, { once: true });
  if (rt.drainSignal.aborted) onDrain();
  const progress = createProgressPublisher(rt.nc, taskId, job.model, rt.settings.progressIntervalMs);

  let executorDone = false;
  const execution = Promise.resolve()
    .then(() => {
      // Cancelled between the lookup and now: the job never starts.
      if (controller.signal.aborted) throw controller.signal.reason;
      return rt.executor(job, {
        taskId,
        kind,
        attempt,
        signal: controller.signal,
        logger: log,
        onProgress: (p) => progress.report(p),
      });
    })
    .finally(() => {
      executorDone = true;
    });

  const aborted = new Promise<'aborted'>((resolve) => controller.signal.addEventListener('abort', () => resolve('aborted'), { once: true }));
  const fromStop = (): ExecutionOutcome => {
    // A stop decided here (deadline, drain) is recorded; the run's controller is aborted from
    // elsewhere only by a cancellation (cancel.ts, RunningTasks.abort), always with its CANCELLED JobError.
    const reason: StopReason = stopped ?? { why: 'cancel', error: controller.signal.reason as JobError };
    return reason.why === 'drain' ? { type: 'interrupted' } : { type: 'failed', error: reason.error };
  };
  const outcome = Promise.race([
    execution.then(
      (output): ExecutionOutcome => ({ type: 'completed', output }),
      (err: unknown): ExecutionOutcome => (controller.signal.aborted ? fromStop() : { type: 'failed', error: asJobError(err, kind) }),
    ),
    aborted.then(fromStop),
  ]).finally(() => {
    clearTimeout(watchdog);
    rt.drainSignal.removeEventListener('abort', onDrain);
    progress.close();
  });

  const done = execution.then(
    () => undefined,
    () => undefined,
  );
  return {
    outcome,
    heartbeat,
    done,
    async settled(log, waitMs) {
      if (executorDone) return;
      const settledInTime = await Promise.race([done.then(() => true), sleep(waitMs).then(() => false)]);
      if (!settledInTime && waitMs >= ABORTED_EXECUTOR_GRACE_MS) log.error({ graceMs: waitMs }, 'Executor did not return after being aborted; freeing its slot anyway');
    },
  };
}

/**
 * Publishes the terminal event, then acks or terminates the job; says whether this event or an
 * earlier one of this host was stored. Null when the event could not be stored: the job is then
 * neither acked nor terminated, and comes back after the ack wait (heartbeats stop), which is safe.
 */
async function publishAndSettle(rt: Runtime, msg: JsMsg, event: TerminalEvent, settlement: Settlement, log: Logger): Promise<PublishResult | null> {
  let result;
  try {
    const attributes = { 'media.event.status': event.status, ...(event.error === undefined ? {} : { 'media.error.code': event.error.code }) };
    result = await withSpan('event publish', { kind: 'producer', attributes }, () => withHeartbeat(msg, rt.settings.heartbeatMs, rt.events.publish(event)));
  } catch (err) {
    log.error({ err, status: event.status }, 'Could not publish the terminal event; leaving the job to redelivery');
    return null;
  }
  reachKillPoint('published');
  if (result === 'already-published') {
    log.warn({ status: event.status }, 'This task already had its terminal event (another delivery won); not publishing a second one');
  } else {
    rt.metrics.events.inc({ status: event.status });
  }
  if (settlement === 'ack') await acknowledge(rt, msg, log);
  else await terminate(rt, msg);
  return result;
}

/** Ack with the server's confirmation: a drain that follows must not overtake it. */
async function acknowledge(rt: Runtime, msg: JsMsg, log: Logger): Promise<void> {
  try {
    const confirmed = await msg.ackAck({ timeout: ACK_TIMEOUT_MS });
    if (!confirmed) log.warn('Ack not confirmed; a redelivery will find the event and ack again');
  } catch (err) {
    log.warn({ err }, 'Ack not confirmed; a redelivery will find the event and ack again');
  }
}

/** Plain term(): a reason is ignored by servers before 2.10.4 (the message would come back). */
async function terminate(rt: Runtime, msg: JsMsg): Promise<void> {
  msg.term();
  await flush(rt);
}

async function flush(rt: Runtime): Promise<void> {
  await rt.nc.flush().catch(() => undefined);
}

interface Heartbeat {
  stop(): void;
}

function startHeartbeat(msg: JsMsg, intervalMs: number): Heartbeat {
  const timer = setInterval(() => {
    try {
      msg.working();
    } catch {
      // Disconnected: the client buffers or drops it; redelivery after the ack wait is the fallback.
    }
  }, intervalMs);
  return { stop: () => clearInterval(timer) };
}

/** Keeps the job owned while waiting on something slow (a lookup, a publish being retried). */
async function withHeartbeat<T>(msg: JsMsg, intervalMs: number, work: Promise<T>): Promise<T> {
  const heartbeat = startHeartbeat(msg, intervalMs);
  try {
    return await work;
  } finally {
    heartbeat.stop();
  }
}


/**
 * A job whose header or body names an id that is not a task id (`bad.id`): the control plane billed
 * that id, so it gets its failure event (INVALID_JOB, refund) on a subject made from the id's
 * hash, and the job is terminated. Left to redelivery when the event cannot be stored.
 */
async function refuseInvalidTaskId(rt: Runtime, msg: JsMsg, kind: JobKind, claimed: string, reason: string, body: unknown): Promise<void> {
  const log = rt.logger.child({ claimedTaskId: claimed.slice(0, 256), kind, attempt: msg.info.deliveryCount });
  const error = new JobError('INVALID_JOB', `Expected a task id of 1 to 128 characters of A-Z, a-z, 0-9, "_" or "-": ${reason}`);
  const subject = invalidTaskIdSubject(rt.hostId, claimed);
  const event = failedEvent(claimed, bodyField(body, 'model'), error, bodyCredits(body), {
    createdAt: creationTime(bodyField(body, 'createdAt'), msg.time),
    startedAt: null,
    finishedAt: new Date(),
    attempt: msg.info.deliveryCount,
    worker: rt.workerName,
  });
  log.error({ subject, seq: msg.info.streamSequence }, 'Job whose id is not a task id: publishing its failure event and terminating it');
  try {
    const result = await withHeartbeat(msg, rt.settings.heartbeatMs, rt.events.publish(event, subject));
    if (result === 'published') rt.metrics.events.inc({ status: 'failed' });
  } catch (err) {
    log.error({ err }, 'Could not publish the failure event; leaving the job to redelivery');
    rt.metrics.recordJob(kind, 'unpublished');
    return;
  }
  await terminate(rt, msg);
  rt.metrics.recordJob(kind, 'failed');
}
