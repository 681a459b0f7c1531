/**
 * The quote offered to control planes through the NATS services framework: service `media-worker`,
 * endpoint `quote` on subject `media.quote` (queue group `q`, so hosts share the load). The request
 * is a job (`{ id?, model, input, credits? }`); the reply is the quote, or the error body
 * `{ error: { code, status, message } }` with the framework's `Nats-Service-Error` (the code) and
 * `Nats-Service-Error-Code` (the HTTP status) headers.
 */
import { Svcm, type Service, type ServiceMsg } from '@nats-io/services';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import { JobError, isJobError, errorMessage } from '../errors.js';
import { expectedText, errorBody, parseJob } from '../jobs/index.js';
import type { WorkerMetrics } from './metrics.js';
import { QUOTE_ENDPOINT, QUOTE_SERVICE_GROUP, QUOTE_SERVICE_NAME, decodeBody } from '../protocol/index.js';
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
  const limit = limiter(options.concurrency);
  service.addGroup(QUOTE_SERVICE_GROUP).addEndpoint(QUOTE_ENDPOINT, {
    handler: (err, msg) => {
      if (err) {
        options.logger.error({ err }, 'Quote endpoint failed');
        return;
      }
      void limit(() => answer(msg, options));
    },
  });
  return {
    stop: async () => {
      await service.stop();
    },
  };
}

async function answer(msg: ServiceMsg, options: QuoteServiceOptions): Promise<void> {
  const started = Date.now();
  let reply: { ok: true; body: unknown } | { ok: false; error: JobError };
  try {
    const raw = decodeBody(msg.data);
    if (raw === undefined) throw new JobError('INVALID_JOB', expectedText('job', 'a JSON object', 'bytes that are not UTF-8 JSON'));
    const job = parseJob(raw);
    reply = { ok: true, body: await withTimeout(options.quote, job, options.timeoutMs) };
  } catch (err) {
    reply = { ok: false, error: toJobError(err) };
  }
  const ms = Date.now() - started;
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

async function withTimeout(quote: QuoteFunction, job: Parameters<QuoteFunction>[0], timeoutMs: number): Promise<unknown> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const err = new JobError('INTERNAL_ERROR', `Quote took longer than ${timeoutMs} ms`, { retryable: true });
      controller.abort(err);
      reject(err);
    }, timeoutMs);
  });
  try {
    return await Promise.race([quote(job, controller.signal), timedOut]);
  } finally {
    clearTimeout(timer);
  }
}

function toJobError(err: unknown): JobError {
  if (isJobError(err)) return err;
  return new JobError('INTERNAL_ERROR', `Quote failed: ${errorMessage(err)}`, { cause: err });
}

/** At most `n` tasks at once; the rest wait their turn in arrival order. */
function limiter(n: number): (task: () => Promise<void>) => Promise<void> {
  let running = 0;
  const waiting: (() => void)[] = [];
  return async (task) => {
    // A finishing task hands its place straight to the next waiting one, so `running` never overshoots.
    if (running >= n) await new Promise<void>((resolve) => waiting.push(resolve));
    else running += 1;
    try {
      await task();
    } finally {
      const next = waiting.shift();
      if (next) next();
      else running -= 1;
    }
  };
}
