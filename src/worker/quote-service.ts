/**
 * The quote offered to control planes through the NATS services framework: service `media-worker`,
 * endpoint `quote` on subject `media.quote` (queue group `q`, so hosts share the load). The request
 * is a job (`{ id?, model, input, credits? }`); the reply is the quote, or the error body
 * `{ error: { code, status, message } }` with the framework's `Nats-Service-Error` (the code) and
 * `Nats-Service-Error-Code` (the HTTP status) headers.
 *
 * Fairness and deadlines (docs/protocol.md, "Quote service"): the request may name its party
 * (`Media-Quote-Party`, e.g. the account), its id (`Media-Quote-Id`) and a deadline
 * (`Media-Quote-Deadline`, epoch ms). Waiting quotes are shared fairly between parties; a quote
 * whose deadline passed, or whose id was announced on `media.quote.abandon`, is dropped before it
 * fetches anything and aborted if it is already running.
 */
import { Svcm, type Service, type ServiceMsg } from '@nats-io/services';
import type { MsgHdrs, NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import { JobError, isJobError, errorMessage } from '../errors.js';
import { expectedText, errorBody, parseJob } from '../jobs/index.js';
import type { WorkerMetrics } from './metrics.js';
import { fairLimiter } from './fair-queue.js';
import { QUOTE_ABANDON_SUBJECT, QUOTE_ENDPOINT, QUOTE_HEADERS, QUOTE_SERVICE_GROUP, QUOTE_SERVICE_NAME, decodeBody } from '../protocol/index.js';
import type { QuoteFunction } from './types.js';

export interface QuoteServiceOptions {
  quote: QuoteFunction;
  logger: Logger;
  metrics: WorkerMetrics;
  concurrency: number;
  timeoutMs: number;
  /** Semantic version reported by the framework's INFO and PING. */
  version: string;
}

export interface QuoteService {
  stop(): Promise<void>;
}

export async function startQuoteService(nc: NatsConnection, options: QuoteServiceOptions): Promise<QuoteService> {
  // The services package nests its own nats-core; the connection it gets is only used through the
  // public NatsConnection interface (subscribe, publish), which both versions share.
  const service: Service = await new Svcm(nc as unknown as ConstructorParameters<typeof Svcm>[0]).add({
    name: QUOTE_SERVICE_NAME,
    version: options.version,
    description: 'Validates and prices media jobs before a control plane takes credits (docs/protocol.md)',
  });
  const limit = fairLimiter(options.concurrency);
  const abandoned = abandonBoard();
  const abandonSub = nc.subscribe(QUOTE_ABANDON_SUBJECT, {
    callback: (err, msg) => {
      if (!err) abandoned.abandon(msg.string());
    },
  });
  service.addGroup(QUOTE_SERVICE_GROUP).addEndpoint(QUOTE_ENDPOINT, {
    handler: (err, msg) => {
      if (err) {
        options.logger.error({ err }, 'Quote endpoint failed');
        return;
      }
      // The services package's nested nats-core types the headers apart; only get() is used.
      const meta = quoteMeta(msg.headers as unknown as Pick<MsgHdrs, 'get'> | undefined);
      void limit(meta.party, async () => {
        const dropped = meta.id !== undefined && abandoned.has(meta.id) ? 'abandoned' : meta.deadline !== undefined && Date.now() >= meta.deadline ? 'expired' : null;
        if (dropped !== null) {
          // Nobody waits for the answer any more: nothing is fetched and nothing is sent.
          options.metrics.quotes.inc({ outcome: dropped });
          options.logger.info({ quoteId: meta.id, party: meta.party }, `Quote dropped before it started (${dropped})`);
          return;
        }
        const controller = new AbortController();
        const forget = meta.id === undefined ? () => undefined : abandoned.watch(meta.id, controller);
        try {
          await answer(msg, options, meta, controller.signal);
        } finally {
          forget();
        }
      });
    },
  });
  return {
    stop: async () => {
      abandonSub.unsubscribe();
      await service.stop();
    },
  };
}

interface QuoteMeta {
  id: string | undefined;
  party: string;
  deadline: number | undefined;
}

/** The request's optional headers; missing or malformed ones mean "anonymous, no deadline". */
function quoteMeta(headers: Pick<MsgHdrs, 'get'> | undefined): QuoteMeta {
  const id = headers?.get(QUOTE_HEADERS.id) || undefined;
  const deadline = Number(headers?.get(QUOTE_HEADERS.deadline) || Number.NaN);
  return { id, party: headers?.get(QUOTE_HEADERS.party) || '', deadline: Number.isFinite(deadline) ? deadline : undefined };
}

const ABANDONED_REMEMBERED = 10_000;

/** Ids announced as abandoned (the latest ones, bounded) and the controllers of running quotes. */
function abandonBoard() {
  const gone = new Set<string>();
  const running = new Map<string, AbortController>();
  return {
    abandon(id: string): void {
      gone.add(id);
      if (gone.size > ABANDONED_REMEMBERED) gone.delete(gone.values().next().value as string);
      running.get(id)?.abort(new JobError('INTERNAL_ERROR', 'The quote was abandoned by its requester'));
    },
    has: (id: string) => gone.has(id),
    watch(id: string, controller: AbortController): () => void {
      running.set(id, controller);
      return () => {
        running.delete(id);
        gone.delete(id);
      };
    },
  };
}

async function answer(msg: ServiceMsg, options: QuoteServiceOptions, meta: QuoteMeta, abandon: AbortSignal): Promise<void> {
  const started = Date.now();
  let reply: { ok: true; body: unknown } | { ok: false; error: JobError };
  try {
    const raw = decodeBody(msg.data);
    if (raw === undefined) throw new JobError('INVALID_JOB', expectedText('job', 'a JSON object', 'bytes that are not UTF-8 JSON'));
    const job = parseJob(raw);
    const timeoutMs = meta.deadline === undefined ? options.timeoutMs : Math.max(1, Math.min(options.timeoutMs, meta.deadline - started));
    reply = { ok: true, body: await withTimeout(options.quote, job, timeoutMs, abandon) };
  } catch (err) {
    reply = { ok: false, error: toJobError(err) };
  }
  const ms = Date.now() - started;
  if (abandon.aborted) {
    options.metrics.quotes.inc({ outcome: 'abandoned' });
    options.logger.info({ ms, quoteId: meta.id }, 'Quote aborted: its requester has gone');
    return;
  }
  if (reply.ok) {
    msg.respond(JSON.stringify(reply.body));
    options.metrics.quotes.inc({ outcome: 'ok' });
    options.logger.debug({ ms }, 'Quote answered');
  } else {
    msg.respondError(reply.error.status, reply.error.code, JSON.stringify(errorBody(reply.error)));
    options.metrics.quotes.inc({ outcome: reply.error.code });
    options.logger.info({ ms, code: reply.error.code }, 'Quote refused');
  }
}

async function withTimeout(quote: QuoteFunction, job: Parameters<QuoteFunction>[0], timeoutMs: number, abandon: AbortSignal): Promise<unknown> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let onAbandon: (() => void) | undefined;
  const stopped = new Promise<never>((_, reject) => {
    const stop = (err: unknown): void => {
      controller.abort(err);
      reject(err instanceof Error ? err : new Error(String(err)));
    };
    timer = setTimeout(() => stop(new JobError('INTERNAL_ERROR', `Quote took longer than ${timeoutMs} ms`, { retryable: true })), timeoutMs);
    onAbandon = () => stop(abandon.reason);
    abandon.addEventListener('abort', onAbandon, { once: true });
  });
  try {
    return await Promise.race([quote(job, controller.signal), stopped]);
  } finally {
    clearTimeout(timer);
    if (onAbandon) abandon.removeEventListener('abort', onAbandon);
  }
}

function toJobError(err: unknown): JobError {
  if (isJobError(err)) return err;
  return new JobError('INTERNAL_ERROR', `Quote failed: ${errorMessage(err)}`, { cause: err });
}
