/**
 * Settings of the gateway (`media-worker gateway`), in the table shape of src/settings-table.ts.
 * The NATS connection, the stream names and where results live are the protocol's settings
 * (NATS_URL, MEDIA_JOBS_STREAM, RESULTS_DIR, ...; protocol/settings.ts), which the workers read
 * from the same environment, so one environment file serves both.
 */
import { z } from 'zod';
import {
  absoluteUrl,
  booleanSetting,
  intSchema,
  nonEmptyText,
  portNumber,
  positiveInt,
  received,
  setting,
  settingsReader,
  SettingsError,
  tableSchema,
  type SettingsInput,
  type SettingsOf,
} from '../settings-table.js';
import { perKind } from '../protocol/index.js';

const MINUTE_MS = 60_000;

const namePrefix = z.string().regex(/^[A-Za-z0-9_-]{1,32}$/, {
  error: (issue) => `Expected 1 to 32 characters of A-Z, a-z, 0-9, "_" or "-" but received ${received(issue.input)}`,
});

export const GATEWAY_SETTINGS = {
  host: setting({ env: 'GATEWAY_HOST', schema: nonEmptyText, default: '0.0.0.0', doc: 'Address the HTTP API listens on.' }),
  port: setting({ env: 'GATEWAY_PORT', schema: portNumber, default: '8080', doc: 'Port of the HTTP API; 0: any free port.' }),
  streamPrefix: setting({
    env: 'GATEWAY_STREAM_PREFIX',
    schema: namePrefix,
    default: 'GATEWAY',
    doc: 'JetStream streams of the gateway are `<prefix>_ACCOUNTS`, `<prefix>_LEDGER`, `<prefix>_TASKS`; every gateway of a deployment uses the same.',
  }),
  consumerPrefix: setting({
    env: 'GATEWAY_CONSUMER_PREFIX',
    schema: namePrefix,
    default: 'gateway',
    doc: 'Durable consumers `<prefix>-events` (MEDIA_EVENTS) and `<prefix>-outbox` (the ledger); gateways of one deployment share them.',
  }),
  quoteTimeoutMs: setting({
    env: 'GATEWAY_QUOTE_TIMEOUT_MS',
    schema: positiveInt,
    default: '150000',
    doc: 'Longest wait for the worker\'s quote (media.quote) of one submission; above WORKER_QUOTE_TIMEOUT_MS.',
  }),
  quotesPerAccount: setting({
    env: 'GATEWAY_QUOTES_PER_ACCOUNT',
    schema: positiveInt,
    default: '2',
    doc: 'Submissions of one account being priced at once on this gateway; more are refused with 429 TOO_MANY_QUOTES.',
  }),
  pendingLifetimeMs: setting({
    env: 'GATEWAY_PENDING_LIFETIME_MS',
    schema: perKind('a positive integer', { image: 60 * MINUTE_MS, video: 120 * MINUTE_MS, lipsync: 60 * MINUTE_MS, music: 60 * MINUTE_MS }, 1),
    default: `image=${60 * MINUTE_MS},video=${120 * MINUTE_MS},lipsync=${60 * MINUTE_MS},music=${60 * MINUTE_MS}`,
    doc: 'How long a task of each kind may stay pending; then it fails with TASK_EXPIRED and is refunded (once, whatever a worker reports later).',
  }),
  pendingSweepIntervalMs: setting({
    env: 'GATEWAY_PENDING_SWEEP_INTERVAL_MS',
    schema: positiveInt,
    default: '60000',
    doc: 'How often pending tasks are checked against GATEWAY_PENDING_LIFETIME_MS.',
  }),
  bodyLimitBytes: setting({ env: 'GATEWAY_BODY_LIMIT_BYTES', schema: positiveInt, default: '1048576', doc: 'Largest JSON request body.' }),
  requestTimeoutMs: setting({
    env: 'GATEWAY_REQUEST_TIMEOUT_MS',
    schema: positiveInt,
    default: '180000',
    doc: 'Longest time one HTTP request may take (a submission waits for its quote).',
  }),
  keepAliveTimeoutMs: setting({
    env: 'GATEWAY_KEEP_ALIVE_TIMEOUT_MS',
    schema: positiveInt,
    default: '5000',
    doc: 'How long an idle keep-alive connection is kept open between requests.',
  }),
  headersTimeoutMs: setting({
    env: 'GATEWAY_HEADERS_TIMEOUT_MS',
    schema: positiveInt,
    default: '10000',
    doc: 'Longest time a client may take to send a request\'s headers; the connection is closed after it.',
  }),
  rateLimitWindowMs: setting({ env: 'GATEWAY_RATE_LIMIT_WINDOW_MS', schema: positiveInt, default: '60000', doc: 'Window of the request rate limits.' }),
  rateLimitPerAccount: setting({
    env: 'GATEWAY_RATE_LIMIT_PER_ACCOUNT',
    schema: positiveInt,
    default: '1200',
    doc: 'Requests per window of one account (all its keys), per gateway; more get 429 RATE_LIMITED with Retry-After.',
  }),
  rateLimitPerAddress: setting({
    env: 'GATEWAY_RATE_LIMIT_PER_ADDRESS',
    schema: positiveInt,
    default: '2400',
    doc: 'Requests per window from one client address (authenticated or not), per gateway; more get 429 RATE_LIMITED.',
  }),
  trustProxy: setting({
    env: 'GATEWAY_TRUST_PROXY',
    schema: booleanSetting,
    default: 'false',
    doc: 'Behind a reverse proxy: take the client address from X-Forwarded-For (the per-address limit counts it).',
  }),
  shutdownGraceMs: setting({
    env: 'GATEWAY_SHUTDOWN_GRACE_MS',
    schema: positiveInt,
    default: '30000',
    doc: 'On SIGTERM, how long requests in progress may finish before the process exits.',
  }),
  publicBaseUrl: setting({
    env: 'GATEWAY_PUBLIC_URL',
    schema: absoluteUrl,
    doc: 'Public URL of this API (used for upload URLs); unset: http://<host>:<port> of the request.',
  }),
  serveResults: setting({
    env: 'GATEWAY_SERVE_RESULTS',
    schema: booleanSetting,
    default: 'false',
    doc: 'One-host setups: serve RESULTS_DIR under /results/ (range requests), so RESULTS_BASE_URL may point at this gateway.',
  }),
  uploadsEnabled: setting({
    env: 'GATEWAY_UPLOADS',
    schema: booleanSetting,
    default: 'false',
    doc: 'One-host setups: accept POST /api/v1/uploads into RESULTS_DIR/uploads (needs GATEWAY_SERVE_RESULTS).',
  }),
  linkSecret: setting({
    env: 'GATEWAY_LINK_SECRET',
    schema: z.string().min(32, { error: (i) => `Expected at least 32 characters but received ${String(i.input).length}` }),
    doc: 'Secret that signs the expiring links to results and uploads served under /results/; every gateway of a deployment uses the same. Unset: a random one per process (links die with it).',
    secret: true,
  }),
  uploadLifetimeMs: setting({
    env: 'GATEWAY_UPLOAD_LIFETIME_MS',
    schema: positiveInt,
    default: '86400000',
    doc: 'How long an upload\'s link works and its file is kept.',
  }),
  uploadQuotaBytes: setting({
    env: 'GATEWAY_UPLOAD_QUOTA_BYTES',
    schema: positiveInt,
    default: '1073741824',
    doc: 'Bytes of unexpired uploads one account may hold; more are refused with 403 UPLOAD_QUOTA_EXCEEDED.',
  }),
  uploadQuotaFiles: setting({ env: 'GATEWAY_UPLOAD_QUOTA_FILES', schema: positiveInt, default: '100', doc: 'Unexpired uploads one account may hold.' }),
  uploadSweepIntervalMs: setting({
    env: 'GATEWAY_UPLOAD_SWEEP_INTERVAL_MS',
    schema: positiveInt,
    default: '600000',
    doc: 'How often expired uploads (older than GATEWAY_UPLOAD_LIFETIME_MS) are deleted.',
  }),
  uploadMaxBytes: setting({ env: 'GATEWAY_UPLOAD_MAX_BYTES', schema: positiveInt, default: '104857600', doc: 'Largest upload accepted.' }),
  historyPageSize: setting({ env: 'GATEWAY_HISTORY_PAGE_SIZE', schema: intSchema('an integer from 1 to 100', 1, 100), default: '20', doc: 'Default page size of GET /api/v1/tasks.' }),
} as const;

export type GatewaySettings = SettingsOf<typeof GATEWAY_SETTINGS>;
export type GatewaySettingsInput = SettingsInput<typeof GATEWAY_SETTINGS>;

export const gatewaySettingsSchema = tableSchema(GATEWAY_SETTINGS).superRefine((v, ctx) => {
  if (v.uploadsEnabled && !v.serveResults) {
    ctx.addIssue({ code: 'custom', path: ['uploadsEnabled'], message: 'Expected GATEWAY_SERVE_RESULTS=true with GATEWAY_UPLOADS=true but received false' });
  }
});

export class GatewaySettingsError extends SettingsError {}

export const {
  parse: parseGatewaySettings,
  fromEnv: gatewaySettingsFromEnv,
  reference: gatewaySettingsReference,
} = settingsReader(GATEWAY_SETTINGS, gatewaySettingsSchema, GatewaySettingsError);
