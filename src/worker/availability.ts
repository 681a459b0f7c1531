/**
 * Which kinds this host can run right now. Each kind has a list of checks (its models present and
 * loadable, its directories writable, enough free disk, a generation backend ready, ...), handed in by
 * whoever composes the worker (the CLI's `serve`, src/app/readiness.ts): the daemon itself knows no
 * pipeline. A kind is pulled only while every one of its checks passes, so a host that cannot run
 * a job leaves it in the stream for one that can, instead of taking it and failing it.
 *
 * Checks run at start, then every interval; those marked `beforeEachPull` (cheap ones, a statfs)
 * also right before a slot asks for a job. Every change is logged, reported by /readyz and by the
 * `media_worker_kind_ready` and `media_worker_kind_check_failing` metrics.
 */
import type { Logger } from 'pino';
import type { JobKind } from '../jobs/index.js';
import type { WorkerMetrics } from './metrics.js';
import { JOB_KINDS } from '../jobs/index.js';
import { sleep } from '../sleep.js';

export interface ReadinessCheck {
  /** Short, stable name (a metric label): `results-dir`, `sr-models`, `disk-space`, a kind's own (src/app/kinds/). */
  name: string;
  /** Also run right before every pull (must be cheap). */
  beforeEachPull?: boolean;
  /** null when the kind can run as far as this check knows, else why not (one line, for people). */
  run(): Promise<string | null>;
}

/** Checks per kind; one check object may serve several kinds (it then runs once per round). */
export type KindChecks = Partial<Record<JobKind, readonly ReadinessCheck[]>>;

export interface KindStatus {
  /** Configured slots (WORKER_CONCURRENCY); 0: not served by configuration. */
  slots: number;
  /** Served now: slots configured and every check passing. */
  ready: boolean;
  /** Why not, one entry per failing check (`<check>: <reason>`). */
  reasons: string[];
}

export interface AvailabilityOptions {
  slots: Readonly<Record<JobKind, number>>;
  checks: KindChecks;
  metrics: WorkerMetrics;
  logger: Logger;
  /** How often a slot waiting for its kind re-runs the per-pull checks. */
  pollMs?: number;
}

export class Availability {
  readonly #slots: Readonly<Record<JobKind, number>>;
  readonly #checks: KindChecks;
  readonly #metrics: WorkerMetrics;
  readonly #logger: Logger;
  readonly #pollMs: number;
  /** Last result of each check (null: passing). */
  readonly #results = new Map<ReadinessCheck, string | null>();
  readonly #announced = new Map<JobKind, string>();
  readonly #whenUnready = new Set<(kind: JobKind) => void>();
  #round: Promise<void> | undefined;

  constructor(options: AvailabilityOptions) {
    this.#slots = options.slots;
    this.#checks = options.checks;
    this.#metrics = options.metrics;
    this.#logger = options.logger;
    this.#pollMs = options.pollMs ?? 1000;
  }

