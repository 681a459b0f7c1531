/**
 * The account's tasks: GET /api/v1/tasks/{id} (spec 2.3: the task, with the latest progress heard
 * while pending), POST /api/v1/tasks/{id}/cancel, and GET /api/v1/tasks (the history, in pages).
 */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { taskView, withSignedLinks } from '../../api-views.js';
import { ApiError, successEnvelope } from '../../errors.js';
import type { ProgressBoard } from '../../progress-board.js';
import { taskNotFound } from '../../service.js';
import type { AppDeps, RouteContext } from '../app-deps.js';
import { idempotent } from '../idempotent-route.js';
import { routeSchemas } from '../openapi-schemas.js';
import { withWebhook } from './webhooks.js';

export function registerTask(api: FastifyInstance, { deps, links }: RouteContext): void {
  api.get('/api/v1/tasks/:id', { schema: routeSchemas.task }, async (req) => {
    const { id } = req.params as { id: string };
    const task = /^[A-Za-z0-9_-]{1,128}$/.test(id) ? await deps.view.task(req.accountId, id) : null;
    // Another account's task is looked up under the caller's account, so it is simply not there.
    if (task === null) throw taskNotFound(id);
    const view = withSignedLinks(withProgress(taskView(task), task.status, deps.progress), task, links);
    return successEnvelope(await withWebhook(view, task, deps.webhooks));
  });
}

export function registerCancel(api: FastifyInstance, { deps, once }: RouteContext): void {
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
}

export function registerHistory(api: FastifyInstance, { deps, links }: RouteContext): void {
  api.get('/api/v1/tasks', { schema: routeSchemas.history }, async (req) => {
    const query = historyQuery(deps.settings.historyPageSize).safeParse(req.query);
    if (!query.success) throw ApiError.of('INVALID_QUERY', query.error.issues[0]?.message ?? 'Invalid query');
    const page = await historyPage(deps, req.accountId, query.data.limit, query.data.cursor);
    const tasks = await Promise.all(page.ids.map((id) => deps.tasks.get(req.accountId, id)));
    return successEnvelope({
      tasks: tasks.flatMap((t) => (t === null ? [] : [withSignedLinks(taskView(t.value), t.value, links)])),
      nextCursor: page.next,
    });
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
