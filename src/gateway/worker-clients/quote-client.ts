/**
 * Prices come from the worker's quote service (`media.quote`, docs/protocol.md), so the gateway
 * needs no ffmpeg and prices the way the worker will check them. A refusal comes back as the
 * worker's error body with the spec's code and status.
 *
 * Each request names its account (the worker shares its quote slots fairly between accounts) and
 * carries a deadline (the end of this gateway's wait): a worker drops a quote whose deadline has
 * passed before fetching anything. When the caller stops waiting first (its HTTP client hung up),
 * the quote's id is announced on `media.quote.abandon` so that no worker fetches for nobody.
 *
 * A request, or its answer, can be lost with a NATS node that dies while carrying it, and a quote
 * may rightly take minutes (a slow download), so silence cannot be told from work by waiting. The
 * request therefore asks for receipts (`Media-Quote-Receipt`): the worker says "received" at once
 * and "working" every heartbeat until it answers. No receipt within RECEIPT_WAIT_MS: the request
 * is taken as lost and sent once more (under a new id, the old one abandoned); heartbeats that
 * stop: the worker or the way back is gone, and the caller gets a 503 to retry, at once rather
 * than after the whole quote timeout.
 */
import { randomUUID } from 'node:crypto';
import { createInbox, headers, type Msg, type MsgHdrs, type NatsConnection } from '@nats-io/transport-node';
import { z } from 'zod';
import type { Job } from '../../jobs/index.js';
import { QUOTE_ABANDON_SUBJECT, QUOTE_HEADERS, QUOTE_SUBJECT, withTraceHeaders } from '../../protocol/index.js';
import { ApiError } from '../errors.js';
import { withSpan } from '../../telemetry/index.js';
import type { GatewayMetrics } from '../monitoring/metrics.js';

/** The fields the gateway uses; the rest (what the worker measured) is kept for the quote check (quote-check.ts). */
export const quoteSchema = z.looseObject({
  model: z.string(),
  creditsUsed: z.number().int().nonnegative(),
  duration: z.number().optional(),
  input: z.record(z.string(), z.unknown()),
});
export type GatewayQuote = z.infer<typeof quoteSchema>;

const quoteErrorSchema = z.object({
  error: z.object({ code: z.string(), status: z.number().int(), message: z.string() }),
});

/** A receipt takes one round trip; a busy worker's event loop may hold it a few seconds. */
const RECEIPT_WAIT_MS = 5_000;
/** The worker's heartbeat asked for; three missed in a row mean it is gone. */
const HEARTBEAT_MS = 2_000;
const MISSED_HEARTBEATS = 3;
/** The first send, and one more when no worker said it received the first. */
const SENDS = 2;
const RETRY_AFTER_SECONDS = '5';

export interface QuoteRequest {
  /** Whose quote it is: the worker's fair share is per party. */
  party: string;
  /** Aborted when nobody waits for the answer any more. */
  signal?: AbortSignal;
}

export type QuoteClient = (job: Job, request: QuoteRequest) => Promise<GatewayQuote>;

export interface QuoteClientOptions {
  /** The longest wait for one quote (GATEWAY_QUOTE_TIMEOUT_MS). */
  timeoutMs: number;
  /** The connection's reply inbox prefix (NATS_INBOX_PREFIX): the only inboxes this role may read. */
  inboxPrefix: string;
  /** Test hooks: the receipt wait and the heartbeat asked for. */
  receiptWaitMs?: number;
  heartbeatMs?: number;
}

export function quoteClient(nc: NatsConnection, options: QuoteClientOptions): QuoteClient {
  const receiptWaitMs = options.receiptWaitMs ?? RECEIPT_WAIT_MS;
  const heartbeatMs = options.heartbeatMs ?? HEARTBEAT_MS;
  return (job, asked) =>
    withSpan('quote', { kind: 'client', attributes: { 'media.model': job.model } }, () => askWorkers(job, asked));
  async function askWorkers(job: Job, { party, signal }: QuoteRequest): Promise<GatewayQuote> {
    const body = JSON.stringify({ model: job.model, input: job.input });
    const deadline = Date.now() + options.timeoutMs;
    for (let send = 1; ; send += 1) {
      const id = randomUUID();
      const h = headers();
      h.set(QUOTE_HEADERS.id, id);
      h.set(QUOTE_HEADERS.party, party);
      h.set(QUOTE_HEADERS.deadline, String(deadline));
      h.set(QUOTE_HEADERS.receipt, String(heartbeatMs));
      withTraceHeaders(h);
      const outcome = await ask(nc, body, h, {
        inboxPrefix: options.inboxPrefix,
        deadline,
        receiptWaitMs,
        silenceMs: heartbeatMs * MISSED_HEARTBEATS,
        signal,
      });
      // Whatever the reason, nobody reads this request's answer any more: a worker holding it stops.
      if (outcome.kind !== 'answer') nc.publish(QUOTE_ABANDON_SUBJECT, id);
      switch (outcome.kind) {
        case 'answer':
          return readAnswer(outcome.msg);
        case 'unreceived':
          if (send < SENDS && Date.now() < deadline) continue;
          throw unavailable(
            'No worker acknowledged the quote request (none is running, or the request was lost with a NATS node); nothing was charged',
          );
        case 'silent':
          throw unavailable(
            'The worker pricing this submission stopped answering (it, or the NATS node between us, went away); nothing was charged',
          );
        case 'timeout':
          throw unavailable(`No worker answered the quote request in ${options.timeoutMs} ms; nothing was charged`);
        case 'no-responders':
          throw unavailable('No worker is listening for quote requests (media.quote); nothing was charged');
        case 'closed':
          throw unavailable('The connection to NATS closed while the quote was asked; nothing was charged');
        case 'aborted':
          throw ApiError.of(
            'SERVICE_UNAVAILABLE',
            'The client closed the request; its quote was abandoned and nothing was charged',
          );
      }
    }
  }
}

