/**
 * The daemon behind `media-worker serve`: jobs from NATS JetStream, one terminal event per task,
 * the quote service, results storage, health and metrics. docs/protocol.md describes the wire.
 */
export { startWorker, type WorkerDeps, type WorkerHandle } from './worker.js';
export type { JobContext, JobExecutor, JobOutput, QuoteFunction, WorkerState } from './types.js';
export {
  JOB_KINDS,
  WORKER_SETTINGS,
  WorkerSettingsError,
  parseWorkerSettings,
  workerSettingsFromEnv,
  workerSettingsReference,
  workerSettingsSchema,
  type WorkerSettingKey,
  type WorkerSettings,
  type WorkerSettingsInput,
} from './settings.js';
export {
  ResultStore,
  createResultStore,
  resultLifetimeMs,
  resultUrl,
  type ResultStoreSettings,
  type StoreOptions,
  type StoredResult,
  type SweepReport,
} from './results.js';
export { WorkerMetrics, setExecutionProvider, workerMetrics, type JobOutcome } from './metrics.js';
export { completedEvent, failedEvent, terminalEventSchema, type TerminalEvent } from './events.js';
export { progressMessage, type ProgressMessage } from './progress.js';
export { decideFailure, type Disposition } from './outcome.js';
export { messageJson } from './task-id.js';
export {
  EVENTS_SUBJECT_PREFIX,
  JOBS_SUBJECT_PREFIX,
  PROGRESS_SUBJECT_PREFIX,
  QUOTE_ENDPOINT,
  QUOTE_SERVICE_NAME,
  QUOTE_SUBJECT,
  QUOTE_ABANDON_SUBJECT,
  QUOTE_HEADERS,
  consumerName,
  eventMsgId,
  eventSubject,
  isTaskId,
  jobSubject,
  progressSubject,
} from './subjects.js';
export { TopologyError, ensureTopology, eventsStreamConfig, jobsStreamConfig } from './topology.js';
export { type KindChecks, type ReadinessCheck } from './availability.js';
export { connectNats } from './connection.js';
export { type DiskNeed, diskSpaceCheck } from './disk-space.js';
