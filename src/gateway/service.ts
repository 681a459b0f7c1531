/**
 * The gateway's business logic over its store: submit (quote, debit, create the task, publish the
 * job), settle a terminal event (complete, or fail and refund once), and the outbox step that makes
 * a debit's task and job exist whatever crashed in between.
 *
 * Write order of a submission: (1) the debit, carrying the whole job, is appended to the ledger;
 * (2) the task is created; (3) the job is published with `Nats-Msg-Id: <task id>`. Steps 2 and 3
 * are idempotent and are run again by the outbox consumer for every debit, so a gateway that dies
 * after (1) loses nothing: another gateway (or itself, restarted) completes them. No job is
 * published except from a stored debit, so every job has a debit.
 */
import type { JetStreamClient } from '@nats-io/jetstream';
import type { Logger } from 'pino';
import { kindContract, kindOfModel, minimumCredits, type Job, type JobKind, type KindTool } from '../jobs/index.js';
import {
  type TerminalEvent,
  UnconfirmedPublishError,
  confirmedAck,
  jobSubject,
  withTraceHeaders,
} from '../protocol/index.js';
import { ApiError } from './errors.js';
import { estimateView } from './api-views.js';
import { newTaskId } from './ids.js';
import { isNatsUnavailable } from './nats-unavailable.js';
import type { CancelClient } from './worker-clients/cancel-client.js';
import type { QuoteClient } from './worker-clients/quote-client.js';
import type { QuoteGate } from './worker-clients/quote-gate.js';
import { checkQuote } from './worker-clients/quote-check.js';
import type { SecurityEventReporter } from './monitoring/security-events.js';
import type { ResultCheck } from './results/result-check.js';
import type { Ledger } from './store/ledger.js';
import type { Reservation } from './store/idempotency-keys.js';
import type { DebitEntry, SubmissionExtras, TaskRecord } from './store/records.js';
import type { Tasks } from './store/tasks.js';
import { WriteConflict } from './store/subject-store.js';
import { pollUrl, submissionView } from './api-views.js';
import type { GatewayMetrics } from './monitoring/metrics.js';
import { errorMessage } from '../errors.js';
import type { WebhookStore } from './webhooks/store.js';
import { sleep } from '../sleep.js';
import { noteOnSpan, storedTraceReader, traceToStore, withParentFrom, withSpan } from '../telemetry/index.js';

/** Where a submission came in, as what its accepted response adds: nothing (`generate`) or its tool's echo. */
export type Endpoint = 'generate' | KindTool<JobKind>['echo'];

/** Waits before each further write of a task record whose first write failed (about a leader election in all). */
const TASK_RECORD_RETRIES_MS = [0, 250, 1000, 2000];

export type SettleOutcome = 'completed' | 'failed' | 'already settled' | 'not ours';

export interface GatewayService {
  /** `signal`: aborted when the client has gone (its quote is abandoned). */
  /** `webhook`: where the task's webhook goes (webhooks/submission.ts), stored with the debit. */
  submit(
    accountId: string,
    job: Job,
    endpoint: Endpoint,
    log: Pick<Logger, 'info' | 'warn'>,
    signal?: AbortSignal,
    webhook?: Pick<SubmissionExtras, 'webhookUrl' | 'webhookDefault'>,
    /** An Idempotency-Key's reservation: the task id to use, and the ledger sequence after which its one debit is looked for. */
    once?: Reservation,
  ): Promise<Record<string, unknown>>;
  materialise(accountId: string, entry: DebitEntry, seq: number): Promise<void>;
  /** Publishes the debit's job under its message id; `duplicate` when the stream held a copy already (within its duplicate window). */
  publishJob(entry: DebitEntry): Promise<{ duplicate: boolean }>;
  /** `check`: what the event must pass before it counts (the result check, settlement/consumers.ts). */
  settle(event: TerminalEvent, log: Pick<Logger, 'info' | 'warn'>, check?: ResultCheck): Promise<SettleOutcome>;
  /** What the job would cost (POST /api/v1/estimate): the submission's quote and checks, nothing charged. */
  estimate(accountId: string, job: Job, signal?: AbortSignal): Promise<Record<string, unknown>>;
  /**
   * Cancels a pending task of the account through the protocol's cancel; the task as it stands
   * once the worker's CANCELLED event has settled it (refunded), or still pending when that event
   * was not seen within the wait. Another account's task is TASK_NOT_FOUND; a settled one TASK_NOT_PENDING.
   */
  cancel(accountId: string, taskId: string, log: Pick<Logger, 'info' | 'warn'>): Promise<TaskRecord>;
}

