/**
 * Wire names of the protocol (docs/protocol.md). Pure functions, so the control plane's side can
 * be checked against the same strings in tests.
 */
import { JOB_KINDS, type JobKind } from '../jobs/index.js';

export const JOBS_SUBJECT_PREFIX = 'media.jobs';
export const EVENTS_SUBJECT_PREFIX = 'media.events';
/** `media.claims.<host>.<task>`: a host takes a task before running it (claims.ts). */
export const CLAIMS_SUBJECT_PREFIX = 'media.claims';
export const PROGRESS_SUBJECT_PREFIX = 'media.progress';

/** The quote service: NATS services framework name, group and endpoint (request subject `media.quote`). */
export const QUOTE_SERVICE_NAME = 'media-worker';
export const QUOTE_SERVICE_GROUP = 'media';
export const QUOTE_ENDPOINT = 'quote';
export const QUOTE_SUBJECT = `${QUOTE_SERVICE_GROUP}.${QUOTE_ENDPOINT}`;
/** Core NATS, every host: `<quote id>` of a quote whose requester has gone; it is dropped or aborted. */
export const QUOTE_ABANDON_SUBJECT = `${QUOTE_SUBJECT}.abandon`;
/** Headers of a quote request (all optional): its id, whose it is (fair sharing) and until when it is wanted (epoch ms). */
export const QUOTE_HEADERS = {
  id: 'Media-Quote-Id',
  party: 'Media-Quote-Party',
  deadline: 'Media-Quote-Deadline',
  /** Request: "tell me you have it, then every <ms> that you are still on it" (docs/protocol.md). */
  receipt: 'Media-Quote-Receipt',
  /** On those interim replies (empty body): `received`, then `working`. */
  status: 'Media-Quote-Status',
} as const;
/** The interim replies' statuses; a reply without the status header is the answer. */
export const QUOTE_STATUS = { received: 'received', working: 'working' } as const;
/** Bounds of the heartbeat a requester may ask for (deploy/nats/media-users.conf allows the replies of a 120 s quote at the fastest). */
export const QUOTE_HEARTBEAT_MS = { min: 1000, max: 60_000 } as const;
/** Cancellation (cancel.ts): one worker answers. */
export const CANCEL_ENDPOINT = 'cancel';
export const CANCEL_SUBJECT = `${QUOTE_SERVICE_GROUP}.${CANCEL_ENDPOINT}`;
/** Discovery (discovery.ts): every worker answers. */
export const CAPABILITIES_SUBJECT = `${QUOTE_SERVICE_GROUP}.capabilities`;

/** Task ids are used as subject tokens and path segments, so they are restricted to this. */
export const TASK_ID_PATTERN = /^[A-Za-z0-9_-]{1,128}$/;

export function isTaskId(value: unknown): value is string {
  return typeof value === 'string' && TASK_ID_PATTERN.test(value);
}

/** `media.jobs.<kind>.<model id>`: where a control plane publishes a job. */
export function jobSubject(kind: JobKind, model: string): string {
  return `${JOBS_SUBJECT_PREFIX}.${kind}.${model}`;
}

/** Filter of the durable consumer of one kind. */
export function jobFilter(kind: JobKind): string {
  return `${JOBS_SUBJECT_PREFIX}.${kind}.>`;
}

/** The kind named by a job subject, or undefined when the subject is not one of ours. */
export function kindOfJobSubject(subject: string): JobKind | undefined {
  const tokens = subject.split('.');
  if (tokens.length < 4 || `${tokens[0]}.${tokens[1]}` !== JOBS_SUBJECT_PREFIX) return undefined;
  const kind = tokens[2];
  return (JOB_KINDS as readonly string[]).includes(kind ?? '') ? (kind as JobKind) : undefined;
}

/**
 * `media.events.<host>.<task>`: the host is the publisher's WORKER_HOST_ID, which its NATS user
 * alone may publish under (deploy/nats/media-users.conf), so the server vouches for it.
 */
export function eventSubject(host: string, taskId: string): string {
  return `${EVENTS_SUBJECT_PREFIX}.${host}.${taskId}`;
}

/** Every host's event of a task (a filter for lookups). */
export function anyHostEventSubject(taskId: string): string {
  return `${EVENTS_SUBJECT_PREFIX}.*.${taskId}`;
}

export function claimSubject(host: string, taskId: string): string {
  return `${CLAIMS_SUBJECT_PREFIX}.${host}.${taskId}`;
}

export function anyHostClaimSubject(taskId: string): string {
  return `${CLAIMS_SUBJECT_PREFIX}.*.${taskId}`;
}

/** Host and task of `<prefix>.<host>.<task>` (an event's or a claim's subject); undefined for any other shape. */
export function hostAndTask(
  prefix: typeof EVENTS_SUBJECT_PREFIX | typeof CLAIMS_SUBJECT_PREFIX,
  subject: string,
): { host: string; taskId: string } | undefined {
  if (!subject.startsWith(`${prefix}.`)) return undefined;
  const tokens = subject.slice(prefix.length + 1).split('.');
  const [host, taskId] = tokens;
  return tokens.length === 2 && host !== undefined && host !== '' && isTaskId(taskId) ? { host, taskId } : undefined;
}

/** `Nats-Msg-Id` of a terminal event: a second publish inside the duplicate window is a no-op. */
export function eventMsgId(taskId: string): string {
  return `${taskId}:terminal`;
}

export function progressSubject(taskId: string): string {
  return `${PROGRESS_SUBJECT_PREFIX}.${taskId}`;
}

export function consumerName(prefix: string, kind: JobKind): string {
  return `${prefix}-${kind}`;
}

export function advisoriesConsumerName(prefix: string): string {
  return `${prefix}-advisories`;
}

/** Subject of the server's max-deliveries advisories for every consumer of a stream. */
export function maxDeliveriesAdvisoryFilter(stream: string): string {
  return `$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.${stream}.>`;
}