/** The client, each quote timed in `media_gateway_quote_duration_seconds` by outcome (ok or the error code). */
export function timedQuotes(client: QuoteClient, metrics: Pick<GatewayMetrics, 'quoteDuration'>): QuoteClient {
  return async (job, request) => {
    const end = metrics.quoteDuration.startTimer();
    try {
      const quote = await client(job, request);
      end({ outcome: 'ok' });
      return quote;
    } catch (err) {
      end({ outcome: err instanceof ApiError ? err.code : 'error' });
      throw err;
    }
  };
}

function unavailable(message: string): ApiError {
  return ApiError.of('SERVICE_UNAVAILABLE', message, { 'retry-after': RETRY_AFTER_SECONDS });
}

type AskOutcome =
  { kind: 'answer'; msg: Msg } | { kind: 'unreceived' | 'silent' | 'timeout' | 'no-responders' | 'closed' | 'aborted' };

interface AskOptions {
  inboxPrefix: string;
  deadline: number;
  receiptWaitMs: number;
  silenceMs: number;
  signal: AbortSignal | undefined;
}

/**
 * Sends one request on an inbox of its own and waits: for a receipt at first, then for the next
 * heartbeat or the answer; never past the deadline.
 */
async function ask(nc: NatsConnection, body: string, h: MsgHdrs, o: AskOptions): Promise<AskOutcome> {
  if (o.signal?.aborted === true) return { kind: 'aborted' };
  const inbox = createInbox(o.inboxPrefix);
  return new Promise<AskOutcome>((resolve) => {
    let received = false;
    let done = false;
    let timer: NodeJS.Timeout | undefined;
    const finish = (outcome: AskOutcome): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      o.signal?.removeEventListener('abort', onAbort);
      sub.unsubscribe();
      resolve(outcome);
    };
    const onAbort = (): void => finish({ kind: 'aborted' });
    const wait = (): void => {
      clearTimeout(timer);
      const left = o.deadline - Date.now();
      const patience = received ? o.silenceMs : o.receiptWaitMs;
      timer = setTimeout(
        () => finish({ kind: left <= patience ? 'timeout' : received ? 'silent' : 'unreceived' }),
        Math.max(0, Math.min(patience, left)),
      );
    };
    const sub = nc.subscribe(inbox, {
      callback: (err, msg) => {
        if (err !== null) return finish({ kind: 'closed' });
        // The server's "no responders" status: nobody subscribes to media.quote.
        if (msg.data.length === 0 && msg.headers?.status === '503') return finish({ kind: 'no-responders' });
        if (msg.headers?.get(QUOTE_HEADERS.status)) {
          received = true;
          return wait();
        }
        finish({ kind: 'answer', msg });
      },
    });
    void sub.closed.then(() => finish({ kind: 'closed' }));
    o.signal?.addEventListener('abort', onAbort, { once: true });
    wait();
    nc.publish(QUOTE_SUBJECT, body, { reply: inbox, headers: h });
  });
}

function readAnswer(reply: Msg): GatewayQuote {
  const body: unknown = reply.json();
  if (reply.headers?.get('Nats-Service-Error-Code')) {
    const refused = quoteErrorSchema.safeParse(body);
    if (refused.success)
      throw new ApiError(refused.data.error.code, refused.data.error.status, refused.data.error.message);
    throw ApiError.of(
      'SERVICE_UNAVAILABLE',
      `The quote service failed: ${reply.headers.get('Nats-Service-Error') ?? 'no reason'}`,
    );
  }
  return quoteSchema.parse(body);
}
