/**
 * The protocol's streams (docs/protocol.md): jobs, terminal events, and the max-deliveries
 * advisories of the jobs stream. Only `media-worker provision` (the operator) creates or changes
 * them; workers and gateways check that they exist as configured and bind (docs/operations.md).
 */
import {
  DiscardPolicy,
  JetStreamApiCodes,
  JetStreamApiError,
  RetentionPolicy,
  StorageType,
  type JetStreamManager,
  type StreamConfig,
} from '@nats-io/jetstream';
import { nanos } from '@nats-io/transport-node';
import type { ProtocolSettings } from './settings.js';
import {
  CLAIMS_SUBJECT_PREFIX,
  EVENTS_SUBJECT_PREFIX,
  JOBS_SUBJECT_PREFIX,
  maxDeliveriesAdvisoryFilter,
} from './subjects.js';

const DAY_NS = nanos(24 * 60 * 60 * 1000);

type StreamSettings = Pick<
  ProtocolSettings,
  'jobsStream' | 'eventsStream' | 'advisoriesStream' | 'claimsStream' | 'eventsMaxAgeDays' | 'streamReplicas'
>;

export type DesiredStream = Pick<
  StreamConfig,
  'name' | 'subjects' | 'retention' | 'storage' | 'discard' | 'max_age' | 'description' | 'num_replicas'
> &
  Partial<Pick<StreamConfig, 'max_msgs_per_subject' | 'discard_new_per_subject'>>;

/** Jobs: one message per task until a worker acks or terminates it. */
export function jobsStreamConfig(s: StreamSettings): DesiredStream {
  return {
    name: s.jobsStream,
    description: 'media-worker jobs, one per task (docs/protocol.md)',
    subjects: [`${JOBS_SUBJECT_PREFIX}.>`],
    retention: RetentionPolicy.Workqueue,
    storage: StorageType.File,
    discard: DiscardPolicy.Old,
    max_age: 0,
    num_replicas: s.streamReplicas,
  };
}

/**
 * Events keep the first message of each subject for the events' lifetime: a second one is
 * refused by the server, not stored over the first.
 */
function firstWritePerSubject(s: StreamSettings): Omit<DesiredStream, 'name' | 'description' | 'subjects'> {
  return {
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    discard: DiscardPolicy.New,
    max_msgs_per_subject: 1,
    discard_new_per_subject: true,
    max_age: s.eventsMaxAgeDays * DAY_NS,
    num_replicas: s.streamReplicas,
  };
}

/** Events: at most one per subject (= per host and task id); a second one is refused, not stored. */
export function eventsStreamConfig(s: StreamSettings): DesiredStream {
  return {
    name: s.eventsStream,
    description: 'media-worker terminal events, exactly one per task (docs/protocol.md)',
    subjects: [`${EVENTS_SUBJECT_PREFIX}.>`],
    ...firstWritePerSubject(s),
  };
}

/**
 * Claims: a host publishes `media.claims.<host>.<task>` to take a task, to renew its lease and to
 * mark its settlement (protocol/claims.ts), so every entry is kept, in the server's order and with
 * its time, for the events' lifetime: replayed, they say which host's event settles the task.
 */
export function claimsStreamConfig(s: StreamSettings): DesiredStream {
  return {
    name: s.claimsStream,
    description: 'media-worker claims: leases of tasks by worker hosts (docs/protocol.md)',
    subjects: [`${CLAIMS_SUBJECT_PREFIX}.*.*`],
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    discard: DiscardPolicy.New,
    // Stated, not left out: a stream provisioned before leases kept one claim per subject.
    max_msgs_per_subject: -1,
    discard_new_per_subject: false,
    max_age: s.eventsMaxAgeDays * DAY_NS,
    num_replicas: s.streamReplicas,
  };
}

/**
 * Max-deliveries advisories are plain core NATS messages: captured in a stream they survive a
 * moment when no worker is connected, and exactly one worker handles each.
 */
export function advisoriesStreamConfig(s: StreamSettings): DesiredStream {
  return {
    name: s.advisoriesStream,
    description: `max-deliveries advisories of ${s.jobsStream}, turned into failure events by media-worker`,
    subjects: [maxDeliveriesAdvisoryFilter(s.jobsStream)],
    retention: RetentionPolicy.Workqueue,
    storage: StorageType.File,
    discard: DiscardPolicy.Old,
    max_age: s.eventsMaxAgeDays * DAY_NS,
    num_replicas: s.streamReplicas,
  };
}

/** What `media-worker provision` is, named in every "missing or differs" message of a process that only binds. */
export const PROVISION_HINT =
  'run `media-worker provision` with the operator\'s credentials (docs/operations.md, "Who creates what")';

/**
 * Where an existing stream or consumer configuration differs from the desired one, one
 * `<field>: expected … but found …` per field; empty when it matches. Only the desired fields are
 * compared (the server fills in the rest); subject lists as sets, flags as booleans, descriptions not at all.
 */
export function configDifferences(current: object, desired: object): string[] {
  const found = current as Record<string, unknown>;
  const differences: string[] = [];
  for (const [key, want] of Object.entries(desired)) {
    if (key === 'name' || key === 'durable_name' || key === 'description' || want === undefined) continue;
    const have = found[key];
    const same = Array.isArray(want)
      ? Array.isArray(have) && have.length === want.length && want.every((x: unknown) => have.includes(x))
      : typeof want === 'boolean'
        ? Boolean(have) === want
        : have === want;
    if (!same) differences.push(`${key}: expected ${JSON.stringify(want)} but found ${JSON.stringify(have ?? null)}`);
  }
  return differences;
}

/**
 * What a process that only binds checks at start: each stream exists as `desired` says, one
 * `stream <name> …` line per problem (missing, or each field that differs); empty when all match.
 */
export async function streamProblems(
  jsm: JetStreamManager,
  desired: readonly (Pick<StreamConfig, 'name'> & object)[],
): Promise<string[]> {
  const problems: string[] = [];
  for (const config of desired) {
    const existing = await jsm.streams.info(config.name).catch((err: unknown) => {
      if (err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound) return null;
      throw err;
    });
    if (existing === null) problems.push(`stream ${config.name} does not exist`);
    else problems.push(...configDifferences(existing.config, config).map((d) => `stream ${config.name} ${d}`));
  }
  return problems;
}
