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
 *
 * Fairness and deadlines of quotes (docs/protocol.md, "Quote service"): the request may name its
 * party (`Media-Quote-Party`, e.g. the account), its id (`Media-Quote-Id`) and a deadline
 * (`Media-Quote-Deadline`, epoch ms). Waiting quotes are shared fairly between parties, and no
 * party holds more than its share of the slots (partyShare): one account feeding slow URLs through
 * every gateway leaves the other slots free for everybody else. A quote whose deadline passed, or
 * whose id was announced on `media.quote.abandon`, is dropped before it fetches anything and
 * aborted if it is already running.
 */
import { Svcm, type Service, type ServiceMsg } from '@nats-io/services';
import type { MsgHdrs, NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import { JobError, isJobError, errorMessage } from '../errors.js';
import { checkJobEnvelope, expectedText, errorBody, kindOfModel, parseJob, type JobKind } from '../jobs/index.js';
import type { WorkerMetrics } from './metrics.js';
import { fairLimiter } from './fair-queue.js';
import {
  QUOTE_ABANDON_SUBJECT,
  QUOTE_HEADERS,
  QUOTE_HEARTBEAT_MS,
  QUOTE_STATUS,
  CANCEL_ENDPOINT,
  CAPABILITIES_SUBJECT,
  PROTOCOL_HEADER,
  PROTOCOL_VERSION,
  QUOTE_ENDPOINT,
  QUOTE_SERVICE_GROUP,
  QUOTE_SERVICE_NAME,
  cancelRequestSchema,
  decodeBody,
  endpointSchemaMetadata,
  protocolHeaders,
  protocolMismatch,
  type CancelReply,
  type CancelRequest,
  type Capabilities,
} from '../protocol/index.js';
import type { QuoteFunction } from './types.js';
import { noteOnSpan, withParentFrom, withSpan } from '../telemetry/index.js';

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
  const abandoned = abandonBoard();
  const abandonSub = nc.subscribe(QUOTE_ABANDON_SUBJECT, {
    callback: (err, msg) => {
      if (!err) abandoned.abandon(msg.string());
    },
  });
  if (options.quote) {
    const quote = options.quote;
    const limit = fairLimiter(options.concurrency);
    const share = partyLimiter(partyShare(options.concurrency));
    group.addEndpoint(QUOTE_ENDPOINT, {
      handler: (err, msg) => {
        if (err) return onError(err);
        // The services package's nested nats-core types the headers apart; only get() is used.
        const meta = quoteMeta(msg.headers as unknown as Pick<MsgHdrs, 'get'> | undefined);
        const receipts = meta.heartbeatMs === undefined ? null : sendReceipts(msg, meta.heartbeatMs);
        // The party's share first (its extra requests wait without holding a slot), then a fair slot.
        void share(meta.party, () =>
          limit(meta.party, async () => {
            const dropped =
              meta.id !== undefined && abandoned.has(meta.id)
                ? 'abandoned'
                : meta.deadline !== undefined && Date.now() >= meta.deadline
                  ? 'expired'
                  : null;
            if (dropped !== null) {
              receipts?.stop();
              // Nobody waits for the answer any more: nothing is fetched and nothing is sent.
              options.metrics.quotes.inc({ outcome: dropped });
              options.logger.info(
                { quoteId: meta.id, party: meta.party },
                `Quote dropped before it started (${dropped})`,
              );
              return;
            }
            const controller = new AbortController();
            const forget = meta.id === undefined ? () => undefined : abandoned.watch(meta.id, controller);
            try {
              // The quote descends from the gateway's request (its traceparent header).
              const attributes = { 'media.quote.party': meta.party, 'messaging.system': 'nats' };
              await withParentFrom(
                (name) => msg.headers?.get(name),
                () =>
                  withSpan('quote request', { kind: 'server', attributes }, () =>
                    answer(msg, quote, options, meta, controller.signal, () => receipts?.stop()),
                  ),
              );
            } finally {
              forget();
            }
          }),
        ).finally(() => receipts?.stop());
      },
      // A quote request is a job message (docs/protocol.md, "Quote service").
      metadata: endpointSchemaMetadata('job', 'quote-reply'),
    });
  }
  group.addEndpoint(CANCEL_ENDPOINT, {
    handler: (err, msg) =>
      err
        ? onError(err)
        : void withParentFrom(
            (name) => msg.headers?.get(name),
            () => withSpan('cancel request', { kind: 'server' }, () => answerCancel(msg, options)),
          ),
    metadata: endpointSchemaMetadata('cancel-request', 'cancel-reply'),
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
      abandonSub.unsubscribe();
      await service.stop();
    },
  };
}

