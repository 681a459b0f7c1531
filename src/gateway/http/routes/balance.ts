/** GET /api/v1/balance: the account's credits, as polls see them. */
import type { FastifyInstance } from 'fastify';
import { successEnvelope } from '../../errors.js';
import { routeSchemas } from '../openapi-schemas.js';
import type { RouteContext } from '../app-deps.js';

export function registerBalance(api: FastifyInstance, { deps }: RouteContext): void {
  api.get('/api/v1/balance', { schema: routeSchemas.balance }, async (req) => {
    return successEnvelope({ accountId: req.accountId, credits: (await deps.view.balance(req.accountId)) ?? 0 });
  });
}
