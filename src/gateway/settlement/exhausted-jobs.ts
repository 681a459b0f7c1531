/**
 * Jobs that exhaust their deliveries (a worker killed again and again, heartbeats lost for longer
 * than the ack wait each time) are not lost silently: the server's max-deliveries advisory is
 * captured in a stream (protocol/streams.ts), and the control plane, which wrote the job and may
 * read the queue, turns each into the task's failure with its refund, then removes the job from
 * the work queue. Workers may not read the queue by sequence (a host taken over would read queued
 * jobs and claim them first: docs/operations.md, "A worker host taken over").
 *
 * One settlement: when the host that settles the task (protocol/claims.ts) published its terminal
 * event, that event settles it (the events consumer); otherwise settle() fails and refunds it once,
 * as the pending expiry does, and a claimer's event arriving later is counted as already settled.
 */
import type { JetStreamManager } from '@nats-io/jetstream';
import type { Logger } from 'pino';
import { z } from 'zod';
import { JobError } from '../../errors.js';
import { KIND_FAILURE_CODE, type JobKind } from '../../jobs/index.js';
import {
  EVENTS_SUBJECT_PREFIX,
  bodyCredits,
  bodyField,
  creationTime,
  failedEvent,
  kindOfJobSubject,
  readTaskId,
  settlingHost,
  taskLease,
} from '../../protocol/index.js';
import type { GatewayService } from '../service.js';

const advisorySchema = z.object({
  stream: z.string(),
  consumer: z.string(),
  stream_seq: z.number().int().positive(),
  deliveries: z.number().int().nonnegative(),
});

export interface ExhaustedJobDeps {
  jsm: JetStreamManager;
  jobsStream: string;
  eventsStream: string;
  claimsStream: string;
  service: Pick<GatewayService, 'settle'>;
  logger: Logger;
}

export type ExhaustedOutcome =
  'not ours' | 'gone' | 'unreadable' | 'settled by its event' | 'failed' | 'already settled';

/** The failure of a job whose every delivery was lost (worker killed, heartbeats stopped). */
export function deliveriesExhaustedError(kind: JobKind | undefined, deliveries: number): JobError {
  const code = kind === undefined ? 'INTERNAL_ERROR' : KIND_FAILURE_CODE[kind];
  return new JobError(code, `No worker finished the job in ${deliveries} deliveries`, { retryable: true });
}

/** Handles one captured advisory; throws (for a retry) only when NATS could not be read or written. */
export async function settleExhaustedJob(deps: ExhaustedJobDeps, payload: unknown): Promise<ExhaustedOutcome> {
  const parsed = advisorySchema.safeParse(payload);
  // Another stream's advisory (the stream captures only the jobs stream's: a malformed one) changes nothing.
  if (!parsed.success || parsed.data.stream !== deps.jobsStream) return 'not ours';
  const advisory = parsed.data;
  const log = deps.logger.child({
    advisory: { consumer: advisory.consumer, seq: advisory.stream_seq, deliveries: advisory.deliveries },
  });
  const stored = await deps.jsm.streams.getMessage(deps.jobsStream, { seq: advisory.stream_seq });
  if (stored === null) {
    log.info('Job of a max-deliveries advisory is already gone from the stream');
    return 'gone';
  }
  const reading = readTaskId(stored.header, stored.data);
  let outcome: ExhaustedOutcome = 'unreadable';
  if (!reading.ok) {
    log.error(
      { reason: reading.reason },
      'Job that exhausted its deliveries has no readable task id: removed without a settlement',
    );
  } else {
    const taskId = reading.id;
    const first = settlingHost(await taskLease(deps.jsm, deps.claimsStream, taskId));
    const own =
      first === null
        ? null
        : await deps.jsm.streams.getMessage(deps.eventsStream, {
            last_by_subj: `${EVENTS_SUBJECT_PREFIX}.${first}.${taskId}`,
          });
    if (own !== null) {
      outcome = 'settled by its event';
      log.info(
        { taskId, claimedBy: first },
        'Job exhausted its deliveries but the host that settles it published its event',
      );
    } else {
      const body = reading.body;
      const event = failedEvent(
        taskId,
        bodyField(body, 'model'),
        deliveriesExhaustedError(kindOfJobSubject(stored.subject), advisory.deliveries),
        bodyCredits(body),
        {
          createdAt: creationTime(bodyField(body, 'createdAt'), stored.time),
          startedAt: null,
          finishedAt: new Date(),
          attempt: advisory.deliveries,
          worker: 'gateway',
        },
      );
      const settled = await deps.service.settle(event, log.child({ taskId }));
      outcome = settled === 'completed' ? 'already settled' : settled;
      log.warn({ taskId, claimedBy: first, settled }, 'Job exhausted its deliveries: task failed and refunded');
    }
  }
  // The consumer will not deliver it again; without this it would sit in the work queue forever.
  await deps.jsm.streams.deleteMessage(deps.jobsStream, advisory.stream_seq, false).catch((err: unknown) => {
    // Removed meanwhile (another gateway handled a redelivery of the advisory): nothing left to do.
    log.warn({ err }, 'Could not remove the exhausted job from the stream');
  });
  return outcome;
}
