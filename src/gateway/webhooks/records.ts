/**
 * What the webhooks keep in `<P>_WEBHOOKS` (store/streams.ts), as zod schemas (read back, parsed,
 * never trusted), and the pure rules naming a task's webhook.
 */
import { z } from 'zod';
import type { TaskRecord } from '../store/records.js';

/** How long the secret replaced by a rotation still signs (both signatures are sent meanwhile). */
export const ROTATION_OVERLAP_MS = 24 * 60 * 60 * 1000;

/** An account's webhook settings: its signing secret(s) and its default endpoint. */
export const webhookAccountSchema = z.object({
  secret: z.string(),
  /** The secret a rotation replaced, signing too until `previousUntil`. */
  previousSecret: z.string().optional(),
  previousUntil: z.string().optional(),
  defaultUrl: z.string().optional(),
  /** Set when the default endpoint answered 410 Gone: no webhook goes there until it is set again. */
  defaultOffAt: z.string().optional(),
});
export type WebhookAccount = z.infer<typeof webhookAccountSchema>;

export const WEBHOOK_EVENTS = ['completed', 'failed', 'expired', 'cancelled'] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

/** A delivery waiting in the queue: everything else is read when it is sent. */
export const deliveryMessageSchema = z.object({
  webhookId: z.string(),
  taskId: z.string(),
  accountId: z.string(),
  event: z.enum(WEBHOOK_EVENTS),
});
export type DeliveryMessage = z.infer<typeof deliveryMessageSchema>;

/** What GET /api/v1/tasks/{id} shows of the task's webhook. */
export const webhookStateSchema = z.object({
  id: z.string(),
  event: z.enum(WEBHOOK_EVENTS),
  status: z.enum(['pending', 'delivered', 'failed']),
  attempts: z.number().int().nonnegative(),
  lastAttemptAt: z.string().optional(),
  nextAttemptAt: z.string().optional(),
  lastResponse: z
    .object({ status: z.number().int().optional(), body: z.string().optional(), error: z.string().optional() })
    .optional(),
});
export type WebhookState = z.infer<typeof webhookStateSchema>;

/** The terminal state a settled task's webhook announces; null while it is pending. */
export function webhookEvent(task: Pick<TaskRecord, 'status' | 'error'>): WebhookEvent | null {
  if (task.status === 'pending') return null;
  if (task.status === 'completed') return 'completed';
  if (task.error?.code === 'TASK_EXPIRED') return 'expired';
  if (task.error?.code === 'CANCELLED') return 'cancelled';
  return 'failed';
}

/** `webhook-id`: one per task and event, the same on every attempt. */
export function webhookId(taskId: string, event: WebhookEvent): string {
  return `msg_${taskId}_${event}`;
}

/** Whether the task asked for a webhook: its own `webhook_url`, or the account's default at submission. */
export function wantsWebhook(task: Pick<TaskRecord, 'extras'>): boolean {
  return task.extras.webhookUrl !== undefined || task.extras.webhookDefault === true;
}

/** The secrets that sign at `nowMs`: the current one, and the one a rotation replaced while its overlap lasts. */
export function signingSecrets(account: WebhookAccount, nowMs: number): string[] {
  const previous =
    account.previousSecret !== undefined &&
    account.previousUntil !== undefined &&
    Date.parse(account.previousUntil) > nowMs;
  return previous ? [account.secret, account.previousSecret!] : [account.secret];
}

/** The endpoint of a task's webhook now: its own, else the account's default unless turned off. */
export function endpointOf(
  task: Pick<TaskRecord, 'extras'>,
  account: WebhookAccount | null,
): { url: string; isDefault: boolean } | null {
  if (task.extras.webhookUrl !== undefined) return { url: task.extras.webhookUrl, isDefault: false };
  if (account?.defaultUrl !== undefined && account.defaultOffAt === undefined)
    return { url: account.defaultUrl, isDefault: true };
  return null;
}

/**
 * The polled task with its webhook's state, for a settled task that asked for one (a state not
 * written yet shows as pending, no attempt made).
 */
export function withWebhookState(
  view: Record<string, unknown>,
  task: TaskRecord,
  state: WebhookState | null,
): Record<string, unknown> {
  const event = webhookEvent(task);
  if (event === null || !wantsWebhook(task)) return view;
  return { ...view, webhook: state ?? { id: webhookId(task.id, event), event, status: 'pending', attempts: 0 } };
}

/** Longer than one request may take (15 s) and its state write: see awaitingFirstAttempt. */
export const RETRY_COALESCE_MS = 30_000;

/**
 * Queued (first or by a retry) at most RETRY_COALESCE_MS ago and not tried since: its delivery is
 * waiting or under way. After that long without an attempt (a queue write that failed after its
 * state was written), a retry queues it again.
 */
export function awaitingFirstAttempt(state: WebhookState, id: string, nowMs: number): boolean {
  if (state.id !== id || state.status !== 'pending' || state.attempts !== 0 || state.nextAttemptAt === undefined)
    return false;
  const queuedAt = Date.parse(state.nextAttemptAt);
  return nowMs - queuedAt < RETRY_COALESCE_MS;
}
