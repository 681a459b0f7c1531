/**
 * A task's webhook: POST /api/v1/tasks/{id}/webhook/retry queues its delivery again (docs/contract.md,
 * "Webhooks"), and `withWebhook` adds its delivery state to the task as shown (this route, the task's
 * GET, its live events).
 */
import type { FastifyInstance } from 'fastify';
import { taskView, withSignedLinks } from '../../api-views.js';
import { ApiError, successEnvelope } from '../../errors.js';
import { taskNotFound } from '../../service.js';
import type { TaskRecord } from '../../store/records.js';
import { wantsWebhook, withWebhookState } from '../../webhooks/records.js';
import type { WebhookStore } from '../../webhooks/store.js';
import type { RouteContext } from '../app-deps.js';
import { idempotent } from '../idempotent-route.js';
import { routeSchemas } from '../openapi-schemas.js';

export function registerWebhookRetry(api: FastifyInstance, { deps, links, once }: RouteContext): void {
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
}

/** A settled task's webhook state is read only for a task that asked for a webhook. */
export async function withWebhook(
  view: Record<string, unknown>,
  task: TaskRecord,
  webhooks: WebhookStore,
): Promise<Record<string, unknown>> {
  if (task.status === 'pending' || !wantsWebhook(task)) return view;
  return withWebhookState(view, task, await webhooks.state(task.id));
}
