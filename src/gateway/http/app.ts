/**
 * The spec's HTTP API on Fastify. Fastify gives the request ids in the pino logs, body size limits,
 * timeouts, content-type handling and graceful close; @fastify/swagger turns the route schemas
 * into /api/v1/openapi.json; @fastify/static serves RESULTS_DIR with range requests.
 */
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import fastifyStatic from '@fastify/static';
import fastifySwagger from '@fastify/swagger';
import Fastify, { LogController, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { z } from 'zod';
import {
  JobError,
  MODEL_IDS,
  allKinds,
  isModelId,
  kindContract,
  kindOfModel,
  oneOf,
  parseJob,
  type Job,
  expectedValue,
} from '../../jobs/index.js';
import { PACKAGE_VERSION } from '../../paths.js';
import { resultUrl } from '../../protocol/index.js';
import { ApiError, errorEnvelope, successEnvelope, toApiError } from '../errors.js';
import { NATS_RETRY_AFTER_SECONDS } from '../nats-unavailable.js';
import type { ProgressBoard } from '../progress-board.js';
import { taskNotFound, type Endpoint } from '../service.js';
import { GatewaySettingsError, servedFilesProblem, type GatewaySettings } from '../settings.js';
import type { TaskRecord } from '../store/records.js';
import { estimateJob } from './routes/estimate.js';
import { linkSigner } from '../results/links.js';
import { usagePage, usageQuerySchema } from './routes/usage.js';
import { taskView, withSignedLinks } from '../api-views.js';
import type { PollView } from '../poll-view/poll-view.js';
import { fromFrameworkError } from './framework-errors.js';
import { useJsonBodyParser } from './json-body.js';
import { withRedactedRequests } from './log-redaction.js';
import {
  openapiComponentSchemas,
  routeSchemas,
  toolRouteSchema,
  withSubmissionLinks,
  withUploadLinks,
} from './openapi-schemas.js';
import { rateLimits } from './rate-limits.js';
import { registerUploads } from './routes/uploads.js';
import { registerBucketFiles } from './bucket-files.js';
import { idempotent } from './idempotent-route.js';
import { newTaskId } from '../ids.js';
import { taskEventHub } from '../task-events/hub.js';
import { registerTaskEvents } from './routes/task-events.js';
import { wantsWebhook, withWebhookState } from '../webhooks/records.js';
import type { WebhookStore } from '../webhooks/store.js';
import { submissionWebhook } from '../webhooks/submission.js';
import { traceRequests } from './request-spans.js';
import type { AppDeps, Links } from './app-deps.js';

export type { AppDeps, Links };

declare module 'fastify' {
  interface FastifyRequest {
    accountId: string;
  }
}

const HTTP_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;
const UNLIMITED_PATHS = new Set(['/healthz', '/readyz', '/metrics']);

/** The models POST /api/v1/generate takes: those of the kinds on it. */
const UNIFIED_MODELS = MODEL_IDS.filter((m) => kindContract(kindOfModel(m)).onGenerate);

export type GatewayApp = FastifyInstance;

export async function buildApp(deps: AppDeps): Promise<GatewayApp> {
  const { settings, metrics } = deps;
  const app = Fastify({
    loggerInstance: withRedactedRequests(deps.logger),
    bodyLimit: settings.bodyLimitBytes,
    requestTimeout: settings.requestTimeoutMs,
    connectionTimeout: settings.requestTimeoutMs,
    // A client may send its own id (a proxy's); otherwise one is made. It is in every log line of the request.
    requestIdHeader: 'x-request-id',
    genReqId: () => randomUUID(),
    keepAliveTimeout: settings.keepAliveTimeoutMs,
    trustProxy: trustProxy(settings.trustProxy),
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    // Errors met while routing (a malformed URL, a task id over 100 characters) get the envelope too.
    frameworkErrors: (err, _req, reply) => void sendError(reply, fromFrameworkError(err) ?? toApiError(err)),
    // A GET (the polls, thousands a second) is logged once, when answered (the hook below), not twice.
    logController: new LogController({ disableRequestLogging: (req) => req.method === 'GET' }),
  });
  // Fastify types the instance by its logger; a pino Logger and Fastify's base logger differ only in typing.
  const plain = app as unknown as FastifyInstance;
  // First of the hooks, so that the others (authentication, rate limits) run inside the request's span.
  traceRequests(plain);
  // A client must finish sending its headers in this time (slow-header connections are cut).
  app.server.headersTimeout = settings.headersTimeoutMs;
  app.decorateRequest('accountId', '');
  // Requests are JSON (spec section 4); Fastify's plain-text parser would let a string through.
  app.removeContentTypeParser('text/plain');
  useJsonBodyParser(plain);
  const limits = await rateLimits(plain, {
    windowMs: settings.rateLimitWindowMs,
    perAddress: settings.rateLimitPerAddress,
    perAccount: settings.rateLimitPerAccount,
  });

  // Schemas document; validation is the worker's own (see openapi-schemas.ts), and responses are
  // written as built (no field filtering by the serializer).
  app.setValidatorCompiler(() => (data) => ({ value: data }));
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));

  const links = servedLinks(settings, deps.resultsBaseUrl, deps.upscaleResultLifetimeDays);
  // Where upload links start, when this gateway hands them out: the document takes them as inputs.
  const uploadsBase =
    settings.uploadsEnabled && links !== undefined ? resultUrl(links.base, ['uploads', '']) : undefined;
  await app.register(fastifySwagger, {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'media-worker gateway',
        version: PACKAGE_VERSION,
        description: 'The media service HTTP API (media-service-spec.md sections 1-5, 7; docs/contract.md).',
      },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } }, schemas: openapiComponentSchemas },
    },
    transformObject: (doc) =>
      'openapiObject' in doc ? withSubmissionLinks(withUploadLinks(doc.openapiObject, uploadsBase)) : doc.swaggerObject,
  });

  // The id is in every log line of the request; echoed so a client can quote it.
  app.addHook('onRequest', async (req, reply) => {
    // Browsers must not guess a type other than the one sent (an uploaded PNG that is also HTML).
    void reply.header('x-request-id', req.id).header('x-content-type-options', 'nosniff');
  });
  // The client address's budget is spent before anything else is done for the request; probes and
  // metrics (the orchestrator's, not a client's) are not counted.
  app.addHook('onRequest', async (req) => {
    if (!UNLIMITED_PATHS.has(req.url)) await limits.byAddress(req);
  });
  app.addHook('onResponse', async (req, reply) => {
    if (req.method === 'GET') req.log.info({ req, res: reply, responseTime: reply.elapsedTime }, 'request completed');
    metrics.requests.observe(
      { route: req.routeOptions.url ?? 'unmatched', method: req.method, status: String(reply.statusCode) },
      reply.elapsedTime / 1000,
    );
  });

  app.setErrorHandler((err: unknown, req, reply) => {
    const mapped = fromFrameworkError(err) ?? toApiError(err);
    // A client that hung up is no server failure: nobody reads this answer.
    if (reply.raw.destroyed) req.log.info({ code: mapped.code }, 'Client closed the request');
    // 503 is the service saying "not now" (no worker for the kind, NATS away): a warning, not a fault.
    else if (mapped.status === 503)
      req.log.warn({ code: mapped.code, reason: mapped.message }, 'Service unavailable for the request');
    else if (mapped.status >= 500) req.log.error({ err }, 'Request failed');
    void sendError(reply, mapped);
  });
  /** A known path with another method is 405 with the methods it has (RFC 9110, 15.5.6); else 404. */
  const unmatched = (req: FastifyRequest): ApiError => {
    const path = req.url.split('?')[0] ?? '';
    const allowed = HTTP_METHODS.filter((method) => app.findRoute({ method, url: path }) !== null);
    if (allowed.length > 0 && !allowed.includes(req.method as (typeof HTTP_METHODS)[number])) {
      return ApiError.of(
        'METHOD_NOT_ALLOWED',
        `Expected ${allowed.join(' or ')} on ${path} but received ${req.method}`,
        { allow: allowed.join(', ') },
      );
    }
    return ApiError.of('NOT_FOUND', `Expected a path of this API but received ${req.method} ${path}`);
  };
  // Before the body is looked at: Fastify would otherwise refuse a body-carrying method it knows
  // (QUERY) without a Content-Type, or parse its body, before the not-found handler.
  app.addHook('onRequest', async (req) => {
    if (req.is404) throw unmatched(req);
  });
  app.setNotFoundHandler((req, reply) => void sendError(reply, unmatched(req)));

  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }));
  app.get('/readyz', { schema: { hide: true } }, async (_req, reply) => {
    const reason = deps.notReadyReason();
    if (reason !== null) return reply.code(503).send({ status: 'not ready', reason });
    return { status: 'ready' };
  });
  app.get('/metrics', { schema: { hide: true } }, async (_req, reply) => {
    return reply.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });

  if (links !== undefined) {
    await app.register(async (files) => {
      files.addHook('onRequest', async (req, reply) => guardLink(req, reply, links));
      // Results in a bucket are streamed from it; uploads (and a local store's results) come from RESULTS_DIR.
      if (deps.resultsBucket !== undefined) registerBucketFiles(files, deps.resultsBucket);
      await files.register(fastifyStatic, {
        root: deps.resultsDir,
        prefix: '/results/',
        decorateReply: false,
        index: false,
        dotfiles: 'deny',
        cacheControl: false,
      });
    });
  }

  // Live task events: one hub per gateway, fed by its one progress subscription and the poll view's watch.
  const shown = async (task: TaskRecord) =>
    withWebhook(withSignedLinks(taskView(task), task, links), task, deps.webhooks);
  const events = taskEventHub(
    {
      task: deps.view.task,
      shown,
      onError: (err, taskId) => app.log.warn({ err, taskId }, 'A live event stream could not be served'),
    },
    {
      perAccount: settings.eventStreamsPerAccount,
      perGateway: settings.eventStreams,
      heartbeatMs: settings.eventHeartbeatMs,
    },
  );
  deps.progress.onMessage(events.heardProgress);
  deps.view.onTask(events.heardTask);
  // Open streams are no idle connections: ended here (clients resume elsewhere) so that close does not wait on them.
  app.addHook('preClose', async () => events.close());

  await app.register(async (api) => {
    api.addHook('onRequest', async (req) => {
      if (req.url === '/api/v1/openapi.json') return;
      req.accountId = await authenticate(req, deps.view);
      req.log = req.log.child({ accountId: req.accountId });
      await limits.byAccount(req);
    });

    api.get('/api/v1/openapi.json', { schema: { hide: true } }, async () => app.swagger());

    // A POST that charges or changes state is safe to retry with an Idempotency-Key; a claim holds as long as a request may take.
    const once = { keys: deps.idempotency, leaseMs: settings.requestTimeoutMs };
    // A submission's key keeps one task id, and the ledger sequence after which its one debit is looked for.
    const reserve = async (accountId: string) => ({
      taskId: newTaskId(),
      ledgerSeq: (await deps.ledger.last(accountId))?.seq ?? 0,
    });
    const submit = (endpoint: Endpoint, toJob: (body: unknown) => Job, status: number) =>
      idempotent(
        once,
        async (req, reply, reservation) => {
          let model = 'invalid';
          try {
            const job = toJob(req.body);
            model = job.model;
            // The quote is abandoned when the client hangs up before the answer (the worker stops fetching).
            const gone = new AbortController();
            reply.raw.once('close', () => {
              if (!reply.raw.writableFinished) gone.abort();
            });
            const webhook = await submissionWebhook(req.body, req.accountId, deps.webhooks, deps.webhookPolicy);
            const data = await deps.service.submit(
              req.accountId,
              job,
              endpoint,
              req.log,
              gone.signal,
              webhook,
              reservation,
            );
            metrics.submissions.inc({ model, outcome: 'accepted' });
            return { status, body: successEnvelope(data) };
          } catch (err) {
            metrics.submissions.inc({ model, outcome: toApiError(err).code });
            throw err;
          }
        },
        reserve,
      );

    api.post('/api/v1/estimate', { schema: routeSchemas.estimate }, async (req, reply) => {
      const job = estimateJob(req.body);
      // A webhook_url the submission would refuse is refused here too.
      await submissionWebhook(req.body, req.accountId, deps.webhooks, deps.webhookPolicy);
      // As for a submission: the quote is abandoned when the client hangs up.
      const gone = new AbortController();
      reply.raw.once('close', () => {
        if (!reply.raw.writableFinished) gone.abort();
      });
      return successEnvelope(await deps.service.estimate(req.accountId, job, gone.signal));
    });
    api.post('/api/v1/generate', { schema: routeSchemas.generate }, submit('generate', unifiedJob, 200));
    // Each kind's tool endpoint, with its own status and echo (spec 2.2).
    for (const kind of allKinds()) {
      const tool = kind.tool;
      if (tool !== undefined)
        api.post(
          `/api/v1/tools/${tool.name}`,
          { schema: toolRouteSchema(kind) },
          submit(tool.echo, (b) => tool.parse(b as Record<string, unknown>), tool.status),
        );
    }

    api.get('/api/v1/tasks/:id', { schema: routeSchemas.task }, async (req) => {
      const { id } = req.params as { id: string };
      const task = /^[A-Za-z0-9_-]{1,128}$/.test(id) ? await deps.view.task(req.accountId, id) : null;
      // Another account's task is looked up under the caller's account, so it is simply not there.
      if (task === null) throw taskNotFound(id);
      const view = withSignedLinks(withProgress(taskView(task), task.status, deps.progress), task, links);
      return successEnvelope(await withWebhook(view, task, deps.webhooks));
    });

    registerTaskEvents(api, {
      hub: events,
      progress: deps.progress,
      task: deps.view.task,
      schema: routeSchemas.taskEvents,
    });

    api.post(
      '/api/v1/tasks/:id/webhook/retry',
      { schema: routeSchemas.webhookRetry },
      idempotent(once, async (req) => {
        const { id } = req.params as { id: string };
        const task = /^[A-Za-z0-9_-]{1,128}$/.test(id) ? await deps.tasks.get(req.accountId, id) : null;
        if (task === null) throw taskNotFound(id);
        if (!wantsWebhook(task.value))
          throw ApiError.of(
            'WEBHOOK_NOT_RETRYABLE',
            `Expected a task with a webhook but task ${id} has none (no webhook_url and no default endpoint at submission)`,
          );
        if (task.value.status === 'pending')
          throw ApiError.of(
            'WEBHOOK_NOT_RETRYABLE',
            `Expected a finished task but task ${id} is pending; its webhook is sent when it finishes`,
          );
        await deps.webhooks.enqueue(task.value, true);
        req.log.info({ taskId: id }, 'Webhook queued again');
        return {
          status: 202,
          body: successEnvelope(
            await withWebhook(withSignedLinks(taskView(task.value), task.value, links), task.value, deps.webhooks),
          ),
        };
      }),
    );

    api.post(
      '/api/v1/tasks/:id/cancel',
      { schema: routeSchemas.cancel },
      idempotent(once, async (req) => {
        const { id } = req.params as { id: string };
        if (!/^[A-Za-z0-9_-]{1,128}$/.test(id)) throw taskNotFound(id);
        const task = await deps.service.cancel(req.accountId, id, req.log);
        return { status: 200, body: successEnvelope(taskView(task)) };
      }),
    );

    api.get('/api/v1/tasks', { schema: routeSchemas.history }, async (req) => {
      const query = historyQuery(settings.historyPageSize).safeParse(req.query);
      if (!query.success) throw ApiError.of('INVALID_QUERY', query.error.issues[0]?.message ?? 'Invalid query');
      const page = await historyPage(deps, req.accountId, query.data.limit, query.data.cursor);
      const tasks = await Promise.all(page.ids.map((id) => deps.tasks.get(req.accountId, id)));
      return successEnvelope({
        tasks: tasks.flatMap((t) => (t === null ? [] : [withSignedLinks(taskView(t.value), t.value, links)])),
        nextCursor: page.next,
      });
    });

    api.get('/api/v1/usage', { schema: routeSchemas.usage }, async (req) => {
      const query = usageQuerySchema.safeParse(req.query);
      if (!query.success) throw ApiError.of('INVALID_QUERY', query.error.issues[0]?.message ?? 'Invalid query');
      const page = await usagePage(query.data, {
        entries: (after, limit) => deps.ledger.entries(req.accountId, after, limit),
        taskModel: async (taskId) => (await deps.tasks.get(req.accountId, taskId))?.value.model,
      });
      return successEnvelope({ accountId: req.accountId, ...page });
    });

    api.get('/api/v1/balance', { schema: routeSchemas.balance }, async (req) => {
      return successEnvelope({ accountId: req.accountId, credits: (await deps.view.balance(req.accountId)) ?? 0 });
    });

    // In a scope of its own: the raw-bytes parser must not reach the JSON endpoints.
    if (settings.uploadsEnabled)
      await api.register(async (uploads) => registerUploads(uploads, { ...deps, links, schema: routeSchemas.upload }));
  });

  // Fastify types the instance by its logger; a pino Logger and Fastify's base logger differ only in typing.
  return app as unknown as GatewayApp;
}

