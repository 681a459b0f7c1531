/**
 * Jobs that exhaust their deliveries (a worker killed again and again, heartbeats lost for longer
 * than the ack wait each time) are not lost silently: the server's max-deliveries advisory is
 * captured in a stream (topology.ts), and one worker turns each into the task's failure event
 * (when it can claim the task first), then removes the job from the work queue.
 */
import type { JetStreamManager, JsMsg } from '@nats-io/jetstream';
import type { Logger } from 'pino';
import { z } from 'zod';
import { creationTime, failedEvent, kindOfJobSubject, bodyCredits, bodyField, messageJson, readTaskId } from '../protocol/index.js';
import type { EventPublisher } from './event-publisher.js';
import type { WorkerMetrics } from './metrics.js';
import { deliveriesExhaustedError } from './outcome.js';

const advisorySchema = z.object({
  stream: z.string(),
  consumer: z.string(),
  stream_seq: z.number().int().positive(),
  deliveries: z.number().int().nonnegative(),
});

const RETRY_LATER_MS = 5_000;

export interface AdvisoryRuntime {
  jsm: JetStreamManager;
  events: EventPublisher;
  logger: Logger;
  metrics: WorkerMetrics;
  jobsStream: string;
  consumerPrefix: string;
  workerName: string;
  /** This host's WORKER_HOST_ID. */
  hostId: string;
  /** Records this host's claim; returns the first claimer (protocol/claims.ts). */
  claim(taskId: string): Promise<string>;
}

export async function handleAdvisory(rt: AdvisoryRuntime, msg: JsMsg): Promise<void> {
  const parsed = advisorySchema.safeParse(messageJson(msg));
  if (!parsed.success || parsed.data.stream !== rt.jobsStream || !parsed.data.consumer.startsWith(`${rt.consumerPrefix}-`)) {
    // Not about our jobs (another application's consumer on the same stream): nothing to do.
    msg.ack();
    return;
  }
  const advisory = parsed.data;
  const log = rt.logger.child({ advisory: { consumer: advisory.consumer, seq: advisory.stream_seq, deliveries: advisory.deliveries } });
  try {
    const stored = await rt.jsm.streams.getMessage(rt.jobsStream, { seq: advisory.stream_seq });
    if (stored === null) {
      log.info('Job of a max-deliveries advisory is already gone from the stream');
      await msg.ackAck();
      return;
    }
    const reading = readTaskId(stored.header, stored.data);
    if (!reading.ok) {
      log.error({ reason: reading.reason }, 'Job that exhausted its deliveries has no readable task id: removed without an event');
    } else {
      const taskLog = log.child({ taskId: reading.id });
      const body = reading.body;
      // Only the first claimer settles: a task nobody claimed becomes this host's; one another host
      // claimed (and lost) is left to the control plane's expiry of pending tasks.
      const first = await rt.claim(reading.id);
      const existing = await rt.events.find(reading.id, first);
      if (existing === null && first !== rt.hostId) {
        taskLog.warn({ claimedBy: first }, 'Job exhausted its deliveries; the host that claimed it first published no event: left to the control plane (docs/protocol.md)');
      } else if (existing === null) {
        const event = failedEvent(
          reading.id,
          bodyField(body, 'model'),
          deliveriesExhaustedError(kindOfJobSubject(stored.subject), advisory.deliveries),
          bodyCredits(body),
          {
            createdAt: creationTime(bodyField(body, 'createdAt'), stored.time),
            startedAt: null,
            finishedAt: new Date(),
            attempt: advisory.deliveries,
            worker: rt.workerName,
          },
        );
        const result = await rt.events.publish(event);
        taskLog.warn({ result }, 'Job exhausted its deliveries: failure event published');
        if (result === 'published') rt.metrics.events.inc({ status: 'failed' });
      } else {
        taskLog.info({ status: existing.status }, 'Job exhausted its deliveries but its terminal event exists');
      }
    }
    // The consumer will not deliver it again; without this it would sit in the work queue forever.
    await rt.jsm.streams.deleteMessage(rt.jobsStream, advisory.stream_seq, false).catch((err: unknown) => {
      log.warn({ err }, 'Could not remove the exhausted job from the stream');
    });
    rt.metrics.advisories.inc();
    await msg.ackAck();
  } catch (err) {
    log.warn({ err }, 'Could not handle a max-deliveries advisory; retrying later');
    msg.nak(RETRY_LATER_MS);
  }
}
