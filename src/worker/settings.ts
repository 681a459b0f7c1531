/**
 * Every setting of the daemon (`media-worker serve`), in the same table shape as src/config.ts:
 * the environment variable, a zod schema that accepts the environment's spelling (a string) as
 * well as an already typed value, the default as the environment would spell it, and one line of
 * documentation. `workerSettingsSchema` is the same table as one zod object, for callers that
 * build settings in code (tests, the CLI's composition of the global config).
 *
 * The NATS connection, stream names and where results live are the protocol's settings
 * (protocol/settings.ts), shared with the gateway; consumer names are cluster-wide too: every host
 * of one deployment must use the same ones (docs/protocol.md).
 */
import os from 'node:os';
import { z } from 'zod';
import {
  MAX_LEASE_MS,
  MIN_LEASE_MS,
  PROTOCOL_SETTINGS,
  checkNatsAuth,
  checkResultsStore,
  jetStreamName,
  perKindSetting,
} from '../protocol/settings.js';
import {
  intSchema,
  nonEmptyText,
  nonNegativeInt,
  oneOfSetting,
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

const delayList = z.union([z.string(), z.array(z.number())]).transform((input, ctx): number[] => {
  const parts =
    typeof input === 'string'
      ? input
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean)
      : input;
  const out: number[] = [];
  for (const part of parts) {
    const parsed = nonNegativeInt.safeParse(part);
    if (!parsed.success) {
      ctx.addIssue({
        code: 'custom',
        message: `Expected a comma-separated list of non-negative integers but received ${received(input)}`,
      });
      return z.NEVER;
    }
    out.push(parsed.data);
  }
  if (out.length === 0) {
    ctx.addIssue({ code: 'custom', message: `Expected at least one delay but received ${received(input)}` });
    return z.NEVER;
  }
  return out;
});

const MINUTE = 60_000;

/** The host name as one subject token (the default of WORKER_HOST_ID). */
const HOSTNAME_TOKEN =
  os
    .hostname()
    .replace(/[^A-Za-z0-9_-]/g, '-')
    .slice(0, 64) || 'host';

