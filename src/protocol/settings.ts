/**
 * Settings every process of one deployment shares, workers and gateways alike: the NATS connection
 * (servers, authentication, TLS), the names of the jobs, events and advisories streams, how long
 * events are kept, where results live, under which public URL (the URLs events carry) and for how
 * long. In
 * the table shape of src/settings-table.ts; the worker's table includes this one, and the gateway
 * reads it on its own (`protocolSettingsFromEnv`), so one environment file serves both.
 */
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { JOB_KINDS, allKinds, byKind, type JobKind, type KindSettingDefaults } from '../jobs/index.js';
import {
  absoluteUrl,
  booleanSetting,
  intSchema,
  nonEmptyText,
  oneOfSetting,
  positiveInt,
  received,
  setting,
  settingsReader,
  SettingsError,
  tableSchema,
  type SettingsInput,
  type SettingsOf,
} from '../settings-table.js';
import { credentialProblems, type NatsCredentialSettings } from './nats-credentials.js';

/** Stream and consumer names: JetStream forbids dots, wildcards, whitespace and path separators. */
export const jetStreamName = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, {
  error: (issue) => `Expected 1 to 64 characters of A-Z, a-z, 0-9, "_" or "-" but received ${received(issue.input)}`,
});

/** The kinds whose results live as long as the spec says: `<label>: <days> days`. */
const SPEC_LIFETIMES = allKinds()
  .flatMap((kind) =>
    kind.resultLifetimeDays === 'upscale-setting' ? [] : [`${kind.label}: ${kind.resultLifetimeDays} days`],
  )
  .join(' and ');

/** Bounds of a claim's lease (WORKER_CLAIM_LEASE_MS; protocol/claims.ts): a lease outside them makes a claim unreadable, hence ignored. */
export const MIN_LEASE_MS = 1_000;
export const MAX_LEASE_MS = 10 * 60_000;