/**
 * Links are signed when this gateway serves the files they point to (GATEWAY_SERVE_RESULTS), with
 * GATEWAY_LINK_SECRET, under their public address (RESULTS_BASE_URL, or GATEWAY_PUBLIC_URL +
 * /results/). Serving without either is refused (servedFilesProblem): nothing is served unsigned,
 * and no address is taken from a request's Host header.
 */
export function servedLinks(
  settings: GatewaySettings,
  resultsBaseUrl: string | undefined,
  upscaleResultLifetimeDays: number,
): Links | undefined {
  const problem = servedFilesProblem(settings, resultsBaseUrl);
  if (problem !== null) throw new GatewaySettingsError(problem);
  if (!settings.serveResults || settings.linkSecret === undefined) return undefined;
  const base =
    resultsBaseUrl ?? new URL('results/', `${(settings.publicBaseUrl ?? '').replace(/\/?$/, '/')}`).toString();
  return { signer: linkSigner(settings.linkSecret), base, upscaleResultLifetimeDays };
}

/** A settled task's webhook state is read only for a task that asked for a webhook. */
async function withWebhook(
  view: Record<string, unknown>,
  task: TaskRecord,
  webhooks: WebhookStore,
): Promise<Record<string, unknown>> {
  if (task.status === 'pending' || !wantsWebhook(task)) return view;
  return withWebhookState(view, task, await webhooks.state(task.id));
}