/** The daemon's own rows; WORKER_SETTINGS adds the protocol's. */
export const DAEMON_SETTINGS = {
  consumerPrefix: setting({
    env: 'MEDIA_CONSUMER_PREFIX',
    schema: jetStreamName,
    default: 'media-worker',
    doc: "Durable consumer names are `<prefix>-<kind>` (the max-deliveries advisories have the gateway's durable, GATEWAY_CONSUMER_PREFIX).",
  }),
  hostId: setting({
    env: 'WORKER_HOST_ID',
    schema: jetStreamName,
    default: HOSTNAME_TOKEN,
    doc: "This host's identity in the protocol: its claims and events are published on `media.claims.<id>.<task>` and `media.events.<id>.<task>`, which its NATS user alone may publish (deploy/nats/media-users.conf); a task is settled only by the host whose claim holds it (docs/protocol.md).",
  }),
  claimLeaseMs: setting({
    env: 'WORKER_CLAIM_LEASE_MS',
    schema: intSchema(`an integer from ${MIN_LEASE_MS} to ${MAX_LEASE_MS}`, MIN_LEASE_MS, MAX_LEASE_MS),
    default: '30000',
    doc: 'How long this host\'s claim of a task holds it from when the server stored it; renewed with each heartbeat (WORKER_HEARTBEAT_MS, which must be below it). A task whose host died is taken over by another host once it lapses (docs/protocol.md, "Who settles a task").',
  }),
  concurrency: setting({
    env: 'WORKER_CONCURRENCY',
    ...perKindSetting('a non-negative integer', 'concurrency', 0),
    doc: 'Jobs of each kind run at once on this host; 0: this host does not serve the kind. A kind that cannot run here (lip-sync weights not installed, disk full) is not pulled whatever this says, until its checks pass (/readyz).',
  }),
  ackWaitMs: setting({
    env: 'WORKER_ACK_WAIT_MS',
    schema: intSchema('an integer of at least 1000', 1000),
    default: '30000',
    doc: 'Consumer ack wait: a job whose worker sends no heartbeat for this long is redelivered.',
  }),
  heartbeatMs: setting({
    env: 'WORKER_HEARTBEAT_MS',
    schema: intSchema('an integer of at least 100', 100),
    default: '10000',
    doc: 'Interval of in-progress heartbeats while a job runs; must be below WORKER_ACK_WAIT_MS.',
  }),
  maxDeliver: setting({
    env: 'WORKER_MAX_DELIVER',
    schema: intSchema('an integer of at least 1', 1),
    default: '5',
    doc: 'Deliveries of one job before it fails for good (transient failures retry until then).',
  }),
  nakDelaysMs: setting({
    env: 'WORKER_NAK_DELAYS_MS',
    schema: delayList,
    default: '10000,60000,300000',
    doc: 'Delay before retry n after a transient failure (the last value repeats).',
  }),
  watchdogMs: setting({
    env: 'WORKER_WATCHDOG_MS',
    ...perKindSetting('a positive integer', 'watchdogMs', 1),
    doc: 'Longest processing time per kind before the job fails (lip-sync: 4 minutes, spec section 8); `run` and the per-kind commands apply the same limits.',
  }),
  maxQueueAgeMs: setting({
    env: 'WORKER_MAX_QUEUE_AGE_MS',
    ...perKindSetting('a positive integer', 'maxQueueAgeMs', 1),
    doc: 'Longest time a job of each kind may wait in the jobs stream (from when it was stored, retries included); older, a worker of the kind ends it with QUEUE_TIMEOUT and a refund instead of running it.',
  }),
  drainGraceMs: setting({
    env: 'WORKER_DRAIN_GRACE_MS',
    schema: nonNegativeInt,
    default: '60000',
    doc: 'On SIGTERM, how long running jobs may finish before they are handed back (nak) to other workers.',
  }),
  pullExpiresMs: setting({
    env: 'WORKER_PULL_EXPIRES_MS',
    schema: intSchema('an integer of at least 1000', 1000),
    default: '5000',
    doc: 'Lifetime of one pull request for a job; also the longest wait for an idle slot to notice a drain.',
  }),
  publishTimeoutMs: setting({
    env: 'WORKER_PUBLISH_TIMEOUT_MS',
    schema: positiveInt,
    default: '5000',
    doc: 'Timeout of one attempt to publish a terminal event.',
  }),
  publishDeadlineMs: setting({
    env: 'WORKER_PUBLISH_DEADLINE_MS',
    schema: positiveInt,
    default: '120000',
    doc: 'How long a terminal event publish is retried before the job is left to redelivery.',
  }),
  progressIntervalMs: setting({
    env: 'WORKER_PROGRESS_INTERVAL_MS',
    schema: nonNegativeInt,
    default: '1000',
    doc: 'Least interval between two progress messages of one job (a new stage is always sent).',
  }),
  quoteConcurrency: setting({
    env: 'WORKER_QUOTE_CONCURRENCY',
    schema: positiveInt,
    default: '8',
    doc: 'Quote requests answered at once by this host (each downloads and probes its inputs: I/O, apart from the GPU slots of WORKER_CONCURRENCY); one party (account) holds at most a quarter of them.',
  }),
  quoteUnserved: setting({
    env: 'WORKER_QUOTE_UNSERVED',
    schema: oneOfSetting(['refuse', 'price']),
    default: 'refuse',
    doc: 'A quote for a kind no live worker can run now: refuse (MODEL_UNAVAILABLE, 503), or price it anyway (deployments that start workers from the backlog; WORKER_MAX_QUEUE_AGE_MS still bounds the wait).',
  }),
  quoteTimeoutMs: setting({
    env: 'WORKER_QUOTE_TIMEOUT_MS',
    schema: positiveInt,
    default: '120000',
    doc: 'Longest time one quote may take.',
  }),
  storeDeadlineMs: setting({
    env: 'RESULTS_STORE_DEADLINE_MS',
    schema: intSchema('an integer from 1000 to 120000', 1000, 120_000),
    default: '120000',
    doc: 'How long storing one result file is retried (503s, resets, a slow or absent store) before the job fails with its refund; at most 2 minutes.',
  }),
  s3PartMib: setting({
    env: 'RESULTS_S3_PART_MIB',
    schema: intSchema('an integer from 5 to 512', 5, 512),
    default: '8',
    doc: "Part size of the bucket store's multipart uploads (RESULTS_STORE=s3), in MiB; a file above it goes up in parts, three at a time, read into three reused buffers of this size (docs/storage-benchmarks.md). S3 takes 5 at least.",
  }),
  sweepIntervalMs: setting({
    env: 'RESULTS_SWEEP_INTERVAL_MS',
    schema: positiveInt,
    default: String(15 * MINUTE),
    doc: 'Interval of the sweeper that deletes expired results.',
  }),
  readinessIntervalMs: setting({
    env: 'WORKER_READINESS_INTERVAL_MS',
    schema: intSchema('an integer of at least 100', 100),
    default: '30000',
    doc: 'Interval of the readiness checks of each kind (models installed and loadable, directories writable); a kind is pulled only while they pass (/readyz).',
  }),
  diskReserveMb: setting({
    env: 'WORKER_DISK_RESERVE_MB',
    schema: nonNegativeInt,
    default: '256',
    doc: 'Free space, in MiB, kept in the temp and results directories beyond what a job of the kind can need; short of it, the kind is not pulled.',
  }),
  leftoverSweepIntervalMs: setting({
    env: 'WORKER_LEFTOVER_SWEEP_INTERVAL_MS',
    schema: positiveInt,
    default: String(10 * MINUTE),
    doc: 'Interval of the sweep (also run at start) that removes job directories and partial files of worker processes that are gone.',
  }),
  healthPort: setting({
    env: 'WORKER_HEALTH_PORT',
    schema: portNumber,
    default: '9464',
    doc: 'Port of /metrics, /healthz and /readyz; 0: any free port.',
  }),
  healthHost: setting({
    env: 'WORKER_HEALTH_HOST',
    schema: nonEmptyText,
    default: '0.0.0.0',
    doc: 'Address the metrics and health server listens on.',
  }),
} as const;

