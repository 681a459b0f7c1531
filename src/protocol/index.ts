/**
 * The wire between control planes and workers (docs/protocol.md): subjects, message schemas and
 * builders, stream configurations, the NATS connection and the settings every process of a
 * deployment shares. The worker and the gateway both stand on it; neither imports the other.
 */
export { connectNats, connectionOptions } from './connection.js';
export { UnconfirmedPublishError, confirmedAck } from './confirmed-ack.js';
export { unreadableFiles } from './nats-credentials.js';
export {
  completedEvent,
  creationTime,
  failedEvent,
  resultFileSchema,
  terminalEventSchema,
  timestamp,
  type EventTiming,
  type ResultFile,
  type TerminalEvent,
} from './events.js';
export { MAX_ETA_SECONDS, progressMessage, progressMessageSchema, type ProgressMessage } from './progress.js';
export { PROTOCOL_HEADER, PROTOCOL_VERSION, protocolHeaders, protocolMismatch } from './version.js';
export { withTraceHeaders } from './trace-headers.js';
export {
  ABORT_SUBJECT_PREFIX,
  abortSubject,
  cancelReplySchema,
  cancelRequestSchema,
  cancelledError,
  type CancelReply,
  type CancelRequest,
} from './cancel.js';
export {
  backendCapabilitySchema,
  capabilitiesSchema,
  deviceSchema,
  discoverWorkers,
  modelsOfKind,
  whoCanRun,
  type BackendCapability,
  type Capabilities,
  type DeviceInfo,
  type DiscoverOptions,
} from './discovery.js';
export {
  WIRE_SCHEMAS,
  endpointSchemaMetadata,
  wireJsonSchemas,
  wireSchemaPath,
  type WireSchemaName,
} from './wire-schemas.js';
export { resultLifetimeMs, resultUrl, resultsBaseUrl } from './result-url.js';
export {
  RESULT_CONTENT_TYPES,
  UPLOADS_SUBJECT_PREFIX,
  uploadUrlGrantSchema,
  uploadUrlRefusalSchema,
  uploadUrlReplySchema,
  uploadUrlRequestSchema,
  uploadUrlSubject,
  type UploadUrlGrant,
  type UploadUrlRefusal,
  type UploadUrlReply,
  type UploadUrlRequest,
} from './upload-url.js';
export {
  SHA256_METADATA,
  bucketStatus,
  headStoredCopy,
  isCopyOf,
  listObjects,
  objectKey,
  openObjectStore,
  type ListedObject,
  type ObjectStore,
  type ObjectStoreOptions,
  type ObjectStoreSettings,
  type StoredCopy,
} from './object-store.js';
export {
  PROTOCOL_SETTINGS,
  ProtocolSettingsError,
  checkNatsAuth,
  checkResultsStore,
  jetStreamName,
  parseProtocolSettings,
  givenResultsBaseUrl,
  protocolSettingsFor,
  protocolSettingsFromEnv,
  protocolSettingsSchema,
  type ProtocolSettings,
  type ProtocolSettingsInput,
  perKind,
  perKindSetting,
} from './settings.js';
export {
  PROVISION_HINT,
  advisoriesStreamConfig,
  claimsStreamConfig,
  configDifferences,
  eventsStreamConfig,
  streamProblems,
  jobsStreamConfig,
  type DesiredStream,
} from './streams.js';
export {
  CLAIM_OPS,
  MAX_LEASE_MS,
  MIN_LEASE_MS,
  claimHolder,
  claimTask,
  createClaimer,
  leaseOf,
  publishClaim,
  readClaims,
  settlingHost,
  taskLease,
  type ClaimEntry,
  type ClaimOp,
  type ClaimOptions,
  type ClaimResult,
  type TaskLease,
} from './claims.js';
export { retryInPlace, type RetryInPlace } from './retry-in-place.js';
export { PULL_EXPIRES_MS, consumeOptions } from './pull-timing.js';
export {
  CLAIMS_SUBJECT_PREFIX,
  EVENTS_SUBJECT_PREFIX,
  JOBS_SUBJECT_PREFIX,
  PROGRESS_SUBJECT_PREFIX,
  QUOTE_ABANDON_SUBJECT,
  QUOTE_ENDPOINT,
  QUOTE_HEADERS,
  QUOTE_HEARTBEAT_MS,
  QUOTE_STATUS,
  QUOTE_SERVICE_GROUP,
  QUOTE_SERVICE_NAME,
  QUOTE_SUBJECT,
  CANCEL_ENDPOINT,
  CANCEL_SUBJECT,
  CAPABILITIES_SUBJECT,
  TASK_ID_PATTERN,
  advisoriesConsumerName,
  anyHostClaimSubject,
  anyHostEventSubject,
  claimSubject,
  consumerName,
  eventMsgId,
  eventSubject,
  hostAndTask,
  isTaskId,
  jobFilter,
  jobSubject,
  kindOfJobSubject,
  maxDeliveriesAdvisoryFilter,
  progressSubject,
} from './subjects.js';
export {
  MSG_ID_HEADER,
  bodyCredits,
  bodyField,
  decodeBody,
  invalidTaskIdSubject,
  messageJson,
  readTaskId,
  type HeaderReader,
  type TaskIdReading,
} from './task-id.js';
