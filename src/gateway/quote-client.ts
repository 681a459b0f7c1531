/**
 * Prices come from the worker's quote service (`media.quote`, docs/protocol.md), so the gateway
 * needs no ffmpeg and prices the way the worker will check them. A refusal comes back as the
 * worker's error body with the spec's code and status.
 *
 * Each request names its account (the worker shares its quote slots fairly between accounts) and
 * carries a deadline (the end of this gateway's wait): a worker drops a quote whose deadline has
 * passed before fetching anything. When the caller stops waiting first (its HTTP client hung up),
 * the quote's id is announced on `media.quote.abandon` so that no worker fetches for nobody.
 */
import { randomUUID } from 'node:crypto';
import { headers, type NatsConnection } from '@nats-io/transport-node';
import { z } from 'zod';
import type { Job } from '../jobs/index.js';
import { QUOTE_ABANDON_SUBJECT, QUOTE_HEADERS, QUOTE_SUBJECT } from '../protocol/index.js';
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

export interface QuoteRequest {
  /** Whose quote it is: the worker's fair share is per party. */
  party: string;
  /** Aborted when nobody waits for the answer any more. */
  signal?: AbortSignal;
}

export type QuoteClient = (job: Job, request: QuoteRequest) => Promise<GatewayQuote>;

export function quoteClient(nc: NatsConnection, timeoutMs: number): QuoteClient {
  return async (job, { party, signal }) => {
    const id = randomUUID();
    const h = headers();
    h.set(QUOTE_HEADERS.id, id);
    h.set(QUOTE_HEADERS.party, party);
    h.set(QUOTE_HEADERS.deadline, String(Date.now() + timeoutMs));
    let reply;
    try {
      reply = await untilAborted(nc.request(QUOTE_SUBJECT, JSON.stringify({ model: job.model, input: job.input }), { timeout: timeoutMs, headers: h }), signal);
    } catch (err) {
      // Whatever the reason, nobody will read this quote's answer: a worker still holding it stops.
      nc.publish(QUOTE_ABANDON_SUBJECT, id);
      if (signal?.aborted) throw ApiError.of('SERVICE_UNAVAILABLE', 'The client closed the request; its quote was abandoned and nothing was charged');
      // No responders, or none answered in time: no worker is there to price (and run) the job.
      throw ApiError.of('SERVICE_UNAVAILABLE', `No worker answered the quote request (${errorMessage(err)}); nothing was charged`, { 'retry-after': '5' });
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

function untilAborted<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return work;
  if (signal.aborted) return Promise.reject(new Error('aborted'));
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(new Error('aborted'));
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