export interface ServiceDeps {
  js: JetStreamClient;
  ledger: Ledger;
  tasks: Tasks;
  quote: QuoteClient;
  quoteGate: QuoteGate;
  metrics: GatewayMetrics;
  security: SecurityEventReporter;
  cancel: CancelClient;
  /** Queues the webhook of each task settled (webhooks/store.ts); absent, none is sent. */
  webhooks?: Pick<WebhookStore, 'enqueue'>;
  /** How long a cancel waits for the worker's event to settle the task before answering (default 5 s). */
  cancelSettleWaitMs?: number;
}

/**
 * The ledger did not confirm a debit: rarely it was stored after all (the task then exists,
 * charged once). An Idempotency-Key's request that ends so keeps its key bound to its task.
 */
export class UnconfirmedDebit extends ApiError {}

/** The same answer for an unknown id and another account's task. */
export function taskNotFound(id: string): ApiError {
  return ApiError.of('TASK_NOT_FOUND', `Expected the id of one of your tasks but received ${JSON.stringify(id)}`);
}

function notPending(id: string, status: string): ApiError {
  return ApiError.of(
    'TASK_NOT_PENDING',
    `Expected a pending task to cancel but task ${id} is ${status}; nothing changed`,
  );
}

export function gatewayService(deps: ServiceDeps): GatewayService {
  const { js, ledger, tasks, quote, metrics } = deps;

  /**
   * The quote, only for an account that can pay the least such a job costs (nothing is fetched for
   * a balance that cannot pay anyway) and that has no more than its share of quotes in flight.
   */
  const fairQuote = async (accountId: string, job: Job, signal: AbortSignal | undefined) => {
    const least = minimumCredits(job);
    const balance = (await ledger.balance(accountId)) ?? 0;
    if (balance < least) throw insufficient(least, balance, ' (the least such a job costs; nothing was fetched)');
    const release = deps.quoteGate.enter(accountId);
    if (release === null) {
      throw ApiError.of(
        'TOO_MANY_QUOTES',
        'Expected fewer submissions of this account being priced at once; retry when one has been answered',
        { 'retry-after': '1' },
      );
    }
    let quoted;
    try {
      quoted = await quote(job, { party: accountId, ...(signal === undefined ? {} : { signal }) });
    } finally {
      release();
    }
    // The worker's price is a claim: it must be the price list's for the figures it reports.
    const verdict = checkQuote(job, quoted);
    if (!verdict.ok) {
      deps.security(
        'forged_quote',
        { accountId, model: job.model, creditsUsed: quoted.creditsUsed, reason: verdict.reason },
        `a worker's quote was refused: ${verdict.reason}`,
      );
      throw ApiError.of(
        'SERVICE_UNAVAILABLE',
        'The price of this submission could not be confirmed; nothing was charged. Try again later.',
        { 'retry-after': '5' },
      );
    }
    // What is shown and stored of the quote is what was checked, nothing the worker added.
    return { ...quoted, input: verdict.input };
  };

  const publishJob = (entry: DebitEntry): Promise<{ duplicate: boolean }> => {
    const subject = jobSubject(entry.kind, entry.job.model);
    // Whoever publishes (this request, or the outbox after a crash), the job's span descends from the submission's.
    const attributes = {
      'media.task.id': entry.taskId,
      'messaging.system': 'nats',
      'messaging.destination.name': subject,
    };
    return withParentFrom(storedTraceReader(entry.extras.trace), () =>
      withSpan('job publish', { kind: 'producer', attributes }, async (span) => {
        const h = withTraceHeaders();
        const ack = await js.publish(subject, JSON.stringify(entry.job), {
          msgID: entry.taskId,
          ...(h === undefined ? {} : { headers: h }),
        });
        // Unconfirmed, it throws: the outbox publishes again until NATS says where the job is stored.
        confirmedAck(ack, subject);
        // The request and the outbox both publish; the server keeps the first (the job span's parent).
        span.setAttributes({ 'media.duplicate': ack.duplicate });
        return { duplicate: ack.duplicate };
      }),
    );
  };

  const materialise = async (accountId: string, entry: DebitEntry, seq: number): Promise<void> => {
    const stored = await tasks.ensure(taskFromDebit(accountId, entry, seq), entry.debits);
    // A settled task's job ran already; publishing it again would only cost the worker a lookup.
    if (stored.value.status === 'pending') await publishJob(entry);
  };

  /** A stored debit's answer: its task created and its job published (or left to the outbox). */
  const accepted = async (
    accountId: string,
    entry: DebitEntry,
    seq: number,
    log: Pick<Logger, 'info' | 'warn'>,
  ): Promise<Record<string, unknown>> => {
    const taskId = entry.taskId;
    log.info({ taskId, model: entry.job.model, credits: entry.amount, balance: entry.balance }, 'Task accepted');
    try {
      await materialise(accountId, entry, seq);
    } catch (err) {
      // The debit is stored: the outbox consumer creates the task and publishes the job. Most
      // often it is doing so this very moment (its copy is the one NATS is still storing).
      if (err instanceof UnconfirmedPublishError) log.info({ taskId }, 'The outbox is publishing the job');
      else log.warn({ taskId, err }, 'Publishing the job failed; the outbox will');
      // The answer names the task, and the client reads it next (a poll, a cancel, perhaps through
      // another gateway): its record is written before the answer, not left to the outbox alone
      // (a cancel right after an answer given in a partition found no task: chaos:partitions).
      await taskStored(accountId, entry, seq, log);
    }
    return submissionView(taskFromDebit(accountId, entry, seq), entry.balance);
  };

  /** The task's record, written again a few times when the first write failed; the outbox remains if all fail. */
  const taskStored = async (
    accountId: string,
    entry: DebitEntry,
    seq: number,
    log: Pick<Logger, 'info' | 'warn'>,
  ): Promise<void> => {
    for (const wait of TASK_RECORD_RETRIES_MS) {
      await sleep(wait);
      try {
        await tasks.ensure(taskFromDebit(accountId, entry, seq), entry.debits);
        return;
      } catch (err) {
        log.warn({ taskId: entry.taskId, err }, 'Storing the task record failed');
      }
    }
  };

  /** The task once it is no longer pending, or as it is when `waitMs` has passed. */
  const settled = async (accountId: string, taskId: string, waitMs: number): Promise<TaskRecord | null> => {
    const deadline = Date.now() + waitMs;
    for (;;) {
      const current = await tasks.get(accountId, taskId);
      if (current === null || current.value.status !== 'pending' || Date.now() >= deadline)
        return current?.value ?? null;
      await sleep(100);
    }
  };

  return {
    materialise,
    publishJob,

    async estimate(accountId, job, signal) {
      const quoted = await fairQuote(accountId, job, signal);
      return estimateView(job, quoted, (await ledger.balance(accountId)) ?? 0);
    },

    async cancel(accountId, taskId, log) {
      const found = await tasks.get(accountId, taskId);
      if (found === null) throw taskNotFound(taskId);
      const task = found.value;
      if (task.status !== 'pending') throw notPending(task.id, task.status);
      const reply = await deps.cancel({
        id: task.id,
        model: task.model,
        credits: task.creditsUsed,
        createdAt: task.createdAt,
        reason: 'cancelled by its account over the API',
      });
      log.info({ taskId, cancelled: reply.cancelled, status: reply.status }, 'Cancel answered');
      // Either way a terminal event exists now; the events consumer settles (and refunds) from it.
      const after = (await settled(accountId, taskId, deps.cancelSettleWaitMs ?? 5000)) ?? task;
      if (!reply.cancelled) throw notPending(task.id, reply.status);
      return after;
    },

    async submit(accountId, job, endpoint, log, signal, webhook = {}, once) {
      // A retry of a submission whose debit is stored (its answer was lost) answers with that task,
      // without a quote: the balance may no longer cover a second one.
      const earlier = once === undefined ? null : await ledger.findDebit(accountId, once.taskId, once.ledgerSeq);
      if (earlier !== null) return accepted(accountId, earlier.value, earlier.seq, log);
      const quoted = await fairQuote(accountId, job, signal);
      const taskId = once?.taskId ?? newTaskId();
      const createdAt = new Date().toISOString();
      const kind = kindOfModel(job.model);
      noteOnSpan({
        'media.task.id': taskId,
        'media.kind': kind,
        'media.model': job.model,
        'media.credits': quoted.creditsUsed,
      });
      const trace = traceToStore();
      const extras: SubmissionExtras = {
        ...(trace === undefined ? {} : { trace }),
        ...(endpoint === 'poll-url-and-duration'
          ? { pollUrl: pollUrl(taskId), ...(quoted.duration === undefined ? {} : { duration: quoted.duration }) }
          : endpoint === 'input'
            ? { input: quoted.input }
            : {}),
        ...webhook,
      };
      const debit = await ledger
        .debit(
          accountId,
          {
            amount: quoted.creditsUsed,
            taskId,
            kind,
            job: {
              id: taskId,
              model: job.model,
              input: job.input as unknown as Record<string, unknown>,
              credits: quoted.creditsUsed,
              createdAt,
            },
            extras,
          },
          once?.ledgerSeq,
        )
        .catch((err: unknown) => {
          // Almost always nothing was stored. If the write landed and only its confirmation was lost,
          // the outbox still creates and runs the task: it shows in the history, charged once.
          log.warn({ taskId, err }, 'Storing the debit failed');
          if (isNatsUnavailable(err)) {
            throw new UnconfirmedDebit(
              'SERVICE_UNAVAILABLE',
              503,
              'The ledger (NATS) did not confirm the debit; try again later (with the same Idempotency-Key, safely). Rarely it was stored after all: the task then shows in GET /api/v1/tasks, charged once.',
            );
          }
          const message = `The job could not be started: the ledger did not confirm the debit (${errorMessage(err)})`;
          const code = kindContract(kind).failure.submit ?? 'SUBMIT_FAILED';
          throw new UnconfirmedDebit(code, 500, message);
        });
      if (!debit.ok) {
        throw insufficient(quoted.creditsUsed, debit.balance, '');
      }
      metrics.credits.inc({ direction: 'debited' }, debit.entry.amount);
      return accepted(accountId, debit.entry, debit.seq, log);
    },

    async settle(reported, log, check) {
      const accountId = await tasks.owner(reported.id);
      if (accountId === null) return 'not ours';
      for (;;) {
        const current = await tasks.get(accountId, reported.id);
        if (current === null) return 'not ours';
        const task = current.value;
        if (task.status !== 'pending') {
          // Settled before, perhaps by a gateway that died before queueing the webhook: queued now (once).
          await deps.webhooks?.enqueue(task);
          return 'already settled';
        }
        const event = check === undefined ? reported : await check(reported, task);
        let next: TaskRecord;
        if (event.status === 'completed') {
          next = {
            ...task,
            status: 'completed',
            result: event.result,
            ...(event.model === null ? {} : { reportedModel: event.model }),
            ...(event.mediaType === undefined ? {} : { mediaType: event.mediaType }),
            finishedAt: event.finishedAt,
          };
        } else {
          const code = event.error?.code ?? 'INTERNAL_ERROR';
          const wrote = await ledger.refundOnce(accountId, task.id, task.creditsUsed, task.debitSeq, code);
          if (wrote) {
            metrics.refunds.inc();
            metrics.credits.inc({ direction: 'refunded' }, task.creditsUsed);
          }
          log.info(
            { taskId: task.id, code, credits: task.creditsUsed, refundWritten: wrote },
            'Task failed; credits refunded',
          );
          next = {
            ...task,
            status: 'failed',
            error: { code, message: event.error?.message ?? 'The job failed' },
            creditsRefunded: task.creditsUsed,
            finishedAt: event.finishedAt,
          };
        }
        // Queued before the task is stored as settled (an outbox): whatever dies after this, the
        // delivery exists, and it waits for the task to be settled (webhooks/queue.ts). Settled
        // otherwise by another writer, that one queues its own in its place.
        await deps.webhooks?.enqueue(next);
        try {
          await tasks.replace(current, next);
          metrics.tasksSettled.inc({ kind: task.kind, status: next.status, code: next.error?.code ?? '' });
          return event.status;
        } catch (err) {
          if (!(err instanceof WriteConflict)) throw err;
        }
      }
    },
  };
}

function insufficient(price: number, balance: number, why: string): ApiError {
  return new ApiError(
    'INSUFFICIENT_CREDITS',
    402,
    `Expected a balance of at least ${price} credits${why} but received ${balance}`,
  );
}

export function taskFromDebit(accountId: string, entry: DebitEntry, seq: number): TaskRecord {
  return {
    id: entry.taskId,
    accountId,
    model: entry.job.model,
    kind: entry.kind,
    status: 'pending',
    creditsUsed: entry.amount,
    createdAt: entry.job.createdAt,
    debitSeq: seq,
    extras: entry.extras,
  };
}