export const PROTOCOL_SETTINGS = {
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
  natsCredsFile: setting({
    env: 'NATS_CREDS_FILE',
    schema: nonEmptyText,
    doc: 'User JWT + nkey credentials file (.creds).',
  }),
  natsNkeySeedFile: setting({
    env: 'NATS_NKEY_SEED_FILE',
    schema: nonEmptyText,
    doc: 'File holding an nkey user seed (SU...).',
  }),
  natsToken: setting({ env: 'NATS_TOKEN', schema: nonEmptyText, doc: 'Token authentication.', secret: true }),
  natsUser: setting({ env: 'NATS_USER', schema: nonEmptyText, doc: 'User name authentication (with NATS_PASSWORD).' }),
  natsPassword: setting({ env: 'NATS_PASSWORD', schema: nonEmptyText, doc: 'Password for NATS_USER.', secret: true }),
  natsTlsCaFile: setting({
    env: 'NATS_TLS_CA_FILE',
    schema: nonEmptyText,
    doc: 'CA certificate (PEM) that signed the server certificate.',
  }),
  natsTlsCertFile: setting({
    env: 'NATS_TLS_CERT_FILE',
    schema: nonEmptyText,
    doc: 'Client certificate (PEM) for mutual TLS.',
  }),
  natsTlsKeyFile: setting({ env: 'NATS_TLS_KEY_FILE', schema: nonEmptyText, doc: 'Key (PEM) of NATS_TLS_CERT_FILE.' }),
  natsInboxPrefix: setting({
    env: 'NATS_INBOX_PREFIX',
    schema: z.string().regex(/^[A-Za-z0-9_-]+$/, {
      error: (issue) =>
        `Expected letters, digits, "_" or "-" (one subject token) but received ${received(issue.input)}`,
    }),
    default: '_INBOX',
    doc: "Subject prefix of this process's reply inboxes; give each role its own (deploy/nats/) so that one may not read the replies of another.",
  }),
  streamReplicas: setting({
    env: 'NATS_STREAM_REPLICAS',
    schema: intSchema('an integer from 1 to 5', 1, 5),
    default: '1',
    doc: "Replicas of every stream (jobs, events, and the gateway's accounts, ledger, tasks); 3 on a 3-node cluster (docs/operations.md). `media-worker provision` applies it in place; the others check it at start.",
  }),
  jobsStream: setting({
    env: 'MEDIA_JOBS_STREAM',
    schema: jetStreamName,
    default: 'MEDIA_JOBS',
    doc: 'WorkQueue stream of jobs (subjects `media.jobs.>`).',
  }),
  eventsStream: setting({
    env: 'MEDIA_EVENTS_STREAM',
    schema: jetStreamName,
    default: 'MEDIA_EVENTS',
    doc: 'Stream of terminal events, one per host and task id (subjects `media.events.<host>.<task>`).',
  }),
  advisoriesStream: setting({
    env: 'MEDIA_ADVISORIES_STREAM',
    schema: jetStreamName,
    default: 'MEDIA_JOBS_ADVISORIES',
    doc: 'Stream capturing the max-deliveries advisories of the jobs stream.',
  }),
  claimsStream: setting({
    env: 'MEDIA_CLAIMS_STREAM',
    schema: jetStreamName,
    default: 'MEDIA_CLAIMS',
    doc: 'Stream of claims (subjects `media.claims.<host>.<task>`): the host that claimed a task first is the one whose event settles it.',
  }),
  eventsMaxAgeDays: setting({
    env: 'MEDIA_EVENTS_MAX_AGE_DAYS',
    schema: positiveInt,
    default: '30',
    doc: 'Age after which the events stream forgets a terminal event.',
  }),
  resultsDir: setting({
    env: 'RESULTS_DIR',
    schema: nonEmptyText.transform((p) => path.resolve(p)),
    default: 'results',
    doc: 'Directory of finished results (`<dir>/<kind>/<task id>/<name>.<ext>`); relative to the working directory.',
  }),
  upscaleResultLifetimeDays: setting({
    env: 'RESULTS_UPSCALE_LIFETIME_DAYS',
    schema: positiveInt,
    default: '7',
    doc: `Lifetime of image and video upscale results (${SPEC_LIFETIMES} are the spec's).`,
  }),
  publicBaseUrl: setting({
    env: 'RESULTS_BASE_URL',
    schema: absoluteUrl,
    doc: "Public URL that serves the results (RESULTS_DIR, or the bucket's keys under RESULTS_S3_PREFIX; the spec's {cdn_url}); unset: results get file:// URLs (local) or s3:// URLs (s3) (development only).",
  }),
  resultsStore: setting({
    env: 'RESULTS_STORE',
    schema: oneOfSetting(['local', 's3', 'upload-url']),
    default: 'local',
    doc: "Where a worker stores results before their completion event: `local` (RESULTS_DIR, a shared volume on a fleet), `s3` (the bucket RESULTS_S3_BUCKET, with the AWS SDK's default credentials) or `upload-url` (a PUT to a URL the gateway presigns against its bucket per file: the worker holds no storage credentials); docs/results-storage.md.",
  }),
  s3Bucket: setting({
    env: 'RESULTS_S3_BUCKET',
    schema: z.string().regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, {
      error: (issue) =>
        `Expected a bucket name of 3 to 63 characters of a-z, 0-9, "." or "-" but received ${received(issue.input)}`,
    }),
    doc: 'Bucket of the results (required with RESULTS_STORE=s3, and on the gateway with upload-url).',
  }),
  s3Endpoint: setting({
    env: 'RESULTS_S3_ENDPOINT',
    schema: absoluteUrl,
    doc: "S3 API endpoint for a store other than AWS (R2, MinIO, GCS's interoperability API: `https://storage.googleapis.com`); unset: AWS for RESULTS_S3_REGION.",
  }),
  s3Region: setting({
    env: 'RESULTS_S3_REGION',
    schema: nonEmptyText,
    default: 'us-east-1',
    doc: 'Region of RESULTS_S3_BUCKET (R2: `auto`).',
  }),
  s3Prefix: setting({
    env: 'RESULTS_S3_PREFIX',
    schema: z.string().regex(/^([A-Za-z0-9_.-]+(\/[A-Za-z0-9_.-]+)*)?$/, {
      error: (issue) =>
        `Expected key segments of A-Z, a-z, 0-9, "_", "." or "-" separated by "/", without a leading or trailing "/", but received ${received(issue.input)}`,
    }),
    default: 'results',
    doc: 'Key prefix of the results in the bucket: `<prefix>/<kind>/<task id>/<name>.<ext>`.',
  }),
  s3ForcePathStyle: setting({
    env: 'RESULTS_S3_FORCE_PATH_STYLE',
    schema: booleanSetting,
    default: 'false',
    doc: 'Path-style bucket addressing (`<endpoint>/<bucket>/<key>`), which MinIO and most self-hosted stores need.',
  }),
} as const;

