/**
 * Prometheus metrics of the daemon, in a registry of their own (so that a process embedding the
 * worker keeps its global registry clean). One instance per process: `workerMetrics()`.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { JobKind } from '../jobs/index.js';

/** How a delivery of a job ended, from this worker's point of view. */
export type JobOutcome =
  | 'completed'
  | 'failed'
  /** Handed back with a delay after a transient failure. */
  | 'retried'
  /** Handed back at once because the worker was draining. */
  | 'interrupted'
  /** Handed back unrun: it arrived after a readiness check of its kind failed (disk full). */
  | 'declined'
  /** Its terminal event already existed: acked without work. */
  | 'duplicate'
  /** Another host's claim holds the task (a live lease, or its settlement): handed back unrun. */
  | 'claimed-elsewhere'
  /** This host's lease lapsed and another host took the task over: nothing published, the delivery left alone. */
  | 'lease-lost'
  /** No readable task id: terminated without an event. */
  | 'unidentified'
  /** The terminal event could not be published: left to redelivery. */
  | 'unpublished';

export class WorkerMetrics {
  readonly registry = new Registry();
  readonly jobs = new Counter({
    name: 'media_worker_jobs_total',
    help: 'Job deliveries handled, by kind and outcome.',
    labelNames: ['kind', 'outcome'] as const,
    registers: [this.registry],
  });
  readonly duration = new Histogram({
    name: 'media_worker_job_duration_seconds',
    help: 'Processing time of job deliveries that ran, by kind and outcome.',
    labelNames: ['kind', 'outcome'] as const,
    buckets: [1, 5, 15, 30, 60, 120, 240, 600, 1800],
    registers: [this.registry],
  });
  readonly inFlight = new Gauge({
    name: 'media_worker_jobs_in_flight',
    help: 'Jobs running now, by kind.',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });
  readonly slots = new Gauge({
    name: 'media_worker_slots',
    help: 'Slots pulling jobs, by kind: the configured concurrency while the kind can run here, else 0.',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });
  readonly kindReady = new Gauge({
    name: 'media_worker_kind_ready',
    help: 'Whether jobs of the kind are pulled (1) or left in the stream because a readiness check fails (0); configured kinds only.',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });
  readonly kindCheckFailing = new Gauge({
    name: 'media_worker_kind_check_failing',
    help: 'Readiness checks of each kind: 1 while the check fails (its reason is in the log and /readyz).',
    labelNames: ['kind', 'check'] as const,
    registers: [this.registry],
  });
  readonly leftoversRemoved = new Counter({
    name: 'media_worker_leftovers_removed_total',
    help: 'Job directories and partial files of processes that are gone, removed by the sweep.',
    registers: [this.registry],
  });
  readonly events = new Counter({
    name: 'media_worker_terminal_events_total',
    help: 'Terminal events published by this worker (already-published ones excluded), by status.',
    labelNames: ['status'] as const,
    registers: [this.registry],
  });
  readonly natsConnected = new Gauge({
    name: 'media_worker_nats_connected',
    help: '1 while the worker is connected to NATS, 0 while it reconnects.',
    registers: [this.registry],
  });
  readonly resultsSweepLastSuccess = new Gauge({
    name: 'media_worker_results_sweep_last_success_timestamp_seconds',
    help: 'When the results sweeper last finished a pass with no file it could not check or remove (Unix seconds).',
    registers: [this.registry],
  });
  readonly resultsSweepErrors = new Counter({
    name: 'media_worker_results_sweep_errors_total',
    help: 'Result files the sweeper could not check or remove, and sweeps that failed.',
    registers: [this.registry],
  });
  readonly quotes = new Counter({
    name: 'media_worker_quotes_total',
    help: 'Quote requests answered, by outcome (ok or the error code).',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  readonly executionProvider = new Gauge({
    name: 'media_worker_execution_provider_info',
    help: 'ONNX Runtime execution provider that passed the start-up probe (value 1), with the configured preference.',
    labelNames: ['provider', 'requested'] as const,
    registers: [this.registry],
  });

  readonly srPrecision = new Gauge({
    name: 'media_worker_sr_precision_info',
    help: 'The graph each super-resolution network runs (value 1): its precision (fp32, fp16, int8) and the WORKER_PRECISION setting.',
    labelNames: ['network', 'graph', 'precision', 'requested'] as const,
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'media_worker_' });
  }

  setExecutionProvider(provider: string, requested: string = provider): void {
    this.executionProvider.reset();
    this.executionProvider.set({ provider, requested }, 1);
  }

  setSrPrecision(
    requested: string,
    networks: ReadonlyArray<{ network: string; graph: string; precision: string }>,
  ): void {
    this.srPrecision.reset();
    for (const { network, graph, precision } of networks)
      this.srPrecision.set({ network, graph, precision, requested }, 1);
  }

  recordJob(kind: JobKind, outcome: JobOutcome, seconds?: number): void {
    this.jobs.inc({ kind, outcome });
    if (seconds !== undefined) this.duration.observe({ kind, outcome }, seconds);
  }
}

let instance: WorkerMetrics | undefined;

/** The process's metrics, created on first use. */
export function workerMetrics(): WorkerMetrics {
  instance ??= new WorkerMetrics();
  return instance;
}

/** Called by `serve` once the start-up probe knows which execution provider runs. */
export function setExecutionProvider(provider: string, requested?: string): void {
  workerMetrics().setExecutionProvider(provider, requested);
}

export function setSrPrecision(...args: Parameters<WorkerMetrics['setSrPrecision']>): void {
  workerMetrics().setSrPrecision(...args);
}
