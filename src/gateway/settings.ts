/**
 * Settings of the gateway (`media-worker gateway`), in the table shape of src/settings-table.ts.
 * The NATS connection, the stream names and where results live are the protocol's settings
 * (NATS_URL, MEDIA_JOBS_STREAM, RESULTS_DIR, ...; protocol/settings.ts), which the workers read
 * from the same environment, so one environment file serves both.
 */
import ipaddr from 'ipaddr.js';
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
import { givenResultsBaseUrl, perKindSetting } from '../protocol/index.js';
import { DEFAULT_RETRY_DELAYS_MS, MIN_RETRY_SPAN_MS, shortestSpanMs } from './webhooks/schedule.js';

const namePrefix = z.string().regex(/^[A-Za-z0-9_-]{1,32}$/, {
  error: (issue) => `Expected 1 to 32 characters of A-Z, a-z, 0-9, "_" or "-" but received ${received(issue.input)}`,
});

/** GATEWAY_WEBHOOK_RETRY_DELAYS_MS: the delays between a webhook's attempts, comma-separated milliseconds. */
const retryDelays = z.string().transform((text, ctx): number[] => {
  const parts = text.split(',').map((p) => p.trim());
  if (parts.length === 0 || parts.some((p) => !/^\d{1,12}$/.test(p) || Number(p) < 1)) {
    ctx.addIssue({
      code: 'custom',
      message: `Expected positive integers (milliseconds) separated by commas but received ${received(text)}`,
    });
    return z.NEVER;
  }
  return parts.map(Number);
});

const PROXY_RANGE_NAMES = ['loopback', 'linklocal', 'uniquelocal'];

/**
 * GATEWAY_TRUST_PROXY: false (no proxy), a hop count, or the proxies' addresses/CIDRs, in the forms
 * Fastify's trustProxy takes (proxy-addr). Never "everyone": with every hop trusted the client
 * address would be the leftmost X-Forwarded-For entry, which the client writes itself.
 */
export const trustedProxies = z.string().transform((text, ctx): false | number | string[] => {
  const value = text.trim().toLowerCase();
  const refuse = (why: string): never => {
    ctx.addIssue({
      code: 'custom',
      message: `Expected false, a hop count (1) or the proxies' addresses or CIDRs (10.0.0.5,10.1.0.0/16) but received ${received(text)}${why}`,
    });
    return z.NEVER;
  };
  if (['', 'false', 'no', 'off'].includes(value)) return false;
  if (['true', 'yes', 'on'].includes(value)) return refuse(' (every address: the client would choose its own address)');
  if (/^\d{1,2}$/.test(value)) return Number(value) === 0 ? false : Number(value);
  const entries = value
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e !== '');
  for (const entry of entries) {
    if (PROXY_RANGE_NAMES.includes(entry)) continue;
    const [address, bits, extra] = entry.split('/');
    const parsed = ipaddr.isValid(address ?? '') ? ipaddr.parse(address ?? '') : null;
    const max = parsed?.kind() === 'ipv6' ? 128 : 32;
    const ok =
      parsed !== null &&
      extra === undefined &&
      (bits === undefined || (/^\d{1,3}$/.test(bits) && Number(bits) >= 1 && Number(bits) <= max));
    if (!ok)
      return refuse(
        bits === '0' ? ' (a /0 range trusts every address)' : ` (${JSON.stringify(entry)} is no address or CIDR)`,
      );
  }
  return entries.length === 0 ? false : entries;
});