  /** The kinds with slots configured. */
  servedKinds(): JobKind[] {
    return JOB_KINDS.filter((kind) => this.#slots[kind] > 0);
  }

  /** Runs every check of the served kinds once (concurrent calls share one round). */
  refresh(): Promise<void> {
    this.#round ??= this.#runChecks(this.servedKinds(), () => true).finally(() => {
      this.#round = undefined;
    });
    return this.#round;
  }

  /** Runs the kind's per-pull checks (cheap ones) and says whether the kind may be pulled. */
  async readyToPull(kind: JobKind): Promise<boolean> {
    await this.#runChecks([kind], (check) => check.beforeEachPull === true);
    return this.isReady(kind);
  }

  isReady(kind: JobKind): boolean {
    return this.#slots[kind] > 0 && this.#reasonsOf(kind).length === 0;
  }

  status(): Record<JobKind, KindStatus> {
    const out = {} as Record<JobKind, KindStatus>;
    for (const kind of JOB_KINDS)
      out[kind] = { slots: this.#slots[kind], ready: this.isReady(kind), reasons: this.#reasonsOf(kind) };
    return out;
  }

  /**
   * Null when at least one served kind can run; else why not (every served kind with its reasons).
   * A host serving image but not another kind is ready: it does useful work, and /readyz lists the rest.
   */
  notReadyReason(): string | null {
    const served = this.servedKinds();
    if (served.length === 0) return 'no kind is served (WORKER_CONCURRENCY is 0 for every kind)';
    if (served.some((kind) => this.isReady(kind))) return null;
    return `no kind can run here: ${served.map((kind) => `${kind} (${this.#reasonsOf(kind).join('; ')})`).join(', ')}`;
  }

  /**
   * Resolves true once the kind may be pulled (its per-pull checks re-run every poll), false when
   * `signal` aborts first (the worker drains).
   */
  async waitUntilReady(kind: JobKind, signal: AbortSignal): Promise<boolean> {
    while (!signal.aborted) {
      if (await this.readyToPull(kind)) return true;
      await sleep(this.#pollMs, signal);
    }
    return false;
  }

  /**
   * Calls `listener` each time a kind stops being ready (slots withdraw their open pull requests,
   * so a job is not delivered to a host that just became unable to run it). Returns the unsubscriber.
   */
  onUnready(listener: (kind: JobKind) => void): () => void {
    this.#whenUnready.add(listener);
    return () => this.#whenUnready.delete(listener);
  }

  /** Re-runs every check every `intervalMs`; returns the function that stops it. */
  start(intervalMs: number): () => void {
    const timer = setInterval(() => {
      this.refresh().catch((err: unknown) => this.#logger.error({ err }, 'Readiness checks failed to run'));
    }, intervalMs);
    timer.unref();
    return () => clearInterval(timer);
  }

  #reasonsOf(kind: JobKind): string[] {
    const reasons: string[] = [];
    for (const check of this.#checks[kind] ?? []) {
      const result = this.#results.get(check);
      if (result !== null && result !== undefined) reasons.push(`${check.name}: ${result}`);
    }
    return reasons;
  }

  async #runChecks(kinds: readonly JobKind[], which: (check: ReadinessCheck) => boolean): Promise<void> {
    const checks = new Set<ReadinessCheck>();
    for (const kind of kinds) for (const check of this.#checks[kind] ?? []) if (which(check)) checks.add(check);
    await Promise.all(
      [...checks].map(async (check) => {
        let result: string | null;
        try {
          result = await check.run();
        } catch (err) {
          result = err instanceof Error ? (err.message.split('\n', 1)[0] ?? err.message) : String(err);
        }
        this.#results.set(check, result);
      }),
    );
    for (const kind of kinds) this.#publish(kind);
  }

  /** Metrics always; a log line when what a kind reports changes. */
  #publish(kind: JobKind): void {
    const slots = this.#slots[kind];
    const ready = this.isReady(kind);
    this.#metrics.kindReady.set({ kind }, ready ? 1 : 0);
    this.#metrics.slots.set({ kind }, ready ? slots : 0);
    for (const check of this.#checks[kind] ?? []) {
      const result = this.#results.get(check);
      if (result !== undefined)
        this.#metrics.kindCheckFailing.set({ kind, check: check.name }, result === null ? 0 : 1);
    }
    const reasons = this.#reasonsOf(kind);
    const summary = ready ? 'ready' : reasons.join('; ');
    if (this.#announced.get(kind) === summary) return;
    const first = !this.#announced.has(kind);
    const wasReady = this.#announced.get(kind) === 'ready';
    this.#announced.set(kind, summary);
    if (wasReady && !ready) for (const listener of this.#whenUnready) listener(kind);
    if (ready)
      this.#logger.info(
        { kind, slots },
        first ? `Serving ${kind} jobs` : `Serving ${kind} jobs again: its checks pass`,
      );
    else
      this.#logger.warn(
        { kind, slots, reasons },
        `Not serving ${kind} jobs (left in the stream for hosts that can run them): ${summary}`,
      );
  }
}