/**
 * The most quote slots one party may hold: a quarter of them (at least one). Quote slots are I/O
 * (downloads and probes, WORKER_QUOTE_CONCURRENCY, apart from the GPU slots), so at least four
 * parties are served at once however slow one party's inputs are.
 */
export function partyShare(slots: number): number {
  return Math.max(1, Math.floor(slots / 4));
}

/** At most `cap` tasks of one party at once; the party's others wait in its own line, in order. */
export function partyLimiter(cap: number): (party: string, task: () => Promise<void>) => Promise<void> {
  const running = new Map<string, number>();
  const waiting = new Map<string, (() => void)[]>();
  return async (party, task) => {
    const n = running.get(party) ?? 0;
    if (n >= cap) {
      await new Promise<void>((resolve) => {
        const line = waiting.get(party) ?? [];
        line.push(resolve);
        waiting.set(party, line);
      });
    } else running.set(party, n + 1);
    try {
      await task();
    } finally {
      // The slot passes straight to the party's next task, if any; else it is given back.
      const line = waiting.get(party);
      const next = line?.shift();
      if (line !== undefined && line.length === 0) waiting.delete(party);
      if (next !== undefined) next();
      else {
        const left = (running.get(party) ?? 1) - 1;
        if (left > 0) running.set(party, left);
        else running.delete(party);
      }
    }
  };
}

/** The services package's own nats-core types the same headers object differently. */
type ServiceHeaders = NonNullable<NonNullable<Parameters<ServiceMsg['respond']>[1]>['headers']>;

function respond(msg: ServiceMsg, body: unknown): void {
  msg.respond(JSON.stringify(body), { headers: protocolHeaders() as unknown as ServiceHeaders });
}

function respondError(msg: ServiceMsg, error: JobError): void {
  msg.respondError(error.status, error.code, JSON.stringify(errorBody(error)), {
    headers: protocolHeaders() as unknown as ServiceHeaders,
  });
}

async function answerCancel(msg: ServiceMsg, options: QuoteServiceOptions): Promise<void> {
  const parsed = cancelRequestSchema.safeParse(decodeBody(msg.data));
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue && issue.path.length > 0 ? issue.path.join('.') : 'request';
    respondError(
      msg,
      new JobError(
        'INVALID_JOB',
        `Expected a cancel request {"id": "<task id>", ...} (docs/protocol.md): ${where}: ${issue?.message ?? 'invalid'}`,
      ),
    );
    return;
  }
  // The request's span (tracing on) names its task, as the gateway's `cancel` span does.
  noteOnSpan({ 'media.task.id': parsed.data.id });
  try {
    respond(msg, await options.cancel(parsed.data));
  } catch (err) {
    options.logger.error({ err, taskId: parsed.data.id }, 'Cancel failed');
    respondError(
      msg,
      new JobError('INTERNAL_ERROR', `Cancel failed: ${errorMessage(err)}; try again`, { retryable: true }),
    );
  }
}

interface QuoteMeta {
  id: string | undefined;
  party: string;
  deadline: number | undefined;
  /** Receipts asked for, with this heartbeat. */
  heartbeatMs: number | undefined;
}

/** The request's optional headers; missing or malformed ones mean "anonymous, no deadline, no receipts". */
function quoteMeta(headers: Pick<MsgHdrs, 'get'> | undefined): QuoteMeta {
  const id = headers?.get(QUOTE_HEADERS.id) || undefined;
  const deadline = Number(headers?.get(QUOTE_HEADERS.deadline) || Number.NaN);
  const heartbeat = Number(headers?.get(QUOTE_HEADERS.receipt) || Number.NaN);
  return {
    id,
    party: headers?.get(QUOTE_HEADERS.party) || '',
    deadline: Number.isFinite(deadline) ? deadline : undefined,
    heartbeatMs: Number.isFinite(heartbeat)
      ? Math.min(QUOTE_HEARTBEAT_MS.max, Math.max(QUOTE_HEARTBEAT_MS.min, heartbeat))
      : undefined,
  };
}