export const GATEWAY_SETTINGS = {
  host: setting({
    env: 'GATEWAY_HOST',
    schema: nonEmptyText,
    default: '0.0.0.0',
    doc: 'Address the HTTP API listens on.',
  }),
  port: setting({
    env: 'GATEWAY_PORT',
    schema: portNumber,
    default: '8080',
    doc: 'Port of the HTTP API; 0: any free port.',
  }),
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
    doc: 'Durable consumers `<prefix>-events` (MEDIA_EVENTS), `<prefix>-outbox` (the ledger), `<prefix>-advisories` (MEDIA_JOBS_ADVISORIES) and `<prefix>-webhooks`; gateways of one deployment share them.',
  }),
  quoteTimeoutMs: setting({
    env: 'GATEWAY_QUOTE_TIMEOUT_MS',
    schema: positiveInt,
    default: '150000',
    doc: "Longest wait for the worker's quote (media.quote) of one submission; above WORKER_QUOTE_TIMEOUT_MS.",
  }),
  quotesPerAccount: setting({
    env: 'GATEWAY_QUOTES_PER_ACCOUNT',
    schema: positiveInt,
    default: '2',
    doc: "Submissions of one account being priced at once across the deployment's gateways: each gateway admits this divided by GATEWAY_INSTANCES (at least 1); more are refused with 429 TOO_MANY_QUOTES.",
  }),
  gatewayInstances: setting({
    env: 'GATEWAY_INSTANCES',
    schema: positiveInt,
    default: '1',
    doc: 'How many gateways serve the deployment (the same on each): GATEWAY_QUOTES_PER_ACCOUNT is shared out between them, so the per-account cap holds across gateways without shared state.',
  }),
  pendingLifetimeMs: setting({
    env: 'GATEWAY_PENDING_LIFETIME_MS',
    ...perKindSetting('a positive integer', 'pendingLifetimeMs', 1),
    doc: 'How long a task of each kind may stay pending; then it fails with TASK_EXPIRED and is refunded (once, whatever a worker reports later).',
  }),
  pendingSweepIntervalMs: setting({
    env: 'GATEWAY_PENDING_SWEEP_INTERVAL_MS',
    schema: positiveInt,
    default: '60000',
    doc: 'How often pending tasks are checked against GATEWAY_PENDING_LIFETIME_MS.',
  }),
  viewCacheEntries: setting({
    env: 'GATEWAY_VIEW_CACHE_ENTRIES',
    schema: positiveInt,
    default: '20000',
    doc: 'The most tasks, balances and API keys (each) a gateway keeps in memory to answer polls; the least recently written leave first, a miss reads the store.',
  }),
  viewMaxAgeMs: setting({
    env: 'GATEWAY_VIEW_MAX_AGE_MS',
    schema: positiveInt,
    default: '300000',
    doc: 'The longest a task, balance or API key is answered from memory before it is read from the store again (finished tasks leave after 60 s at most); watches keep them current meanwhile.',
  }),
  bodyLimitBytes: setting({
    env: 'GATEWAY_BODY_LIMIT_BYTES',
    schema: positiveInt,
    default: '65536',
    doc: 'Largest JSON request body (a submission with the longest lyrics, all escaped, is under 50 KB); larger ones get 413 before parsing. Uploads have their own limit (GATEWAY_UPLOAD_MAX_BYTES).',
  }),
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
    doc: "Longest time a client may take to send a request's headers; the connection is closed after it.",
  }),
  rateLimitWindowMs: setting({
    env: 'GATEWAY_RATE_LIMIT_WINDOW_MS',
    schema: positiveInt,
    default: '60000',
    doc: 'Window of the request rate limits.',
  }),
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
    schema: trustedProxies,
    default: 'false',
    doc: "Behind reverse proxies: their addresses or CIDR ranges, comma-separated (`10.0.0.5,10.1.0.0/16`; also `loopback`, `linklocal`, `uniquelocal`), or the number of proxy hops in front of the gateway (`1`). The client address (the per-address limit counts it) is then the rightmost X-Forwarded-For address that is not a trusted proxy. `false` or `0`: the connection's own address. `true` (trust every address) is refused: the client writes the leftmost addresses.",
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
    doc: "Public URL of this API (upload links are built under it when RESULTS_BASE_URL is unset); with GATEWAY_SERVE_RESULTS or GATEWAY_UPLOADS, this or RESULTS_BASE_URL is required: no URL is built from a request's Host header.",
  }),
  serveResults: setting({
    env: 'GATEWAY_SERVE_RESULTS',
    schema: booleanSetting,
    default: 'false',
    doc: 'One-host setups: serve RESULTS_DIR under /results/ (range requests, signed expiring links only), so RESULTS_BASE_URL may point at this gateway; needs GATEWAY_LINK_SECRET and RESULTS_BASE_URL or GATEWAY_PUBLIC_URL.',
  }),
  uploadsEnabled: setting({
    env: 'GATEWAY_UPLOADS',
    schema: booleanSetting,
    default: 'false',
    doc: 'Accept POST /api/v1/uploads: into RESULTS_DIR/uploads, or into the results bucket when RESULTS_STORE is s3 or upload-url (needs GATEWAY_SERVE_RESULTS).',
  }),
  linkSecret: setting({
    env: 'GATEWAY_LINK_SECRET',
    schema: z
      .string()
      .min(32, { error: (i) => `Expected at least 32 characters but received ${String(i.input).length}` }),
    doc: 'Secret that signs the expiring links to results and uploads served under /results/; every gateway of a deployment uses the same. Required with GATEWAY_SERVE_RESULTS or GATEWAY_UPLOADS (the gateway refuses to start without it).',
    secret: true,
  }),
  uploadLifetimeMs: setting({
    env: 'GATEWAY_UPLOAD_LIFETIME_MS',
    schema: positiveInt,
    default: '86400000',
    doc: "How long an upload's link works and its file is kept.",
  }),
  uploadQuotaBytes: setting({
    env: 'GATEWAY_UPLOAD_QUOTA_BYTES',
    schema: positiveInt,
    default: '1073741824',
    doc: 'Bytes of unexpired uploads one account may hold; more are refused with 403 UPLOAD_QUOTA_EXCEEDED.',
  }),
  uploadQuotaFiles: setting({
    env: 'GATEWAY_UPLOAD_QUOTA_FILES',
    schema: positiveInt,
    default: '100',
    doc: 'Unexpired uploads one account may hold.',
  }),
  uploadSweepIntervalMs: setting({
    env: 'GATEWAY_UPLOAD_SWEEP_INTERVAL_MS',
    schema: positiveInt,
    default: '600000',
    doc: 'How often expired uploads (older than GATEWAY_UPLOAD_LIFETIME_MS) are deleted.',
  }),
  uploadMaxBytes: setting({
    env: 'GATEWAY_UPLOAD_MAX_BYTES',
    schema: positiveInt,
    default: '104857600',
    doc: 'Largest upload accepted.',
  }),
  webhookAllowLoopback: setting({
    env: 'GATEWAY_WEBHOOK_ALLOW_LOOPBACK',
    schema: booleanSetting,
    default: 'false',
    doc: 'Development and tests only: webhooks may go to loopback addresses, over plain http too (otherwise only https to public addresses), and GATEWAY_WEBHOOK_RETRY_DELAYS_MS may retry for less than 24 h.',
  }),
  webhookRetryDelaysMs: setting({
    env: 'GATEWAY_WEBHOOK_RETRY_DELAYS_MS',
    schema: retryDelays,
    default: DEFAULT_RETRY_DELAYS_MS.join(','),
    doc: 'Delays between the attempts of a webhook, each with ±10 % jitter (docs/contract.md, "Webhooks"); their sum less the jitter must reach 24 h.',
  }),
  eventStreams: setting({
    env: 'GATEWAY_EVENT_STREAMS',
    schema: positiveInt,
    default: '5000',
    doc: 'Open live-event streams (GET /api/v1/tasks/{id}/events) this gateway holds; more get 429 TOO_MANY_STREAMS.',
  }),
  eventStreamsPerAccount: setting({
    env: 'GATEWAY_EVENT_STREAMS_PER_ACCOUNT',
    schema: positiveInt,
    default: '50',
    doc: 'Open live-event streams one account holds on this gateway; more get 429 TOO_MANY_STREAMS.',
  }),
  eventHeartbeatMs: setting({
    env: 'GATEWAY_EVENT_HEARTBEAT_MS',
    schema: positiveInt,
    default: '15000',
    doc: 'Interval of the comment line that keeps an idle live-event stream open (and of its check that its task has not settled unheard).',
  }),
  historyPageSize: setting({
    env: 'GATEWAY_HISTORY_PAGE_SIZE',
    schema: intSchema('an integer from 1 to 100', 1, 100),
    default: '20',
    doc: 'Default page size of GET /api/v1/tasks.',
  }),
} as const;

