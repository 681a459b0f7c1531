/**
 * The deliveries: one durable consumer, `<prefix>-webhooks` on `<P>_WEBHOOKS`, shared by every
 * gateway of the deployment, so each queued webhook is sent by one of them at a time. A delivery
 * stays unacknowledged while its request is under way (kept alive with `working()`), so a gateway
 * that dies mid-request leaves it to be redelivered after the ack wait, to itself once restarted or
 * to another gateway. A failed attempt is negatively acknowledged with the schedule's delay (the
 * server keeps it and redelivers it then). The attempt number is the state's count, not the
 * server's delivery count, which also counts redeliveries that made no request (a task not yet
 * stored as settled, a gateway error).
 */
import {
  AckPolicy,
  DeliverPolicy,
  type ConsumerConfig,
  type ConsumerMessages,
  type JetStreamClient,
  type JsMsg,
} from '@nats-io/jetstream';
import { nanos } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import { consumeOptions, messageJson } from '../../protocol/index.js';
import type { GatewayMetrics } from '../monitoring/metrics.js';
import type { TaskRecord } from '../store/records.js';
import type { StoreNames } from '../store/streams.js';
import type { Tasks } from '../store/tasks.js';
import { postWebhook, type DeliveryResult } from './delivery.js';
import {
  deliveryMessageSchema,
  endpointOf,
  signingSecrets,
  webhookEvent,
  type DeliveryMessage,
  type WebhookAccount,
  type WebhookState,
} from './records.js';
import { nextStep } from './schedule.js';
import { webhookHeaders } from './signing.js';
import type { WebhookStore } from './store.js';
import { parseWebhookUrl, type TargetPolicy } from './target.js';
import { storedTraceReader, withParentFrom, withSpan } from '../../telemetry/index.js';

/** The request may take 15 s; the ack wait is what a dead gateway's delivery waits before another takes it. */
export const WEBHOOK_TIMEOUT_MS = 15_000;
const ACK_WAIT_MS = 20_000;
const HEARTBEAT_MS = 5_000;
/** Of an answer's body, this much is read and kept (the state shows the first 256 characters). */
const MAX_RESPONSE_BYTES = 1024;
const SHOWN_BODY_CHARS = 256;
/** Deliveries under way at once per gateway: a slow endpoint does not hold up the others. */
const IN_FLIGHT = 16;
/** Of which one account's may hold this many; its others wait (busyDelayMs) and are offered again. */
export const PER_ACCOUNT = 4;
const BUSY_RETRY_MS = 1000;
/** An account's turned-away deliveries are counted over this window. */
const BUSY_WINDOW_MS = 10_000;
const MAX_BUSY_DELAY_MS = 5 * 60_000;
/** The least a request is taken to hold its slot, for the pace (a request that just began says little). */
const MIN_HELD_MS = 100;

/**
 * How long a delivery turned away (its account's slots all taken) waits before it is offered
 * again: BUSY_RETRY_MS, plus, at random, up to about the time the deliveries this account had
 * turned away lately need to get through its slots at the pace its requests now take (`heldMs`:
 * the oldest of its requests under way). A burst for a fast endpoint goes through in seconds, and
 * thousands of webhooks for a hanging one cost a few redeliveries a second instead of thousands
 * (each was offered again every second). Pure.
 */
export function busyDelayMs(turnedAway: number, heldMs: number, random: () => number = Math.random): number {
  const spread = Math.min(
    MAX_BUSY_DELAY_MS,
    (Math.max(0, turnedAway - PER_ACCOUNT) * Math.max(MIN_HELD_MS, heldMs)) / PER_ACCOUNT,
  );
  return Math.round(BUSY_RETRY_MS + random() * spread);
}

/** One account's deliveries in this gateway: when each request under way began, and those turned away lately. */
interface AccountSlots {
  startedAt: number[];
  turnedAway: number;
  windowStartMs: number;
}
/** A failure of the gateway itself (NATS unreachable): the delivery is tried again after this. */
const INTERNAL_RETRY_MS = 5_000;

export function webhookConsumerConfig(
  names: StoreNames,
  consumerPrefix: string,
): { stream: string; config: ConsumerConfig & { durable_name: string } } {
  return {
    stream: names.webhooksStream,
    config: {
      durable_name: `${consumerPrefix}-webhooks`,
      filter_subject: names.webhookQueueFilter,
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.All,
      ack_wait: nanos(ACK_WAIT_MS),
      // The schedule decides when a delivery ends (nextStep), not a delivery count.
      max_deliver: -1,
      // A delivery waiting for its retry (nak with delay) stays unacknowledged for up to hours. With
      // the server's default cap (1,000) one account with a thousand failing endpoints' webhooks
      // would stop every account's deliveries until its retries came round; waiting costs the
      // server a little memory each, not a slot.
      max_ack_pending: -1,
      description: 'media-worker gateway: webhook deliveries',
    } as ConsumerConfig & { durable_name: string },
  };
}

