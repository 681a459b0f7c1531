/**
 * The wire between control planes and workers (docs/protocol.md): subjects, message schemas and
 * builders, stream configurations, the NATS connection and the settings every process of a
 * deployment shares. The worker and the gateway both stand on it; neither imports the other.
 */
export { connectNats, connectionOptions } from './connection.js';
export { completedEvent, creationTime, failedEvent, terminalEventSchema, type EventTiming, type TerminalEvent } from './events.js';
export { progressMessage, type ProgressMessage } from './progress.js';
export { resultLifetimeMs, resultUrl } from './result-url.js';
export {
  PROTOCOL_SETTINGS,
  ProtocolSettingsError,
  checkNatsAuth,
  jetStreamName,
  parseProtocolSettings,
  protocolSettingsFromEnv,
  protocolSettingsSchema,
  type ProtocolSettings,
  type ProtocolSettingsInput,
  perKind,
} from './settings.js';
export { advisoriesStreamConfig, eventsStreamConfig, jobsStreamConfig, type DesiredStream } from './streams.js';
export {
  EVENTS_SUBJECT_PREFIX,
  JOBS_SUBJECT_PREFIX,
  PROGRESS_SUBJECT_PREFIX,
  QUOTE_ABANDON_SUBJECT,
  QUOTE_ENDPOINT,
  QUOTE_HEADERS,
  QUOTE_SERVICE_GROUP,
  QUOTE_SERVICE_NAME,
  QUOTE_SUBJECT,
  TASK_ID_PATTERN,
  advisoriesConsumerName,
  consumerName,
  eventMsgId,
  eventSubject,
  isTaskId,
  jobFilter,
  jobSubject,
  kindOfJobSubject,
  maxDeliveriesAdvisoryFilter,
  progressSubject,
} from './subjects.js';
export { MSG_ID_HEADER, bodyField, decodeBody, messageJson, readTaskId, type HeaderReader, type TaskIdReading } from './task-id.js';