/**
 * Tells the requester at once that the request arrived, then every heartbeat that it is still
 * waiting or running (empty replies with `Media-Quote-Status`), until stopped: a requester that
 * hears nothing knows that the request, or the way back, was lost (docs/protocol.md).
 */
function sendReceipts(msg: ServiceMsg, heartbeatMs: number): { stop(): void } {
  const send = (status: string): void => {
    msg.respond('', { headers: protocolHeaders({ [QUOTE_HEADERS.status]: status }) as unknown as ServiceHeaders });
  };
  send(QUOTE_STATUS.received);
  const timer = setInterval(() => send(QUOTE_STATUS.working), heartbeatMs).unref();
  return { stop: () => clearInterval(timer) };
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

/** `beforeReply`: stops the heartbeats, so that none follows the answer. */
async function answer(
  msg: ServiceMsg,
  quote: QuoteFunction,
  options: QuoteServiceOptions,
  meta: QuoteMeta,
  abandon: AbortSignal,
  beforeReply: () => void,
): Promise<void> {
  const started = Date.now();
  let reply: { ok: true; body: unknown } | { ok: false; error: JobError };
  try {
    const raw = decodeBody(msg.data);
    if (raw === undefined)
      throw new JobError('INVALID_JOB', expectedText('job', 'a JSON object', 'bytes that are not UTF-8 JSON'));
    const mismatch = protocolMismatch(msg.headers?.get(PROTOCOL_HEADER));
    if (mismatch !== null) throw new JobError('INVALID_JOB', mismatch);
    checkJobEnvelope(raw);
    const job = parseJob(raw);
    const kind = kindOfModel(job.model);
    if (!(await options.canRun(kind))) {
      throw new JobError(
        'MODEL_UNAVAILABLE',
        `No live worker can run ${kind} jobs (${job.model}) now; ask media.capabilities why (docs/protocol.md, "Discovery")`,
      );
    }
    const timeoutMs =
      meta.deadline === undefined
        ? options.timeoutMs
        : Math.max(1, Math.min(options.timeoutMs, meta.deadline - started));
    reply = { ok: true, body: await withTimeout(quote, job, timeoutMs, abandon) };
  } catch (err) {
    reply = { ok: false, error: toJobError(err) };
  }
  const ms = Date.now() - started;
  beforeReply();
  if (abandon.aborted) {
    options.metrics.quotes.inc({ outcome: 'abandoned' });
    options.logger.info({ ms, quoteId: meta.id }, 'Quote aborted: its requester has gone');
    return;
  }
  if (reply.ok) {
    respond(msg, reply.body);
    options.metrics.quotes.inc({ outcome: 'ok' });
    options.logger.debug({ ms }, 'Quote answered');
  } else {
    respondError(msg, reply.error);
    options.metrics.quotes.inc({ outcome: reply.error.code });
    // The customer's message may be deliberately vague (a fetch failure); what really happened is its cause.
    const detail = reply.error.cause instanceof Error ? { detail: reply.error.cause.message } : {};
    options.logger.info({ ms, code: reply.error.code, ...detail }, 'Quote refused');
  }
}

async function withTimeout(
  quote: QuoteFunction,
  job: Parameters<QuoteFunction>[0],
  timeoutMs: number,
  abandon: AbortSignal,
): Promise<unknown> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let onAbandon: (() => void) | undefined;
  const stopped = new Promise<never>((_, reject) => {
    const stop = (err: unknown): void => {
      controller.abort(err);
      reject(err instanceof Error ? err : new Error(String(err)));
    };
    timer = setTimeout(
      () => stop(new JobError('INTERNAL_ERROR', `Quote took longer than ${timeoutMs} ms`, { retryable: true })),
      timeoutMs,
    );
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
