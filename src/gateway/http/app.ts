/**
 * The spec's HTTP API on Fastify, assembled: the plugins, the hooks every request passes (request
 * id, rate limits, authentication, metrics), the error envelope, and the routes, one file per
 * resource under routes/. Fastify gives the request ids in the pino logs, body size limits,
 * timeouts, content-type handling and graceful close; @fastify/swagger turns the route schemas
 * into /api/v1/openapi.json; @fastify/static serves RESULTS_DIR with range requests (routes/files.ts).
 */
import { randomUUID } from 'node:crypto';
import fastifySwagger from '@fastify/swagger';
import Fastify, { LogController, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { PACKAGE_VERSION } from '../../paths.js';
import { resultUrl } from '../../protocol/index.js';
import { taskView, withSignedLinks } from '../api-views.js';
import { ApiError, errorEnvelope, toApiError } from '../errors.js';
import { NATS_RETRY_AFTER_SECONDS } from '../nats-unavailable.js';
import { linkSigner } from '../results/links.js';
import { GatewaySettingsError, servedFilesProblem, type GatewaySettings } from '../settings.js';
import type { TaskRecord } from '../store/records.js';
import { taskEventHub } from '../task-events/hub.js';
import type { AppDeps, Links, RouteContext } from './app-deps.js';
import { authenticate } from './authenticate.js';
import { fromFrameworkError } from './framework-errors.js';
import { useJsonBodyParser } from './json-body.js';
import { withRedactedRequests } from './log-redaction.js';
import { openapiComponentSchemas, routeSchemas, withSubmissionLinks, withUploadLinks } from './openapi-schemas.js';
import { rateLimits } from './rate-limits.js';
import { traceRequests } from './request-spans.js';
import { registerBalance } from './routes/balance.js';
import { registerEstimate } from './routes/estimate.js';
import { registerFiles } from './routes/files.js';
import { registerHealth } from './routes/health.js';
import { registerOpenapi } from './routes/openapi.js';
import { registerSubmissions } from './routes/submissions.js';
import { registerTaskEvents } from './routes/task-events.js';
import { registerCancel, registerHistory, registerTask } from './routes/tasks.js';
import { registerUploads } from './routes/uploads.js';
import { registerUsage } from './routes/usage.js';
import { registerWebhookRetry, withWebhook } from './routes/webhooks.js';

export type { AppDeps, Links };

declare module 'fastify' {
  interface FastifyRequest {
    accountId: string;
  }
}

const HTTP_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;
const UNLIMITED_PATHS = new Set(['/healthz', '/readyz', '/metrics']);

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

  registerHealth(plain, deps);
  if (links !== undefined) await registerFiles(plain, deps, links);

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

    // A POST that charges or changes state is safe to retry with an Idempotency-Key; a claim holds as long as a request may take.
    const context: RouteContext = { deps, links, once: { keys: deps.idempotency, leaseMs: settings.requestTimeoutMs } };
    // In the order the OpenAPI document lists them (its paths are in registration order).
    registerOpenapi(api, plain);
    registerEstimate(api, context);
    registerSubmissions(api, context);
    registerTask(api, context);
    registerTaskEvents(api, {
      hub: events,
      progress: deps.progress,
      task: deps.view.task,
      schema: routeSchemas.taskEvents,
    });
    registerWebhookRetry(api, context);
    registerCancel(api, context);
    registerHistory(api, context);
    registerUsage(api, context);
    registerBalance(api, context);
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

function sendError(reply: FastifyReply, error: ApiError): FastifyReply {
  // Every 503 says when to come back (NATS or no worker answering), unless its error already does.
  const retry = error.status === 503 && !Object.keys(error.headers).some((h) => h.toLowerCase() === 'retry-after');
  const headers = retry ? { ...error.headers, 'Retry-After': String(NATS_RETRY_AFTER_SECONDS) } : error.headers;
  return reply.code(error.status).headers(headers).send(errorEnvelope(error.code, error.message));
}
