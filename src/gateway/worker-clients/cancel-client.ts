/**
 * The gateway's side of the protocol's cancel (docs/protocol.md, "Cancellation"): one request on
 * `media.cancel`, one worker answers. The refund is not done here: the worker's CANCELLED event
 * (refund: true) settles the task through the events consumer, like every failure, exactly once.
 */
import type { NatsConnection } from '@nats-io/transport-node';
import {
  CANCEL_SUBJECT,
  cancelReplySchema,
  withTraceHeaders,
  type CancelReply,
  type CancelRequest,
} from '../../protocol/index.js';
import { ApiError } from '../errors.js';
import { withSpan } from '../../telemetry/index.js';

export type CancelClient = (request: CancelRequest) => Promise<CancelReply>;

export function cancelClient(nc: NatsConnection, timeoutMs: number): CancelClient {
  return async (request) => {
    let answer;
    try {
      answer = await withSpan('cancel', { kind: 'client', attributes: { 'media.task.id': request.id } }, () => {
        const h = withTraceHeaders();
        return nc.request(CANCEL_SUBJECT, JSON.stringify(request), {
          timeout: timeoutMs,
          ...(h === undefined ? {} : { headers: h }),
        });
      });
    } catch {
      // No responders or no answer in time: nothing changed on the worker's side (docs/protocol.md).
      throw ApiError.of(
        'SERVICE_UNAVAILABLE',
        'No worker answered the cancel request; the task is unchanged. Try again later.',
      );
    }
    let body: unknown;
    try {
      body = answer.json();
    } catch {
      body = undefined;
    }
    const reply = cancelReplySchema.safeParse(body);
    if (!reply.success || reply.data.id !== request.id) {
      throw ApiError.of(
        'SERVICE_UNAVAILABLE',
        'The worker did not confirm the cancel; the task may be unchanged. Try again later.',
      );
    }
    return reply.data;
  };
}
