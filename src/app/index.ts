/**
 * The application layer, between the command line and the pipelines: running one job (quote ->
 * pipeline -> stored result), the quote's policy, each kind's readiness, and the daemon's wiring.
 * docs/architecture.md, "A job's path", follows one job through these files.
 */
export { daemonSettings, startDaemon, withConfiguredSlots, type Daemon } from './daemon.js';
export {
  probeHardware,
  srHardwareOptions,
  tensorrtEnvironment,
  tileMemoryBytes,
  workerCores,
  type ProbedHardware,
} from './hardware.js';
export { mediaDepsOptions, registryOptions } from './layer-options.js';
export { hardwareClassOf, srModelForJob, srNetworkCost, timeLimitsFromEnv, workLimits } from './quote-policy.js';
export { readinessChecks } from './readiness.js';
export { KIND_RUNTIMES, RUNTIMES, folderModels, modelGenerators, type KindStates } from './kinds.js';
export type {
  Engine,
  ExecuteOptions,
  KindRuntime,
  KindRuntimes,
  PipelineContext,
  ReadinessContext,
  StoreFile,
  TimeLimitsMs,
  WarmContext,
} from './kind-runtime.js';
export { executeJob, type ExecutedJob } from './run-job.js';
// The corridor, quoting, hardware and readiness with this worker's kinds handed in.
export { PROVIDER_KINDS, createEngine, diskNeed, quoteOnly, quotePolicy, withProviderCheck } from './with-kinds.js';
