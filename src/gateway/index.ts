/** The reference control plane: the spec's HTTP API over the worker protocol. */
export { startGateway, type GatewayHandle } from './gateway.js';
export {
  gatewaySettingsFromEnv,
  gatewaySettingsReference,
  parseGatewaySettings,
  GATEWAY_SETTINGS,
  type GatewaySettings,
} from './settings.js';
export { openStore, type Store } from './store/index.js';
export type { LedgerEntry } from './store/records.js';
export { ensureConsumers } from './settlement/consumers.js';
export { ensureStoreStreams, storeNames, streamConfigs } from './store/streams.js';
export { destinationProblem, parseWebhookUrl } from './webhooks/target.js';
export { eventOrigin, type EventOrigin } from './settlement/event-origin.js';
export {
  UPLOAD_URL_LIFETIME_S,
  presignUpload,
  startUploadUrls,
  uploadRefusal,
  type Presigning,
} from './results/upload-urls.js';
