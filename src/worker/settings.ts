/**
 * Every setting of the daemon (`media-worker serve`), in the same table shape as src/config.ts:
 * the environment variable, a zod schema that accepts the environment's spelling (a string) as
 * well as an already typed value, the default as the environment would spell it, and one line of
 * documentation. `workerSettingsSchema` is the same table as one zod object, for callers that
 * build settings in code (tests, the CLI's composition of the global config).
 *
 * Stream, consumer and subject names are cluster-wide: every host of one deployment must use the
 * same ones (docs/protocol.md).
 */
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import type { JobKind } from '../jobs/index.js';
import {
  absoluteUrl,
  intSchema,
  nonEmptyText,
  nonNegativeInt,
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

export const JOB_KINDS = ['image', 'video', 'lipsync', 'music'] as const satisfies readonly JobKind[];

/** Stream and consumer names: JetStream forbids dots, wildcards, whitespace and path separators. */
const streamName = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, {
  error: (issue) => `Expected 1 to 64 characters of A-Z, a-z, 0-9, "_" or "-" but received ${received(issue.input)}`,
});

/**
 * `image=2,video=1` (environment) or `{ image: 2, video: 1 }` (code): one non-negative integer per
 * kind; kinds left out take the value of `fallback`.
 */
export function perKind(expectation: string, fallback: Record<JobKind, number>, min: number) {
  const value = intSchema(expectation, min);
  const objectForm = z
    .object({ image: value.optional(), video: value.optional(), lipsync: value.optional(), music: value.optional() })
    .strict();
  return z
    .union([z.string(), objectForm])
    .transform((input, ctx): Record<JobKind, number> => {
      if (typeof input !== 'string') return { ...fallback, ...stripUndefined(input) };
      const out: Record<JobKind, number> = { ...fallback };
      for (const part of input.split(',').map((s) => s.trim()).filter(Boolean)) {
        const [kind, raw] = part.split('=').map((s) => s.trim());
        const parsed = value.safeParse(raw);
        if (!isJobKind(kind) || !parsed.success) {
          ctx.addIssue({
            code: 'custom',
            message: `Expected <kind>=<${expectation}> with kind one of ${JOB_KINDS.join(', ')} but received ${received(part)}`,
          });
          return z.NEVER;
        }
        out[kind] = parsed.data;
      }
      return out;
    });
}

function stripUndefined(input: Partial<Record<JobKind, number | undefined>>): Partial<Record<JobKind, number>> {
  const out: Partial<Record<JobKind, number>> = {};
  for (const kind of JOB_KINDS) {
    const v = input[kind];
    if (v !== undefined) out[kind] = v;
  }
  return out;
}

function isJobKind(value: unknown): value is JobKind {
  return typeof value === 'string' && (JOB_KINDS as readonly string[]).includes(value);
}

