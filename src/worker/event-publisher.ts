/**
 * Publishes terminal events on `media.events.<this host>.<task>` so that each task gets at most one
 * from this host, whatever is retried or raced (the host that claimed the task first is the one a
 * control plane believes, protocol/claims.ts):
 * - the events stream keeps at most one message per subject and refuses new ones
 *   (`max_msgs_per_subject: 1` + `discard_new_per_subject`), so a second, different event of this
 *   host for the same task is refused with "maximum messages per subject exceeded";
 * - `Nats-Msg-Id: <id>:terminal` makes a retried publish inside the duplicate window a no-op.
 * Both answers mean "already published", which is what the caller needs to ack the job.
 */
import { JetStreamApiError, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import {
  type TerminalEvent,
  UnconfirmedPublishError,
  anyHostEventSubject,
  eventMsgId,
  eventSubject,
  protocolHeaders,
  retryInPlace,
  withTraceHeaders,
} from '../protocol/index.js';

/** JetStream API codes that mean "this task already has its event". */
const ALREADY_PUBLISHED_CODES = new Set([
  10077, // maximum messages per subject exceeded (discard new per subject)
  10071, // wrong last sequence (an expectation on the subject failed)
]);

export type PublishResult = 'published' | 'already-published';

export interface EventPublisherOptions {
  eventsStream: string;
  /** WORKER_HOST_ID: the subject token its NATS user may publish events under. */
  hostId: string;
  publishTimeoutMs: number;
  /** How long to keep retrying before giving up (the job is then left to redelivery). */
  publishDeadlineMs: number;
}

export class EventPublisher {
  constructor(
    private readonly nc: NatsConnection,
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    private readonly options: EventPublisherOptions,
    private readonly logger: Logger,
  ) {}

  /** `subject`: where it goes when the task id cannot be a subject token (task-id.ts, `invalidTaskIdSubject`). */
  async publish(event: TerminalEvent, subject?: string): Promise<PublishResult> {
    const payload = JSON.stringify(event);
    return this.retry(`publish the terminal event of ${event.id}`, async () => {
      try {
        const ack = await this.js.publish(subject ?? eventSubject(this.options.hostId, event.id), payload, {
          msgID: eventMsgId(event.id),
          // The event's span (job-runner.ts) travels on: the gateway's settling of the task descends from it.
          headers: withTraceHeaders(protocolHeaders()),
          timeout: this.options.publishTimeoutMs,
        });
        if (!ack.duplicate) return 'published';
        if (ack.seq > 0) return 'already-published';
        // A duplicate whose first copy is not stored yet (confirmed-ack.ts): the task has its
        // event only if one can be read; otherwise this is retried until one is stored.
        if (subject === undefined && (await this.find(event.id)) !== null) return 'already-published';
        throw new UnconfirmedPublishError(subject ?? eventSubject(this.options.hostId, event.id));
      } catch (err) {
        if (err instanceof JetStreamApiError && ALREADY_PUBLISHED_CODES.has(err.code)) return 'already-published';
        throw err;
      }
    });
  }

  /** A terminal event of the task from any host (`host`: from that one only), or null when it has none yet. */
  async find(taskId: string, host?: string): Promise<TerminalEvent | null> {
    const subject = host === undefined ? anyHostEventSubject(taskId) : eventSubject(host, taskId);
    const stored = await this.retry(`look up the terminal event of ${taskId}`, () =>
      this.jsm.streams.getMessage(this.options.eventsStream, { last_by_subj: subject }),
    );
    return stored === null ? null : stored.json<TerminalEvent>();
  }

  /** Retried in place until WORKER_PUBLISH_DEADLINE_MS (protocol/retry-in-place.ts). */
  private retry<T>(what: string, operation: () => Promise<T>): Promise<T> {
    return retryInPlace(
      {
        nc: this.nc,
        deadlineMs: this.options.publishDeadlineMs,
        onRetry: (err, attempt, waitMs) => this.logger.warn({ err, attempt, waitMs }, `Could not ${what}; retrying`),
      },
      operation,
    );
  }
}
