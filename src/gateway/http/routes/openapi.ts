/** GET /api/v1/openapi.json: the document @fastify/swagger builds from the routes' schemas (no key needed). */
import type { FastifyInstance } from 'fastify';

export function registerOpenapi(api: FastifyInstance, app: FastifyInstance): void {
  api.get('/api/v1/openapi.json', { schema: { hide: true } }, async () => app.swagger());
}
