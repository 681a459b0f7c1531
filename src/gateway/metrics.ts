/** Prometheus metrics of the gateway, in a registry of its own. */
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { SECURITY_EVENT_KINDS } from './security-events.js';

export class GatewayMetrics {
  readonly registry = new Registry();
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
  readonly refunds = new Counter({ name: 'media_gateway_refunds_total', help: 'Refunds written to the ledger.', registers: [this.registry] });
  readonly securityEvents = new Counter({
    name: 'media_gateway_security_events_total',
    help: 'Claims of another part of the service that the gateway checked and refused, by kind (src/gateway/security-events.ts).',
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
  readonly outbox = new Counter({ name: 'media_gateway_outbox_debits_total', help: 'Debits the outbox consumer made sure of.', registers: [this.registry] });

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'media_gateway_' });
    // Shown at 0 from the start, so that an alert on them has a series to watch.
    for (const kind of SECURITY_EVENT_KINDS) this.securityEvents.inc({ kind }, 0);
  }
}