export interface DeliveryDeps {
  js: JetStreamClient;
  store: WebhookStore;
  tasks: Tasks;
  names: StoreNames;
  consumerPrefix: string;
  policy: TargetPolicy;
  retryDelaysMs: readonly number[];
  /** The request's body: what GET /api/v1/tasks/{id} answers for the task. */
  body(task: TaskRecord): unknown;
  userAgent: string;
  metrics: GatewayMetrics;
  logger: Logger;
}

export async function startWebhookDeliveries(deps: DeliveryDeps): Promise<{ stop(): Promise<void> }> {
  const consumer = await deps.js.consumers.get(deps.names.webhooksStream, `${deps.consumerPrefix}-webhooks`);
  const messages = await consumer.consume(consumeOptions(IN_FLIGHT));
  const loop = run(messages, deps);
  return {
    async stop() {
      await messages.close();
      await loop;
    },
  };
}

async function run(messages: ConsumerMessages, deps: DeliveryDeps): Promise<void> {
  const inFlight = new Set<Promise<void>>();
  const perAccount = new Map<string, AccountSlots>();
  for await (const msg of messages) {
    const parsed = deliveryMessageSchema.safeParse(messageJson(msg));
    if (!parsed.success) {
      deps.logger.error({ subject: msg.subject, seq: msg.seq }, 'Not a webhook delivery; dropped');
      msg.term();
      continue;
    }
    const { accountId } = parsed.data;
    const now = Date.now();
    const slots = perAccount.get(accountId) ?? { startedAt: [], turnedAway: 0, windowStartMs: now };
    perAccount.set(accountId, slots);
    // One account's slow endpoint holds at most its share of this gateway's slots; its other
    // deliveries are offered again later, to any gateway (no attempt is counted).
    if (slots.startedAt.length >= PER_ACCOUNT) {
      if (now - slots.windowStartMs >= BUSY_WINDOW_MS) Object.assign(slots, { turnedAway: 0, windowStartMs: now });
      slots.turnedAway += 1;
      msg.nak(busyDelayMs(slots.turnedAway, now - Math.min(...slots.startedAt)));
      continue;
    }
    slots.startedAt.push(now);
    const one = handle(msg, parsed.data, deps)
      .catch((err: unknown) => {
        deps.logger.warn(
          { err, subject: msg.subject, seq: msg.seq },
          'Webhook delivery failed in the gateway; retried',
        );
        msg.nak(INTERNAL_RETRY_MS);
      })
      .finally(() => {
        slots.startedAt.splice(slots.startedAt.indexOf(now), 1);
        // Kept while its turned-away count matters, so that a burst is paced, then forgotten.
        if (
          slots.startedAt.length === 0 &&
          (slots.turnedAway === 0 || Date.now() - slots.windowStartMs >= BUSY_WINDOW_MS)
        )
          perAccount.delete(accountId);
      });
    inFlight.add(one);
    void one.finally(() => inFlight.delete(one));
    if (inFlight.size >= IN_FLIGHT) await Promise.race(inFlight);
  }
  await Promise.all(inFlight);
}

