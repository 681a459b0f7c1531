/**
 * The `media-worker` service of the NATS services framework (docs/protocol.md), group `media`:
 * - `quote` on `media.quote` (queue group `q`, so hosts share the load): the request is a job
 *   (`{ id?, model, input, credits? }`); the reply is the quote, or the error body
 *   `{ error: { code, status, message } }` with the framework's `Nats-Service-Error` (the code) and
 *   `Nats-Service-Error-Code` (the HTTP status) headers. A kind that no live worker can run now is
 *   refused with MODEL_UNAVAILABLE (503) instead of priced;
 * - `cancel` on `media.cancel` (queue group `q`): cancel.ts;
 * - `media.capabilities` (a plain subscription, no queue group: every host answers): discovery.ts;
 *   the service's metadata names it.
 * Every reply carries the protocol version header.
 */
import { Svcm, type Service, type ServiceMsg } from '@nats-io/services';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import { JobError, isJobError, errorMessage } from '../errors.js';
import { checkJobEnvelope, expectedText, errorBody, kindOfModel, parseJob, type JobKind } from '../jobs/index.js';
import type { WorkerMetrics } from './metrics.js';
import {
  CANCEL_ENDPOINT,
  CAPABILITIES_SUBJECT,
  PROTOCOL_HEADER,
  PROTOCOL_VERSION,
  QUOTE_ENDPOINT,
  QUOTE_SERVICE_GROUP,
  QUOTE_SERVICE_NAME,
  cancelRequestSchema,
  decodeBody,
  protocolHeaders,
  protocolMismatch,
  type CancelReply,
  type CancelRequest,
  type Capabilities,
} from '../protocol/index.js';
import type { QuoteFunction } from './types.js';

export interface QuoteServiceOptions {
  /** Offered as the `quote` endpoint when given. */
  quote?: QuoteFunction | undefined;
  /** Whether this host or another live one can run the kind now (else quotes are MODEL_UNAVAILABLE). */
  canRun(kind: JobKind): Promise<boolean>;
  cancel(request: CancelRequest): Promise<CancelReply>;
  capabilities(instance: string): Capabilities;
  logger: Logger;
  metrics: WorkerMetrics;
  concurrency: number;
  timeoutMs: number;
  /** Semantic version reported by the framework's INFO and PING. */
  version: string;
  /** Static facts shown by `$SRV.INFO` (hardware class, execution provider). */
  metadata: Record<string, string>;
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
    description: 'Prices, cancels and announces media jobs for control planes (docs/protocol.md)',
    metadata: { protocol: PROTOCOL_VERSION, capabilities: CAPABILITIES_SUBJECT, ...options.metadata },
  });
  const group = service.addGroup(QUOTE_SERVICE_GROUP);
  const onError = (err: Error): void => options.logger.error({ err }, 'Service endpoint failed');
  if (options.quote) {
    const quote = options.quote;
    const limit = limiter(options.concurrency);
    group.addEndpoint(QUOTE_ENDPOINT, {
      handler: (err, msg) => (err ? onError(err) : void limit(() => answer(msg, quote, options))),
      metadata: { schema: 'docs/schemas/quote-request.schema.json' },
    });
  }
  group.addEndpoint(CANCEL_ENDPOINT, {
    handler: (err, msg) => (err ? onError(err) : void answerCancel(msg, options)),
    metadata: { schema: 'docs/schemas/cancel-request.schema.json' },
  });
  // Every host answers, so not a framework endpoint: @nats-io/services 3.0.0-25 turns the empty
  // queue group that would say so into its default `q`, where only one host would answer.
  const capabilities = nc.subscribe(CAPABILITIES_SUBJECT, {
    callback: (err, msg) => {
      if (err) return onError(err);
      msg.respond(JSON.stringify(options.capabilities(service.info().id)), { headers: protocolHeaders() });
    },
  });
  return {
    stop: async () => {
      capabilities.unsubscribe();
      await service.stop();
    },
  };
}

/** The services package's own nats-core types the same headers object differently. */
type ServiceHeaders = NonNullable<NonNullable<Parameters<ServiceMsg['respond']>[1]>['headers']>;

function respond(msg: ServiceMsg, body: unknown): void {
  msg.respond(JSON.stringify(body), { headers: protocolHeaders() as unknown as ServiceHeaders });
}

function respondError(msg: ServiceMsg, error: JobError): void {
  msg.respondError(error.status, error.code, JSON.stringify(errorBody(error)), { headers: protocolHeaders() as unknown as ServiceHeaders });
}

async function answerCancel(msg: ServiceMsg, options: QuoteServiceOptions): Promise<void> {
  const parsed = cancelRequestSchema.safeParse(decodeBody(msg.data));
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue && issue.path.length > 0 ? issue.path.join('.') : 'request';
    respondError(msg, new JobError('INVALID_JOB', `Expected a cancel request {"id": "<task id>", ...} (docs/protocol.md): ${where}: ${issue?.message ?? 'invalid'}`));
    return;
  }
  try {
    respond(msg, await options.cancel(parsed.data));
  } catch (err) {
    options.logger.error({ err, taskId: parsed.data.id }, 'Cancel failed');
    respondError(msg, new JobError('INTERNAL_ERROR', `Cancel failed: ${errorMessage(err)}; try again`, { retryable: true }));
  }
}

async function answer(msg: ServiceMsg, quote: QuoteFunction, options: QuoteServiceOptions): Promise<void> {
  const started = Date.now();
  let reply: { ok: true; body: unknown } | { ok: false; error: JobError };
  try {
    const raw = decodeBody(msg.data);
    if (raw === undefined) throw new JobError('INVALID_JOB', expectedText('job', 'a JSON object', 'bytes that are not UTF-8 JSON'));
    const mismatch = protocolMismatch(msg.headers?.get(PROTOCOL_HEADER));
    if (mismatch !== null) throw new JobError('INVALID_JOB', mismatch);
    checkJobEnvelope(raw);
    const job = parseJob(raw);
    const kind = kindOfModel(job.model);
    if (!(await options.canRun(kind))) {
      throw new JobError('MODEL_UNAVAILABLE', `No live worker can run ${kind} jobs (${job.model}) now; ask media.capabilities why (docs/protocol.md, "Discovery")`);
    }
    reply = { ok: true, body: await withTimeout(quote, job, options.timeoutMs) };
  } catch (err) {
    reply = { ok: false, error: toJobError(err) };
  }
  const ms = Date.now() - started;
  if (reply.ok) {
    respond(msg, reply.body);
    options.metrics.quotes.inc({ outcome: 'ok' });
    options.logger.debug({ ms }, 'Quote answered');
  } else {
    respondError(msg, reply.error);
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
