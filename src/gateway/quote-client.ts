/**
 * Prices come from the worker's quote service (`media.quote`, docs/protocol.md), so the gateway
 * needs no ffmpeg and prices the way the worker will check them. A refusal comes back as the
 * worker's error body with the spec's code and status.
 */
import type { NatsConnection } from '@nats-io/transport-node';
import { z } from 'zod';
import type { Job } from '../jobs/index.js';
import { QUOTE_SUBJECT } from '../protocol/index.js';
import { ApiError } from './errors.js';
import { errorMessage } from '../errors.js';

export const quoteSchema = z.object({
  model: z.string(),
  creditsUsed: z.number().int().nonnegative(),
  duration: z.number().optional(),
  input: z.record(z.string(), z.unknown()),
});
export type GatewayQuote = z.infer<typeof quoteSchema>;

const quoteErrorSchema = z.object({ error: z.object({ code: z.string(), status: z.number().int(), message: z.string() }) });

export type QuoteClient = (job: Job) => Promise<GatewayQuote>;

export function quoteClient(nc: NatsConnection, timeoutMs: number): QuoteClient {
  return async (job) => {
    let reply;
    try {
      reply = await nc.request(QUOTE_SUBJECT, JSON.stringify({ model: job.model, input: job.input }), { timeout: timeoutMs });
    } catch (err) {
      // No responders, or none answered in time: no worker is there to price (and run) the job.
      throw ApiError.of('SERVICE_UNAVAILABLE', `No worker answered the quote request (${errorMessage(err)}); nothing was charged`);
    }
    const body: unknown = reply.json();
    if (reply.headers?.get('Nats-Service-Error-Code')) {
      const refused = quoteErrorSchema.safeParse(body);
      if (refused.success) throw new ApiError(refused.data.error.code, refused.data.error.status, refused.data.error.message);
      throw ApiError.of('SERVICE_UNAVAILABLE', `The quote service failed: ${reply.headers.get('Nats-Service-Error') ?? 'no reason'}`);
    }
    return quoteSchema.parse(body);
  };
}