async function handle(msg: JsMsg, delivery: DeliveryMessage, deps: DeliveryDeps): Promise<void> {
  const log = deps.logger.child({ taskId: delivery.taskId, webhookId: delivery.webhookId });
  const task = (await deps.tasks.get(delivery.accountId, delivery.taskId))?.value;
  // Queued just before its task was stored as settled: wait for that (or for the settle that
  // replaces this delivery with its own, the sweeper's expiry after a crash).
  if (task?.status === 'pending') {
    // Most often it is stored milliseconds later: look again soon, then less and less often.
    msg.nak(Math.min(INTERNAL_RETRY_MS, 100 * 2 ** Math.min(10, msg.info.deliveryCount)));
    return;
  }
  // The task is the one the delivery names, in the state it announces; anything else is not sent.
  if (task === undefined || webhookEvent(task) !== delivery.event) {
    log.warn({ event: delivery.event, status: task?.status }, 'Webhook delivery for a task settled otherwise; dropped');
    msg.term();
    return;
  }
  const previous = await deps.store.state(task.id);
  const attempts = (previous?.attempts ?? 0) + 1;
  const nowMs = Date.now();
  const account = (await deps.store.account(task.accountId))?.value ?? null;
  const target = sendTo(task, account, deps.policy);
  if ('problem' in target) {
    const error = target.problem;
    await deps.store.putState(
      task.id,
      stateOf(
        delivery,
        'failed',
        attempts - 1,
        previous?.lastResponse === undefined ? { error } : { ...previous.lastResponse, error },
      ),
    );
    deps.metrics.webhookAttempts.inc({ outcome: 'skipped' });
    log.warn({ reason: error }, 'Webhook not sent');
    await msg.ackAck();
    return;
  }
  const body = JSON.stringify(deps.body(task));
  const headers = webhookHeaders(
    signingSecrets(target.account, nowMs),
    delivery.webhookId,
    Math.floor(nowMs / 1000),
    body,
  );
  const heartbeat = setInterval(() => msg.working(), HEARTBEAT_MS);
  const timer = deps.metrics.webhookDuration.startTimer();
  let result: DeliveryResult;
  try {
    // Every attempt, however late and from whichever gateway, descends from the submission's span (stored with the task).
    const attributes = {
      'media.task.id': task.id,
      'media.webhook.event': delivery.event,
      'media.webhook.attempt': attempts,
      'server.address': target.url.hostname,
    };
    result = await withParentFrom(storedTraceReader(task.extras.trace), () =>
      withSpan('webhook delivery', { kind: 'client', attributes }, async (span) => {
        const answered = await postWebhook(target.url, headers, body, {
          policy: deps.policy,
          timeoutMs: WEBHOOK_TIMEOUT_MS,
          maxResponseBytes: MAX_RESPONSE_BYTES,
          userAgent: deps.userAgent,
        });
        span.setAttributes(
          answered.status === undefined
            ? { 'error.type': 'no answer' }
            : { 'http.response.status_code': answered.status },
        );
        return answered;
      }),
    );
  } finally {
    clearInterval(heartbeat);
    timer();
  }
  const step = nextStep(result, attempts, deps.retryDelaysMs, Date.now());
  const response = {
    ...(result.status === undefined ? {} : { status: result.status }),
    ...(result.body === undefined || result.body === '' ? {} : { body: result.body.slice(0, SHOWN_BODY_CHARS) }),
    ...(result.error === undefined ? {} : { error: result.error }),
  };
  const lastAttemptAt = new Date(nowMs).toISOString();
  if (step.action === 'retry') {
    await deps.store.putState(task.id, {
      ...stateOf(delivery, 'pending', attempts, response),
      lastAttemptAt,
      nextAttemptAt: new Date(Date.now() + step.delayMs).toISOString(),
    });
    deps.metrics.webhookAttempts.inc({ outcome: 'retried' });
    log.info(
      { attempt: attempts, status: result.status, failure: result.error, delayMs: step.delayMs },
      'Webhook attempt failed; retried later',
    );
    msg.nak(step.delayMs);
    return;
  }
  await deps.store.putState(task.id, { ...stateOf(delivery, step.status, attempts, response), lastAttemptAt });
  if (step.status === 'failed' && step.gone && target.isDefault)
    await deps.store.turnDefaultOff(task.accountId, target.endpoint, lastAttemptAt);
  deps.metrics.webhookAttempts.inc({ outcome: step.status });
  log.info(
    { attempt: attempts, status: result.status, outcome: step.status },
    step.status === 'delivered' ? 'Webhook delivered' : `Webhook given up: ${step.reason}`,
  );
  await msg.ackAck();
}

/** Where the webhook goes now and who signs it, or why it cannot be sent. */
function sendTo(
  task: TaskRecord,
  account: WebhookAccount | null,
  policy: TargetPolicy,
): { account: WebhookAccount; url: URL; endpoint: string; isDefault: boolean } | { problem: string } {
  if (account === null) return { problem: 'the account has no webhook secret' };
  const endpoint = endpointOf(task, account);
  if (endpoint === null) return { problem: "no endpoint: the account's default endpoint was removed or turned off" };
  const parsed = parseWebhookUrl(endpoint.url, policy);
  return 'problem' in parsed
    ? parsed
    : { account, url: parsed.url, endpoint: endpoint.url, isDefault: endpoint.isDefault };
}

function stateOf(
  delivery: DeliveryMessage,
  status: WebhookState['status'],
  attempts: number,
  lastResponse: WebhookState['lastResponse'],
): WebhookState {
  return {
    id: delivery.webhookId,
    event: delivery.event,
    status,
    attempts,
    ...(lastResponse === undefined ? {} : { lastResponse }),
  };
}