export type ProtocolSettings = SettingsOf<typeof PROTOCOL_SETTINGS>;
export type ProtocolSettingsInput = SettingsInput<typeof PROTOCOL_SETTINGS>;

/** One way of proving who connects, and each credential with its other half (nats-credentials.ts). */
export function checkNatsAuth(v: NatsCredentialSettings, ctx: z.RefinementCtx): void {
  for (const problem of credentialProblems(v))
    ctx.addIssue({ code: 'custom', path: [problem.key], message: problem.message });
}

/**
 * The s3 store needs its bucket on every process. With upload-url only the control plane that
 * presigns needs one (its workers hold no bucket settings): the gateway checks that at start.
 */
export function checkResultsStore(v: Pick<ProtocolSettings, 'resultsStore' | 's3Bucket'>, ctx: z.RefinementCtx): void {
  if (v.resultsStore === 's3' && v.s3Bucket === undefined) {
    ctx.addIssue({
      code: 'custom',
      path: ['s3Bucket'],
      message: 'Expected RESULTS_S3_BUCKET to be set with RESULTS_STORE=s3 but received it unset',
    });
  }
}

export const protocolSettingsSchema = tableSchema(PROTOCOL_SETTINGS).superRefine((v, ctx) => {
  checkNatsAuth(v, ctx);
  checkResultsStore(v, ctx);
});

export class ProtocolSettingsError extends SettingsError {}

export const { parse: parseProtocolSettings, fromEnv: protocolSettingsFromEnv } = settingsReader(
  PROTOCOL_SETTINGS,
  protocolSettingsSchema,
  ProtocolSettingsError,
);

/**
 * The protocol's settings from `env` for one process (`media-gateway`, `media-worker-provision`):
 * NATS_CONNECTION_NAME when set (even blank, as given), else `connectionName`.
 */
export function protocolSettingsFor(connectionName: string, env: NodeJS.ProcessEnv = process.env): ProtocolSettings {
  return protocolSettingsFromEnv({ ...env, NATS_CONNECTION_NAME: env['NATS_CONNECTION_NAME'] ?? connectionName });
}

/** RESULTS_BASE_URL as set in `env`, trimmed; undefined when unset or blank (the gateway's served-files check). */
export function givenResultsBaseUrl(env: NodeJS.ProcessEnv = process.env): string | undefined {
  return env['RESULTS_BASE_URL']?.trim() || undefined;
}

/**
 * A setting with one value per kind, its default read off the kinds' descriptors (their
 * `settings[key]`): the schema of `perKind` and the default's text, `image=1,video=1,...`.
 */
export function perKindSetting(expectation: string, key: keyof KindSettingDefaults, min: number) {
  const fallback = byKind((kind) => kind.settings[key]);
  return {
    schema: perKind(expectation, fallback, min),
    default: JOB_KINDS.map((kind) => `${kind}=${fallback[kind]}`).join(','),
  };
}

/**
 * `image=2,video=1` (environment) or `{ image: 2, video: 1 }` (code): one non-negative integer per
 * kind; kinds left out take the value of `fallback`.
 */
export function perKind(expectation: string, fallback: Record<JobKind, number>, min: number) {
  const value = intSchema(expectation, min);
  const objectForm = z
    .object(
      Object.fromEntries(JOB_KINDS.map((kind) => [kind, value.optional()])) as Record<
        JobKind,
        z.ZodOptional<typeof value>
      >,
    )
    .strict();
  return z.union([z.string(), objectForm]).transform((input, ctx): Record<JobKind, number> => {
    if (typeof input !== 'string') return { ...fallback, ...stripUndefined(input) };
    const out: Record<JobKind, number> = { ...fallback };
    for (const part of input
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean)) {
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
