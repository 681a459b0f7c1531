/**
 * The daemon behind `media-worker serve`: jobs from NATS JetStream, one terminal event per task,
 * the quote service, results storage, health and metrics. docs/protocol.md describes the wire.
 */
export { startWorker, type WorkerDeps, type WorkerHandle } from './worker.js';
export type { JobContext, JobExecutor, JobOutput, QuoteFunction, WorkerState } from './types.js';
export {
  WORKER_SETTINGS,
  WorkerSettingsError,
  concurrencyGiven,
  parseWorkerSettings,
  workerSettingsFromEnv,
  workerSettingsReference,
  workerSettingsSchema,
  type WorkerSettingKey,
  type WorkerSettings,
  type WorkerSettingsInput,
} from './settings.js';
export {
  LocalResultStore,
  createResultStore,
  resultLifetimeMs,
  type LocalStoredResult,
  type ResultStore,
  type ResultStoreSettings,
  type StoreOptions,
  type StoredResult,
  type SweepReport,
} from './results.js';
export { S3ResultStore, permanentStoreError, type S3ResultStoreSettings, type UploadShape } from './s3-results.js';
export { UploadRefused, UploadUrlResultStore, type UploadUrlStoreSettings } from './upload-url-results.js';
export { WorkerMetrics, setExecutionProvider, setSrPrecision, workerMetrics, type JobOutcome } from './metrics.js';
export { decideFailure, type Disposition } from './outcome.js';
export { TopologyError, checkTopology, ensureTopology } from './topology.js';
export { type KindChecks, type ReadinessCheck } from './availability.js';
export { type DiskNeed, diskSpaceCheck } from './disk-space.js';
export { stepTiming, withStepClock, type StepClockOptions, type StepState } from './step-clock.js';
