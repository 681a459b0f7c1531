/**
 * The application layer, between the command line and the pipelines: running one job (quote ->
 * pipeline -> stored result), the quote's policy, each kind's readiness, and the daemon's wiring.
 * README "A job's path" follows one job through these files.
 */
export { daemonSettings, startDaemon, withMusicSlot, type Daemon } from './daemon.js';
export { mediaDepsOptions, registryOptions } from './layer-options.js';
export {
  hardwareClassOf,
  quotePolicy,
  srModelForJob,
  srNetworkCost,
  timeLimitsFromEnv,
  workLimits,
  workerCores,
  type TimeLimitsMs,
} from './quote-policy.js';
export { KIND_READINESS, kindChecks, type ReadinessContext } from './readiness.js';
export { createEngine, executeJob, quoteOnly, type Engine, type ExecuteOptions, type ExecutedJob, type StoreResult, type StoredResult } from './run-job.js';