/**
 * GATEWAY_TRUST_PROXY in Fastify's terms (proxy-addr): the client is the first address, walking
 * X-Forwarded-For from the socket leftwards, that is not trusted. A hop count trusts that many
 * hops from the socket (Fastify's own meaning of a number, which its types omit).
 */
function trustProxy(
  setting: GatewaySettings['trustProxy'],
): boolean | string[] | ((address: string, hop: number) => boolean) {
  if (typeof setting === 'number') return (_address, hop) => hop < setting;
  return setting;
}

/** A file is served only through a link this gateway's secret signed and that has not expired. */
async function guardLink(req: FastifyRequest, reply: FastifyReply, links: Links): Promise<void> {
  const url = new URL(req.url, 'http://gateway.invalid');
  const query = {
    expires: url.searchParams.get('expires') ?? undefined,
    sig: url.searchParams.get('sig') ?? undefined,
  };
  const now = Date.now();
  const check = links.signer.check(url.pathname, query, now);
  if (check === 'invalid')
    throw ApiError.of(
      'NOT_FOUND',
      'Expected a link given by this API (with its expires and sig) but received an unsigned or altered one',
    );
  if (check === 'expired')
    throw ApiError.of(
      'LINK_EXPIRED',
      `Expected a link that has not expired but received one that expired at ${new Date(Number(query.expires) * 1000).toISOString()}`,
    );
  const name = path.posix.basename(decodeURIComponent(url.pathname)).replace(/[^A-Za-z0-9._-]/g, '_');
  void reply.headers({
    'content-disposition': `attachment; filename="${name}"`,
    'cache-control': `private, max-age=${Math.max(0, Number(query.expires) - Math.floor(now / 1000))}`,
  });
}