export const WORKER_SETTINGS = { ...PROTOCOL_SETTINGS, ...DAEMON_SETTINGS } as const;

/**
 * Variables this room reads that are not settings, with why: they are in no table (so not in the
 * settings reference), and the unknown-variable check passes them over (settings-table.ts).
 */
export const VARIABLES_NOT_SETTINGS = {
  MEDIA_WORKER_TEST_KILL_AT: 'test-only fault injection (kill-point.ts); no operator should set it',
} as const;

/** WORKER_WATCHDOG_MS alone, for commands that run without the daemon's settings (`run` applies the same limits). */
export function watchdogFromEnv(
  env: NodeJS.ProcessEnv = process.env,
): z.output<typeof DAEMON_SETTINGS.watchdogMs.schema> {
  const entry = DAEMON_SETTINGS.watchdogMs;
  return entry.schema.parse(env[entry.env] ?? entry.default);
}

/** Whether WORKER_CONCURRENCY is set in `env` (the daemon then keeps the operator's slots as given). */
export function concurrencyGiven(env: NodeJS.ProcessEnv = process.env): boolean {
  return env['WORKER_CONCURRENCY'] !== undefined;
}

export type WorkerSettingKey = keyof typeof WORKER_SETTINGS;
export type WorkerSettings = SettingsOf<typeof WORKER_SETTINGS>;
/** What may be handed to `parseWorkerSettings`: each value in its environment spelling or already typed. */
export type WorkerSettingsInput = SettingsInput<typeof WORKER_SETTINGS>;

/** All worker settings as one zod object, cross-checked (heartbeats must come before the ack wait ends). */
export const workerSettingsSchema = tableSchema(WORKER_SETTINGS).superRefine((v, ctx) => {
  if (v.heartbeatMs >= v.ackWaitMs) {
    ctx.addIssue({
      code: 'custom',
      path: ['heartbeatMs'],
      message: `Expected WORKER_HEARTBEAT_MS to be below WORKER_ACK_WAIT_MS (${v.ackWaitMs}) but received ${v.heartbeatMs}`,
    });
  }
  // Renewed with each heartbeat: a lease no longer than one would lapse between two renewals.
  if (v.heartbeatMs >= v.claimLeaseMs) {
    ctx.addIssue({
      code: 'custom',
      path: ['claimLeaseMs'],
      message: `Expected WORKER_CLAIM_LEASE_MS to be above WORKER_HEARTBEAT_MS (${v.heartbeatMs}) but received ${v.claimLeaseMs}`,
    });
  }
  checkNatsAuth(v, ctx);
  checkResultsStore(v, ctx);
});

export class WorkerSettingsError extends SettingsError {}

/** Settings given in code or in environment spelling, and the environment's; errors name the environment variable. */
export const {
  parse: parseWorkerSettings,
  fromEnv: workerSettingsFromEnv,
  reference: workerSettingsReference,
} = settingsReader(
  WORKER_SETTINGS,
  workerSettingsSchema,
  WorkerSettingsError,
  (value) =>
    value.startsWith('media-worker@') ? 'media-worker@<hostname>' : value === HOSTNAME_TOKEN ? '<hostname>' : value,
  [
    { title: 'Protocol, shared with the gateway (`src/protocol/settings.ts`)', table: PROTOCOL_SETTINGS },
    { title: 'Worker (`src/worker/settings.ts`)', table: DAEMON_SETTINGS },
  ],
);
