/**
 * The corridor (run-job.ts), quoting (quote-policy.ts), hardware (hardware.ts) and readiness
 * (readiness.ts) with this worker's kinds handed in: each of them takes the kinds' runtime halves
 * as a value (KindRuntimes) and imports none; here they get the registry's (KIND_RUNTIMES,
 * kinds/index.ts). What the command line, the benches and the daemon call, through app/index.ts.
 */
import type { Config } from '../config.js';
import type { Job, JobKind, Quote, QuotePolicy } from '../jobs/index.js';
import type { KindChecks, DiskNeed } from '../worker/index.js';
import * as hardware from './hardware.js';
import type { Engine, TimeLimitsMs } from './kind-runtime.js';
import { KIND_RUNTIMES, type KindStates } from './kinds.js';
import * as policy from './quote-policy.js';
import * as readiness from './readiness.js';
import * as runJob from './run-job.js';
import type { Logger } from '../logger.js';

/** The kinds whose jobs run networks on the execution provider (hardware.ts, providerKinds). */
export const PROVIDER_KINDS: readonly JobKind[] = hardware.providerKinds(KIND_RUNTIMES);

/** Adds the provider check to the kinds that run networks (hardware.ts). */
export function withProviderCheck(checks: KindChecks, shortfall: string | null): KindChecks {
  return hardware.withProviderCheck(KIND_RUNTIMES, checks, shortfall);
}

/** The engine of a process, running this worker's kinds (run-job.ts). */
export function createEngine(config: Config, logger: Logger, timeLimitsMs?: TimeLimitsMs): Engine<KindStates> {
  return runJob.createEngine(KIND_RUNTIMES, config, logger, timeLimitsMs);
}

/** Quote only (run-job.ts), with this worker's kinds' parts of the policy. */
export function quoteOnly(job: Job, config: Config, opts: runJob.QuoteOnlyOptions): Promise<Quote> {
  return runJob.quoteOnly(KIND_RUNTIMES, job, config, opts);
}

/** The quote's policy from the settings (quote-policy.ts), with this worker's kinds' parts. */
export function quotePolicy(config: Config, timeLimitsMs: TimeLimitsMs, explicitModel?: string): QuotePolicy {
  return policy.quotePolicy(KIND_RUNTIMES, config, timeLimitsMs, explicitModel);
}

/** What one job of a kind can need on disk (readiness.ts). */
export function diskNeed(kind: JobKind, config: Config): DiskNeed {
  return readiness.diskNeed(KIND_RUNTIMES, kind, config);
}