/**
 * One history page. Accounts whose ledger counts debits are paged by place (`n<place>` cursors:
 * the page's cost is its size); older ones by listing their task ids (`t_…` cursors).
 */
async function historyPage(
  deps: AppDeps,
  accountId: string,
  limit: number,
  cursor: string | undefined,
): Promise<{ ids: string[]; next: string | null }> {
  const count = (await deps.ledger.last(accountId))?.value.debits;
  const placeCursor = cursor === undefined ? undefined : /^n(\d{1,15})$/.exec(cursor)?.[1];
  if (count !== undefined && (cursor === undefined || placeCursor !== undefined)) {
    const before = Math.min(count + 1, placeCursor === undefined ? count + 1 : Number(placeCursor));
    const page = await deps.tasks.pageByPlace(accountId, before, limit);
    return { ids: page.ids, next: page.next === null ? null : `n${page.next}` };
  }
  return deps.tasks.listIds(accountId, limit, cursor);
}

/** A pending task shows the worker's latest progress when some gateway heard of it; a settled one forgets it. */
function withProgress(view: Record<string, unknown>, status: string, board: ProgressBoard): Record<string, unknown> {
  const id = view['id'] as string;
  if (status !== 'pending') {
    board.forget(id);
    return view;
  }
  const progress = board.get(id);
  return progress === undefined ? view : { ...view, progress };
}

