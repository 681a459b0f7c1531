/**
 * The orchestrator's endpoints, outside the API (hidden from its document, no key, no rate limit):
 * GET /healthz (the process answers), GET /readyz (503 with the reason until NATS, the streams and
 * the consumers are there) and GET /metrics (Prometheus).
 */
import type { FastifyInstance } from 'fastify';
import type { AppDeps } from '../app-deps.js';

export function registerHealth(app: FastifyInstance, deps: AppDeps): void {
  const { metrics } = deps;
  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }));
  app.get('/readyz', { schema: { hide: true } }, async (_req, reply) => {
    const reason = deps.notReadyReason();
    if (reason !== null) return reply.code(503).send({ status: 'not ready', reason });
    return { status: 'ready' };
  });
  app.get('/metrics', { schema: { hide: true } }, async (_req, reply) => {
    return reply.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });
}