export type GatewaySettings = SettingsOf<typeof GATEWAY_SETTINGS>;
export type GatewaySettingsInput = SettingsInput<typeof GATEWAY_SETTINGS>;

export const gatewaySettingsSchema = tableSchema(GATEWAY_SETTINGS).superRefine((v, ctx) => {
  if (v.uploadsEnabled && !v.serveResults) {
    ctx.addIssue({
      code: 'custom',
      path: ['uploadsEnabled'],
      message: 'Expected GATEWAY_SERVE_RESULTS=true with GATEWAY_UPLOADS=true but received false',
    });
  }
  if (!v.webhookAllowLoopback && shortestSpanMs(v.webhookRetryDelaysMs) < MIN_RETRY_SPAN_MS) {
    ctx.addIssue({
      code: 'custom',
      path: ['webhookRetryDelaysMs'],
      message: `Expected delays retrying a webhook for at least 24 h (${MIN_RETRY_SPAN_MS} ms, less 10 % jitter each) but received ${Math.round(shortestSpanMs(v.webhookRetryDelaysMs))} ms`,
    });
  }
});

export class GatewaySettingsError extends SettingsError {}

const reader = settingsReader(GATEWAY_SETTINGS, gatewaySettingsSchema, GatewaySettingsError);

export const { parse: parseGatewaySettings, reference: gatewaySettingsReference } = reader;