/**
 * The unified endpoint's body; a kind off it (spec 1.5, 4.1) is pointed to its own endpoint, and the
 * caller chooses neither id nor credits.
 */
function unifiedJob(body: unknown): Job {
  const fields =
    typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>) : undefined;
  if (fields === undefined) return parseJob(body);
  const model = fields['model'];
  const kind = isModelId(model) ? kindContract(kindOfModel(model)) : undefined;
  if (kind !== undefined && !kind.onGenerate) {
    const elsewhere = kind.tool === undefined ? '' : ` (${kind.label}: POST /api/v1/tools/${kind.tool.name})`;
    throw new JobError('UNKNOWN_MODEL', `${expectedValue('model', oneOf(UNIFIED_MODELS), model)}${elsewhere}`);
  }
  return parseJob({ model: fields['model'], input: fields['input'] });
}

function historyQuery(defaultLimit: number) {
  return z.object({
    limit: z.coerce
      .number({ error: (i) => `Expected limit to be an integer from 1 to 100 but received ${JSON.stringify(i.input)}` })
      .int({ error: (i) => `Expected limit to be an integer from 1 to 100 but received ${JSON.stringify(i.input)}` })
      .min(1, { error: (i) => `Expected limit to be an integer from 1 to 100 but received ${JSON.stringify(i.input)}` })
      .max(100, {
        error: (i) => `Expected limit to be an integer from 1 to 100 but received ${JSON.stringify(i.input)}`,
      })
      .default(defaultLimit),
    cursor: z
      .string()
      .regex(/^[A-Za-z0-9_-]{1,128}$/, {
        error: (i) => `Expected cursor to be a task id but received ${JSON.stringify(i.input)}`,
      })
      .optional(),
  });
}

