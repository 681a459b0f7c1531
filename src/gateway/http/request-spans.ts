/**
 * An HTTP server span per request, only while tracing is on (telemetry/): the root of a trace of
 * the gateway's own, linked to the client's traceparent when it sends a valid one, and everything
 * the request does (the quote, the debit, the job's publication) runs inside it. Probes and metrics
 * scrapes get none.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { startServerSpan, tracingOn, type ServerSpan } from '../../telemetry/index.js';

const UNTRACED_PATHS = new Set(['/healthz', '/readyz', '/metrics']);

/**
 * The longest `url.path` a span records. The path is the client's, recorded before any route
 * refuses it, and exported as given: without a bound every request could put kilobytes into the
 * batch queue and the collector. The longest route path (a task's webhook retry) is far below it.
 */
export const MAX_RECORDED_PATH_CHARS = 512;

function recordedPath(path: string): string {
  return path.length > MAX_RECORDED_PATH_CHARS ? `${path.slice(0, MAX_RECORDED_PATH_CHARS - 1)}…` : path;
}

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

export function traceRequests(app: FastifyInstance): void {
  if (!tracingOn()) return;
  const spans = new WeakMap<FastifyRequest, ServerSpan>();
  // Callback style: the rest of the request's hooks and its handler run inside `span.run(done)`.
  app.addHook('onRequest', (req, reply, done) => {
    const path = req.url.split('?')[0] ?? '';
    if (UNTRACED_PATHS.has(path)) return done();
    const route = req.routeOptions.url;
    const span = startServerSpan(
      route === undefined ? req.method : `${req.method} ${route}`,
      (name) => headerValue(req.headers[name]),
      {
        'http.request.method': req.method,
        'url.path': recordedPath(path),
        ...(route === undefined ? {} : { 'http.route': route }),
      },
    );
    if (span === null) return done();
    spans.set(req, span);
    // The body arrives in events of the request stream, outside the hook's call: bound to the span too.
    span.bind(req.raw);
    span.bind(reply.raw);
    span.run(done);
  });
  app.addHook('onResponse', (req, reply, done) => {
    spans.get(req)?.end({ 'http.response.status_code': reply.statusCode }, reply.statusCode >= 500);
    done();
  });
  app.addHook('onRequestAbort', (req, done) => {
    spans.get(req)?.end({ 'error.type': 'client closed the request' }, false);
    done();
  });
}