/**
 * The gateway's settings from the environment, refused (naming the variables) when they would
 * serve files open: see servedFilesProblem. RESULTS_BASE_URL is the protocol's setting, read through it.
 */
export function gatewaySettingsFromEnv(
  env: NodeJS.ProcessEnv = process.env,
  overrides: GatewaySettingsInput = {},
): GatewaySettings {
  const settings = reader.fromEnv(env, overrides);
  const problem = servedFilesProblem(settings, givenResultsBaseUrl(env));
  if (problem !== null) throw new GatewaySettingsError(problem);
  return settings;
}

/**
 * Files are served (results, uploads) only through signed links under a public address this
 * gateway was told: without GATEWAY_LINK_SECRET every file would be served unsigned (or signed by a
 * secret that dies with the process), and without RESULTS_BASE_URL or GATEWAY_PUBLIC_URL links
 * would have to be built from the request's Host header, which the client writes. Fail closed.
 */
export function servedFilesProblem(
  settings: Pick<GatewaySettings, 'serveResults' | 'uploadsEnabled' | 'linkSecret' | 'publicBaseUrl'>,
  resultsBaseUrl: string | undefined,
): string | null {
  if (!settings.serveResults && !settings.uploadsEnabled) return null;
  const missing = [
    ...(settings.linkSecret === undefined ? ['GATEWAY_LINK_SECRET'] : []),
    ...(resultsBaseUrl === undefined && settings.publicBaseUrl === undefined
      ? ['RESULTS_BASE_URL or GATEWAY_PUBLIC_URL']
      : []),
  ];
  if (missing.length === 0) return null;
  const serving = settings.uploadsEnabled
    ? 'GATEWAY_SERVE_RESULTS=true and GATEWAY_UPLOADS=true'
    : 'GATEWAY_SERVE_RESULTS=true';
  return `Invalid setting ${settings.serveResults ? 'GATEWAY_SERVE_RESULTS' : 'GATEWAY_UPLOADS'}: Expected ${missing.join(' and ')} to be set with ${serving} (files are served only through signed links under a configured public address) but received ${missing.length === 1 ? 'it' : 'them'} unset`;
}