const delayList = z
  .union([z.string(), z.array(z.number())])
  .transform((input, ctx): number[] => {
    const parts = typeof input === 'string' ? input.split(',').map((s) => s.trim()).filter(Boolean) : input;
    const out: number[] = [];
    for (const part of parts) {
      const parsed = nonNegativeInt.safeParse(part);
      if (!parsed.success) {
        ctx.addIssue({ code: 'custom', message: `Expected a comma-separated list of non-negative integers but received ${received(input)}` });
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

export const WORKER_SETTINGS = {
  natsUrl: setting({
    env: 'NATS_URL',
    schema: nonEmptyText,
    default: 'nats://127.0.0.1:4222',
    doc: 'NATS server URL; several may be given separated by commas.',
  }),
  natsName: setting({
    env: 'NATS_CONNECTION_NAME',
    schema: nonEmptyText,
    default: `media-worker@${os.hostname()}`,
    doc: 'Connection name shown by the server (and the `worker` field of events).',
  }),
  natsCredsFile: setting({ env: 'NATS_CREDS_FILE', schema: nonEmptyText, doc: 'User JWT + nkey credentials file (.creds).' }),
  natsNkeySeedFile: setting({ env: 'NATS_NKEY_SEED_FILE', schema: nonEmptyText, doc: 'File holding an nkey user seed (SU...).' }),
  natsToken: setting({ env: 'NATS_TOKEN', schema: nonEmptyText, doc: 'Token authentication.', secret: true }),
  natsUser: setting({ env: 'NATS_USER', schema: nonEmptyText, doc: 'User name authentication (with NATS_PASSWORD).' }),
  natsPassword: setting({ env: 'NATS_PASSWORD', schema: nonEmptyText, doc: 'Password for NATS_USER.', secret: true }),
  natsTlsCaFile: setting({ env: 'NATS_TLS_CA_FILE', schema: nonEmptyText, doc: 'CA certificate (PEM) that signed the server certificate.' }),
  natsTlsCertFile: setting({ env: 'NATS_TLS_CERT_FILE', schema: nonEmptyText, doc: 'Client certificate (PEM) for mutual TLS.' }),
  natsTlsKeyFile: setting({ env: 'NATS_TLS_KEY_FILE', schema: nonEmptyText, doc: 'Key (PEM) of NATS_TLS_CERT_FILE.' }),
  jobsStream: setting({
    env: 'MEDIA_JOBS_STREAM',
    schema: streamName,
    default: 'MEDIA_JOBS',
    doc: 'WorkQueue stream of jobs (subjects `media.jobs.>`).',
  }),
  eventsStream: setting({
    env: 'MEDIA_EVENTS_STREAM',
    schema: streamName,
    default: 'MEDIA_EVENTS',
    doc: 'Stream of terminal events, one per task id (subjects `media.events.>`).',
  }),
  advisoriesStream: setting({
    env: 'MEDIA_ADVISORIES_STREAM',
    schema: streamName,
    default: 'MEDIA_JOBS_ADVISORIES',
    doc: 'Stream capturing the max-deliveries advisories of the jobs stream.',
  }),
  consumerPrefix: setting({
    env: 'MEDIA_CONSUMER_PREFIX',
    schema: streamName,
    default: 'media-worker',
    doc: 'Durable consumer names are `<prefix>-<kind>` and `<prefix>-advisories`.',
  }),
  concurrency: setting({
    env: 'WORKER_CONCURRENCY',
    schema: perKind('a non-negative integer', { image: 1, video: 1, lipsync: 1, music: 0 }, 0),
    default: 'image=1,video=1,lipsync=1,music=0',
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
    schema: perKind('a positive integer', { image: 15 * MINUTE, video: 30 * MINUTE, lipsync: 4 * MINUTE, music: 10 * MINUTE }, 1),
    default: `image=${15 * MINUTE},video=${30 * MINUTE},lipsync=${4 * MINUTE},music=${10 * MINUTE}`,
    doc: 'Longest processing time per kind before the job fails (lip-sync: 4 minutes, spec section 8).',
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
  eventsMaxAgeDays: setting({
    env: 'MEDIA_EVENTS_MAX_AGE_DAYS',
    schema: positiveInt,
    default: '30',
    doc: 'Age after which the events stream forgets a terminal event.',
  }),
  quoteConcurrency: setting({
    env: 'WORKER_QUOTE_CONCURRENCY',
    schema: positiveInt,
    default: '2',
    doc: 'Quote requests answered at once by this host (each downloads and probes its inputs).',
  }),
  quoteTimeoutMs: setting({
    env: 'WORKER_QUOTE_TIMEOUT_MS',
    schema: positiveInt,
    default: '120000',
    doc: 'Longest time one quote may take.',
  }),
  resultsDir: setting({
    env: 'RESULTS_DIR',
    schema: nonEmptyText.transform((p) => path.resolve(p)),
    default: 'results',
    doc: 'Directory of finished results (`<dir>/<kind>/<task id>/<name>.<ext>`); relative to the working directory.',
  }),
  publicBaseUrl: setting({
    env: 'RESULTS_BASE_URL',
    schema: absoluteUrl,
    doc: "Public URL that serves RESULTS_DIR (the spec's {cdn_url}); unset: results get file:// URLs (development only).",
  }),
  upscaleResultLifetimeDays: setting({
    env: 'RESULTS_UPSCALE_LIFETIME_DAYS',
    schema: positiveInt,
    default: '7',
    doc: 'Lifetime of image and video upscale results (lip-sync: 7 days and music: 14 days are the spec\'s).',
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
  if (v.natsNkeySeedFile !== undefined && v.natsCredsFile !== undefined) {
    ctx.addIssue({
      code: 'custom',
      path: ['natsNkeySeedFile'],
      message: 'Expected at most one of NATS_CREDS_FILE and NATS_NKEY_SEED_FILE but received both',
    });
  }
});

export class WorkerSettingsError extends SettingsError {}

/** Settings given in code or in environment spelling, and the environment's; errors name the environment variable. */
export const {
  parse: parseWorkerSettings,
  fromEnv: workerSettingsFromEnv,
  reference: workerSettingsReference,
} = settingsReader(WORKER_SETTINGS, workerSettingsSchema, WorkerSettingsError, (value) =>
  value.startsWith('media-worker@') ? 'media-worker@<hostname>' : value,
);