/** RFC 6750: a 401 names the scheme, and says when the key itself was the problem. */
const CHALLENGE = 'Bearer realm="media-worker"';

async function authenticate(req: FastifyRequest, view: PollView): Promise<string> {
  const header = req.headers.authorization;
  const refuse = (message: string, error?: string) =>
    ApiError.of('UNAUTHORIZED', message, {
      'www-authenticate': error === undefined ? CHALLENGE : `${CHALLENGE}, error="${error}"`,
    });
  if (header === undefined) throw refuse('Expected an Authorization header "Bearer <API key>" but received nothing');
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (match === null)
    throw refuse('Expected an Authorization header "Bearer <API key>" but received another scheme', 'invalid_request');
  const accountId = await view.accountOfKey(match[1]!);
  if (accountId === null)
    throw refuse('Expected a valid API key but received an unknown or revoked one', 'invalid_token');
  return accountId;
}

function sendError(reply: FastifyReply, error: ApiError): FastifyReply {
  // Every 503 says when to come back (NATS or no worker answering), unless its error already does.
  const retry = error.status === 503 && !Object.keys(error.headers).some((h) => h.toLowerCase() === 'retry-after');
  const headers = retry ? { ...error.headers, 'Retry-After': String(NATS_RETRY_AFTER_SECONDS) } : error.headers;
  return reply.code(error.status).headers(headers).send(errorEnvelope(error.code, error.message));
}
