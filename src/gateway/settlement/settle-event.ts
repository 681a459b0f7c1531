/**
 * One stored terminal event, settled: parsed, believed only from its task's first claimer
 * (event-origin.ts), then settle() under the worker's trace. The events consumer (consumers.ts) and
 * the event reconciler (event-reconciler.ts) both hand their messages here.
 */
import type { JetStreamManager } from '@nats-io/jetstream';
import type { Logger } from 'pino';
import { messageJson, terminalEventSchema } from '../../protocol/index.js';
import { withParentFrom, withSpan } from '../../telemetry/index.js';
import { eventOrigin } from './event-origin.js';
import type { ResultCheck } from '../results/result-check.js';
import type { GatewayService, SettleOutcome } from '../service.js';

export interface EventSettling {
  jsm: JetStreamManager;
  claimsStream: string;
  service: Pick<GatewayService, 'settle'>;
  checkResult?: ResultCheck;
  logger: Pick<Logger, 'error' | 'warn' | 'child'>;
}

/** What a stored event message offers, whether pulled by a consumer or read by sequence. */
export interface EventMessage {
  subject: string;
  seq: number;
  json(): unknown;
  header(name: string): string | undefined;
}

export type EventResult = SettleOutcome | 'malformed' | 'not-believed';

export async function settleEventMessage(d: EventSettling, msg: EventMessage): Promise<EventResult> {
  const parsed = terminalEventSchema.safeParse(messageJson(msg));
  if (!parsed.success) {
    d.logger.error({ subject: msg.subject, seq: msg.seq }, 'Not a terminal event; skipped');
    return 'malformed';
  }
  const origin = await eventOrigin(d.jsm, d.claimsStream, msg.subject, parsed.data);
  if (!origin.believed) {
    d.logger.warn(
      { security: 'event-origin', subject: msg.subject, seq: msg.seq, taskId: parsed.data.id, reason: origin.reason },
      'Terminal event not believed; skipped',
    );
    return 'not-believed';
  }
  // Settling descends from the worker's event (its traceparent header), so the refund or result shows in the job's trace.
  const attributes = { 'media.task.id': parsed.data.id, 'media.event.status': parsed.data.status };
  return withParentFrom(msg.header, () =>
    withSpan('settle', { kind: 'consumer', attributes }, () =>
      d.service.settle(parsed.data, d.logger.child({ taskId: parsed.data.id }), d.checkResult),
    ),
  );
}
