/**
 * Prometheus metrics of the gateway, in a registry of its own. The fleet gauges (queue, webhook
 * backlog, poll view) are read when scraped, from samplers the running gateway sets
 * (fleet-gauges.ts); without one they show nothing.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { SECURITY_EVENT_KINDS } from './security-events.js';

/** Reads state when scraped; a failure leaves the gauges as the last scrape set them. */
export type Sampler = () => Promise<void>;

export class GatewayMetrics {
  readonly registry = new Registry();
  /** Set by the running gateway (fleet-gauges.ts). */
  readonly samplers: { queue?: Sampler; webhooks?: Sampler; view?: Sampler } = {};
  /** The queue's two gauges are collected side by side: one read of the queue serves both. */
  #queueRead: Promise<void> | undefined;
  readonly #sampleQueue = (): Promise<void> =>
    (this.#queueRead ??= (this.samplers.queue?.() ?? Promise.resolve()).finally(() => {
      this.#queueRead = undefined;
    }));
  readonly requests = new Histogram({
    name: 'media_gateway_http_request_duration_seconds',
    help: 'HTTP requests by route, method and status.',
    labelNames: ['route', 'method', 'status'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });
  readonly submissions = new Counter({
    name: 'media_gateway_submissions_total',
    help: 'Submissions by model and outcome (accepted or the error code).',
    labelNames: ['model', 'outcome'] as const,
    registers: [this.registry],
  });
  readonly events = new Counter({
    name: 'media_gateway_events_total',
    help: 'Terminal events handled, by result.',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });
  readonly refunds = new Counter({
    name: 'media_gateway_refunds_total',
    help: 'Refunds written to the ledger.',
    registers: [this.registry],
  });
  readonly securityEvents = new Counter({
    name: 'media_gateway_security_events_total',
    help: 'Claims of another part of the service that the gateway checked and refused, by kind (src/gateway/monitoring/security-events.ts).',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });
  readonly viewReads = new Counter({
    name: 'media_gateway_view_reads_total',
    help: 'Poll-view lookups (tasks, balances, keys) by outcome: hit (memory), miss (read the store, then cached), bypass (watch not live: read the store).',
    labelNames: ['family', 'outcome'] as const,
    registers: [this.registry],
  });
  readonly webhookAttempts = new Counter({
    name: 'media_gateway_webhook_attempts_total',
    help: 'Webhook requests by outcome: delivered (2xx), retried, failed (410, or no attempt left), skipped (no endpoint or secret).',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  readonly webhookDuration = new Histogram({
    name: 'media_gateway_webhook_request_duration_seconds',
    help: 'Time of one webhook request, to its answer or failure.',
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15],
    registers: [this.registry],
  });
  readonly exhaustedJobs = new Counter({
    name: 'media_gateway_exhausted_jobs_total',
    help: 'Max-deliveries advisories of the jobs stream handled, by outcome (failed: the task failed and was refunded here).',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  readonly tasksSettled = new Counter({
    name: 'media_gateway_tasks_settled_total',
    help: 'Tasks settled, by kind, status (completed, failed) and error code (empty when completed).',
    labelNames: ['kind', 'status', 'code'] as const,
    registers: [this.registry],
  });
  readonly credits = new Counter({
    name: 'media_gateway_credits_total',
    help: 'Credits debited for accepted submissions and refunded for failed tasks (direction: debited, refunded).',
    labelNames: ['direction'] as const,
    registers: [this.registry],
  });
  readonly quoteDuration = new Histogram({
    name: 'media_gateway_quote_duration_seconds',
    help: 'Time of a quote asked of the workers, to its answer or refusal, by outcome (ok or the error code).',
    labelNames: ['outcome'] as const,
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
    registers: [this.registry],
  });
  readonly natsConnected = new Gauge({
    name: 'media_gateway_nats_connected',
    help: '1 while the gateway is connected to NATS, 0 while it reconnects.',
    registers: [this.registry],
  });
  readonly queueDepth = new Gauge({
    name: 'media_gateway_queue_depth',
    help: 'Jobs in the work queue by kind (waiting or running: a job stays until it is acked), read when scraped.',
    labelNames: ['kind'] as const,
    registers: [this.registry],
    collect: () => this.#sampleQueue(),
  });
  readonly queueOldestAge = new Gauge({
    name: 'media_gateway_queue_oldest_age_seconds',
    help: 'Age of the oldest job in the work queue by kind (0 when none), read when scraped.',
    labelNames: ['kind'] as const,
    registers: [this.registry],
    collect: () => this.#sampleQueue(),
  });
  readonly webhookBacklog = new Gauge({
    name: 'media_gateway_webhook_backlog',
    help: 'Webhook deliveries not yet done (waiting, under way or waiting for a retry), read when scraped.',
    registers: [this.registry],
    collect: () => this.samplers.webhooks?.(),
  });
  readonly viewLive = new Gauge({
    name: 'media_gateway_view_live',
    help: 'Poll view by family (tasks, balances, keys): 1 while its watch is live (polls answered from memory), 0 while polls read the store.',
    labelNames: ['family'] as const,
    registers: [this.registry],
    collect: () => this.samplers.view?.(),
  });
  readonly outbox = new Counter({
    name: 'media_gateway_outbox_debits_total',
    help: 'Debits the outbox consumer made sure of.',
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'media_gateway_' });
    // Shown at 0 from the start, so that an alert on them has a series to watch.
    for (const kind of SECURITY_EVENT_KINDS) this.securityEvents.inc({ kind }, 0);
    for (const direction of ['debited', 'refunded']) this.credits.inc({ direction }, 0);
  }
}
