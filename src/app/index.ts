/**
 * The application layer, between the command line and the pipelines: running one job (quote ->
 * pipeline -> stored result), the quote's policy, each kind's readiness, and the daemon's wiring.
 * README "A job's path" follows one job through these files.
 */
export { daemonSettings, startDaemon, withConfiguredSlots, type Daemon } from './daemon.js';
export { PROVIDER_KINDS, probeHardware, srHardwareOptions, tensorrtEnvironment, tileMemoryBytes, withProviderCheck, type ProbedHardware } from './hardware.js';
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
export { diskNeed, readinessChecks, type ReadinessContext } from './readiness.js';
export { RUNTIMES, modelGenerators } from './kinds/index.js';
export type { KindRuntime, PipelineContext, WarmContext } from './kind-runtime.js';
export { createEngine, executeJob, quoteOnly, type Engine, type ExecuteOptions, type ExecutedJob, type StoreFile } from './run-job.js';
