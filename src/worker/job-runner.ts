/**
 * One delivery of one job, from the message to its ack. The order is what makes billing safe:
 *
 *   read the task id ─► claim ─► the settling host's event already there? ─yes─► ack (no work)
 *                              │no
 *                        another host's claim holds? ─yes─► nak(until its lease lapses), unrun
 *                              │no
 *                        validate ─fail─► settle mark ─► failure event ─► term
 *                              │
 *                        run (heartbeats renew the claim, watchdog, progress)
 *                              │
 *        completed ─► settle mark ─► event ─► ack      permanent failure ─► settle mark ─► failure event ─► term
 *        transient failure ─► nak(delay)          drain ran out of grace ─► nak(0)
 *        claim lost (lapsed, taken over) ─► nothing published, the delivery left alone
 *
 * A job is acked or terminated only after its event is stored; a worker killed in between leaves
 * the job to redelivery, which finds the event and acks without work. The settle mark is stored
 * only while this host's claim holds (protocol/claims.ts), so a host whose lease lapsed and was
 * taken over never publishes a second settlement. This function never throws.
 */
import type { JsMsg } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import { JobError } from '../errors.js';
import {
  asJobError,
  checkJobEnvelope,
  KIND_FAILURE_CODE,
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
  settlingHost,
  type ClaimOp,
  type ClaimResult,
  type EventTiming,
  type TerminalEvent,
} from '../protocol/index.js';
import type { RunFacts, RunningTasks } from './cancel.js';
import type { EventPublisher, PublishResult } from './event-publisher.js';
import type { JobOutcome, WorkerMetrics } from './metrics.js';
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
  | 'heartbeatMs'
  | 'maxDeliver'
  | 'nakDelaysMs'
  | 'watchdogMs'
  | 'progressIntervalMs'
  | 'maxQueueAgeMs'
  | 'upscaleResultLifetimeDays'
  | 'publishDeadlineMs'
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
  /** Stores this host's claim entry (claim, renew or settle) and returns the task's lease after it (protocol/claims.ts). */
  claim(taskId: string, op?: ClaimOp): Promise<ClaimResult>;
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
    const attributes = {
      'media.task.id': taskId,
      'media.kind': kind,
      'media.attempt': attempt,
      'messaging.system': 'nats',
      'messaging.destination.name': msg.subject,
      ...(typeof model === 'string' ? { 'media.model': model } : {}),
    };
    await withParentFrom(
      (name) => msg.headers?.get(name),
      () =>
        withSpan(`job ${kind}`, { kind: 'consumer', attributes }, () =>
          runTask(rt, { msg, kind, taskId, reading, log }),
        ),
    );
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
  const timing = (startedAt: Date | null) => ({
    createdAt,
    startedAt,
    finishedAt: new Date(),
    attempt,
    worker: rt.workerName,
  });

  // Registered before the lookup: a cancel that lands between the lookup and the start still stops it,
  // and its event tells this delivery's facts (cancel.ts).
  const controller = new AbortController();
  const facts: RunFacts = { model: bodyField(reading.body, 'model'), credits, createdAt, attempt, startedAt: null };
  const unregister = rt.running.add(taskId, controller, facts);
  try {
    // Claimed before anything runs: only the event of the host whose claim holds settles the task.
    let lease: ClaimResult;
    let existing: TerminalEvent | null;
    try {
      // Retried here, not left to a redelivery: a claim stored whose answer was lost in an election
      // left its job unrun for good when nats-server 2.10 skipped the redelivery (chaos:partitions).
      const retry = {
        nc: rt.nc,
        deadlineMs: rt.settings.publishDeadlineMs,
        signal: rt.drainSignal,
        onRetry: (err: unknown, n: number, waitMs: number) =>
          log.warn({ err, retry: n, waitMs }, 'Could not claim the task; retrying'),
      };
      lease = await withHeartbeat(
        msg,
        rt.settings.heartbeatMs,
        retryInPlace(retry, () => rt.claim(taskId)),
      );
      reachKillPoint('claimed');
      // The settling host's event only: another host's (a compromised one's) must not make the
      // holder drop the job unrun.
      const settler = settlingHost(lease);
      existing =
        settler === null ? null : await withHeartbeat(msg, rt.settings.heartbeatMs, rt.events.find(taskId, settler));
    } catch (err) {
      log.error({ err }, 'Could not claim the task or look up its terminal event; leaving the job to redelivery');
      rt.metrics.recordJob(kind, 'unpublished');
      return;
    }
    if (existing !== null) {
      log.info(
        { status: existing.status, host: lease.holder },
        'Terminal event already published: acking this delivery without running the job',
      );
      await acknowledge(rt, msg, log);
      rt.metrics.recordJob(kind, 'duplicate');
      return;
    }
    if (lease.holder !== rt.hostId) {
      // Its event from here would not be believed: another host's claim holds the task. Handed back,
      // not acked: a live lease is waited out (the next delivery takes the task over if it lapsed
      // meanwhile); a settled task or a claim without a lease (protocol 2.0) gets the transient-retry
      // delays, and the last delivery's advisory or the control plane's expiry settles it otherwise
      // (docs/protocol.md, "Who settles a task").
      const delayMs = handBackDelayMs(lease, attempt, rt.settings.nakDelaysMs);
      const live = lease.expiresAtMs !== null;
      log.warn(
        {
          claimedBy: lease.holder,
          generation: lease.generation,
          leaseExpiresAt: live ? new Date(lease.expiresAtMs ?? 0).toISOString() : undefined,
          delayMs,
        },
        live
          ? "Task is held by another host's live lease: handing this delivery back until it lapses"
          : 'Task was claimed by another host for good: handing this delivery back without running the job',
      );
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
    log.warn(
      { waitedMs, code: error.code },
      'Job waited too long in the queue: publishing a failure event and terminating it',
    );
    const event = failedEvent(taskId, bodyField(reading.body, 'model'), error, credits, timing(null));
    rt.metrics.recordJob(kind, jobOutcome(await publishAndSettle(rt, msg, event, 'term', log), 'failed'));
    return;
  }

  let job: Job;
  try {
    job = validate(reading, taskId, kind, msg.subject, msg.headers?.get(PROTOCOL_HEADER));
  } catch (err) {
    const error = asJobError(err, kind);
    log.warn({ code: error.code, err: error }, 'Invalid job: publishing a failure event and terminating it');
    const event = failedEvent(taskId, bodyField(reading.body, 'model'), error, credits, timing(null));
    rt.metrics.recordJob(kind, jobOutcome(await publishAndSettle(rt, msg, event, 'term', log), 'failed'));
    return;
  }

  const startedAt = new Date();
  facts.startedAt = startedAt;
  rt.metrics.inFlight.inc({ kind });
  const run = runExecutor(rt, job, msg, kind, taskId, attempt, log, controller);
  try {
    const outcome = await run.outcome;
    const seconds = (Date.now() - startedAt.getTime()) / 1000;

    if (run.leaseLost()) {
      // Taken over: the task is another host's now. Its delivery is that host's too, so it is
      // neither acked nor handed back; what this run stored stays (a results volume may be shared
      // with the new holder, whose files have the same names): the sweeper removes it at expiry.
      await run.settled(log, STOPPED_EXECUTOR_WAIT_MS);
      rt.metrics.recordJob(kind, 'lease-lost', seconds);
      return;
    }

    if (outcome.type === 'completed') {
      reachKillPoint('ran');
      const expiresAt = new Date(startedAt.getTime() + resultLifetimeMs(kind, rt.settings.upscaleResultLifetimeDays));
      const event = completedEvent(taskId, job.model, outcome.output, timing(startedAt), expiresAt);
      const published = await publishAndSettle(rt, msg, event, 'ack', log);
      // Another event of this host came first (a cancel settled it meanwhile): the result goes.
      if (published === 'already-published') await discardUnlessCompleted(rt, taskId, log);
      if (published === 'published' || published === 'already-published')
        log.info({ creditsUsed: outcome.output.creditsUsed, seconds }, 'Job completed');
      rt.metrics.recordJob(kind, jobOutcome(published, 'completed'), seconds);
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
      log.warn(
        { code: disposition.error.code, err: disposition.error, delayMs: disposition.delayMs },
        'Transient failure: retrying later',
      );
      msg.nak(disposition.delayMs);
      await flush(rt);
      rt.metrics.recordJob(kind, 'retried', seconds);
      return;
    }
    log.warn(
      { code: disposition.error.code, err: disposition.error },
      'Job failed: publishing a failure event and terminating it',
    );
    const event = failedEvent(taskId, job.model, disposition.error, credits, timing(startedAt));
    rt.metrics.recordJob(kind, jobOutcome(await publishAndSettle(rt, msg, event, 'term', log), 'failed'), seconds);
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

/** Past the end of a lease, so that the next delivery's claim is stored after it lapsed. */
const LEASE_MARGIN_MS = 1_000;

/**
 * Pure: how long a delivery another host's claim holds is handed back for. A live lease: until it
 * lapses (server times on both sides, so no host's clock counts), then the next delivery takes the
 * task over unless the holder renewed. A settled task or a 2.0 claim: the transient-retry schedule.
 */
export function handBackDelayMs(
  lease: Pick<ClaimResult, 'expiresAtMs' | 'atMs'>,
  attempt: number,
  nakDelaysMs: readonly number[],
): number {
  if (lease.expiresAtMs === null) return claimedElsewhereDelayMs(attempt, nakDelaysMs);
  return Math.max(0, lease.expiresAtMs - lease.atMs) + LEASE_MARGIN_MS;
}

function validate(
  reading: { source: 'header' | 'body'; body: unknown },
  taskId: string,
  kind: JobKind,
  subject: string,
  protocol: string | undefined,
): Job {
  const mismatch = protocolMismatch(protocol);
  if (mismatch !== null) throw new JobError('INVALID_JOB', mismatch);
  if (reading.body === undefined) {
    throw new JobError('INVALID_JOB', expectedText('job', 'a JSON object', 'bytes that are not UTF-8 JSON'));
  }
  checkJobEnvelope(reading.body);
  const job = parseJob(reading.body);
  if (reading.source === 'header' && job.id !== undefined && job.id !== taskId) {
    throw new JobError(
      'INVALID_JOB',
      expectedValue('id', `absent or ${JSON.stringify(taskId)} (the ${MSG_ID_HEADER} header)`, job.id),
    );
  }
  if (kindOfModel(job.model) !== kind) {
    throw new JobError(
      'INVALID_JOB',
      expectedValue('model', `a ${kind} model (the job was published on ${subject})`, job.model),
    );
  }
  return job;
}

type ExecutionOutcome =
  { type: 'completed'; output: JobOutput } | { type: 'failed'; error: JobError } | { type: 'interrupted' };

interface Execution {
  outcome: Promise<ExecutionOutcome>;
  /** The job's heartbeat and the claim's renewals. */
  heartbeat: Heartbeat;
  /** Another host took the task over (a renewal said so): the run was stopped and must publish nothing. */
  leaseLost(): boolean;
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
  // Why the job was stopped, if it was: decided here, where the stop is, and read back by fromStop.
  let stopped: StopReason | undefined;
  const stop = (reason: StopReason): void => {
    if (stopped !== undefined || controller.signal.aborted) return;
    stopped = reason;
    controller.abort(reason.why === 'drain' ? rt.drainSignal.reason : reason.error);
  };
  let lost = false;
  const onLeaseLost = (): void => {
    lost = true;
    stop({
      why: 'cancel',
      error: new JobError(KIND_FAILURE_CODE[kind], 'Another host took the task over: its claim lapsed here', {
        retryable: true,
      }),
    });
  };
  const jobHeartbeat = startHeartbeat(msg, rt.settings.heartbeatMs);
  const renewals = startRenewals(rt, taskId, log, onLeaseLost);
  const heartbeat: Heartbeat = {
    stop: () => {
      jobHeartbeat.stop();
      renewals.stop();
    },
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

  const aborted = new Promise<'aborted'>((resolve) =>
    controller.signal.addEventListener('abort', () => resolve('aborted'), { once: true }),
  );
  const fromStop = (): ExecutionOutcome => {
    // A stop decided here (deadline, drain) is recorded; the run's controller is aborted from
    // elsewhere only by a cancellation (cancel.ts, RunningTasks.abort), always with its CANCELLED JobError.
    const reason: StopReason = stopped ?? { why: 'cancel', error: controller.signal.reason as JobError };
    return reason.why === 'drain' ? { type: 'interrupted' } : { type: 'failed', error: reason.error };
  };
  const outcome = Promise.race([
    execution.then(
      (output): ExecutionOutcome => ({ type: 'completed', output }),
      (err: unknown): ExecutionOutcome =>
        controller.signal.aborted ? fromStop() : { type: 'failed', error: asJobError(err, kind) },
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
    leaseLost: () => lost,
    done,
    async settled(log, waitMs) {
      if (executorDone) return;
      const settledInTime = await Promise.race([done.then(() => true), sleep(waitMs).then(() => false)]);
      if (!settledInTime && waitMs >= ABORTED_EXECUTOR_GRACE_MS)
        log.error({ graceMs: waitMs }, 'Executor did not return after being aborted; freeing its slot anyway');
    },
  };
}

/**
 * Marks the settlement in the task's claims, publishes the terminal event, then acks or terminates
 * the job; says whether this event or an earlier one of this host was stored. Null when the mark or
 * the event could not be stored: the job is then neither acked nor terminated, and comes back after
 * the ack wait (heartbeats stop), which is safe. `lease-lost` when the mark was refused (this
 * host's claim lapsed and another host took the task over): nothing is published, the delivery is
 * left alone (it is the new holder's).
 */
async function publishAndSettle(
  rt: Runtime,
  msg: JsMsg,
  event: TerminalEvent,
  settlement: Settlement,
  log: Logger,
): Promise<PublishResult | 'lease-lost' | null> {
  let mark: ClaimResult;
  try {
    const retry = {
      nc: rt.nc,
      deadlineMs: rt.settings.publishDeadlineMs,
      onRetry: (err: unknown, n: number, waitMs: number) =>
        log.warn({ err, retry: n, waitMs }, 'Could not mark the settlement; retrying'),
    };
    mark = await withHeartbeat(
      msg,
      rt.settings.heartbeatMs,
      retryInPlace(retry, () => rt.claim(event.id, 'settle')),
    );
  } catch (err) {
    log.error(
      { err, status: event.status },
      'Could not mark the settlement of the task; leaving the job to redelivery',
    );
    return null;
  }
  if (!(mark.settled && mark.holder === rt.hostId)) {
    log.warn(
      { security: 'lease-lost', claimedBy: mark.holder, generation: mark.generation, status: event.status },
      "This host's claim of the task lapsed and another host took it over: not publishing its event",
    );
    return 'lease-lost';
  }
  let result;
  try {
    const attributes = {
      'media.event.status': event.status,
      ...(event.error === undefined ? {} : { 'media.error.code': event.error.code }),
    };
    result = await withSpan('event publish', { kind: 'producer', attributes }, () =>
      withHeartbeat(msg, rt.settings.heartbeatMs, rt.events.publish(event)),
    );
  } catch (err) {
    log.error({ err, status: event.status }, 'Could not publish the terminal event; leaving the job to redelivery');
    return null;
  }
  reachKillPoint('published');
  if (result === 'already-published') {
    log.warn(
      { status: event.status },
      'This task already had its terminal event (another delivery won); not publishing a second one',
    );
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

/** Pure: the delivery's outcome from what publishAndSettle said. */
function jobOutcome(published: PublishResult | 'lease-lost' | null, settled: 'completed' | 'failed'): JobOutcome {
  return published === null ? 'unpublished' : published === 'lease-lost' ? 'lease-lost' : settled;
}

/**
 * Renews this host's claim with the job's heartbeat, one renewal at a time. A renewal that finds
 * another host holding the task calls onLost once and stops; one NATS does not answer is logged and
 * tried again at the next beat (cut off longer than the lease, the task may be taken over: the
 * settle mark then refuses this host's event).
 */
function startRenewals(rt: Runtime, taskId: string, log: Logger, onLost: () => void): Heartbeat {
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const beat = async (): Promise<void> => {
    try {
      const lease = await rt.claim(taskId, 'renew');
      if (lease.holder !== rt.hostId) {
        log.warn(
          { claimedBy: lease.holder, generation: lease.generation },
          "This host's claim lapsed and another host took the task over: stopping its run",
        );
        stopped = true;
        onLost();
      }
    } catch (err) {
      log.warn({ err }, 'Could not renew the claim of the task; trying again at the next heartbeat');
    }
    if (!stopped) timer = setTimeout(() => void beat(), rt.settings.heartbeatMs);
  };
  timer = setTimeout(() => void beat(), rt.settings.heartbeatMs);
  return {
    stop: () => {
      stopped = true;
      clearTimeout(timer);
    },
  };
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
async function refuseInvalidTaskId(
  rt: Runtime,
  msg: JsMsg,
  kind: JobKind,
  claimed: string,
  reason: string,
  body: unknown,
): Promise<void> {
  const log = rt.logger.child({ claimedTaskId: claimed.slice(0, 256), kind, attempt: msg.info.deliveryCount });
  const error = new JobError(
    'INVALID_JOB',
    `Expected a task id of 1 to 128 characters of A-Z, a-z, 0-9, "_" or "-": ${reason}`,
  );
  const subject = invalidTaskIdSubject(rt.hostId, claimed);
  const event = failedEvent(claimed, bodyField(body, 'model'), error, bodyCredits(body), {
    createdAt: creationTime(bodyField(body, 'createdAt'), msg.time),
    startedAt: null,
    finishedAt: new Date(),
    attempt: msg.info.deliveryCount,
    worker: rt.workerName,
  });
  log.error(
    { subject, seq: msg.info.streamSequence },
    'Job whose id is not a task id: publishing its failure event and terminating it',
  );
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
