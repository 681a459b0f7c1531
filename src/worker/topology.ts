/**
 * Streams (their configurations are the protocol's, protocol/streams.ts) and the worker's durable
 * consumers. `ensureTopology` creates them or brings them up to date: it is run by `media-worker
 * provision` with the operator's credentials (idempotent, and safe when run twice at once: the
 * server accepts an identical add). What cannot be changed in place (a stream's retention or
 * storage, a consumer's filter) is reported instead of recreated: deleting a stream of jobs or
 * events is an operator's decision. A worker only runs `checkTopology`: it binds to what exists
 * and may change nothing (its user has no such permission: a stream update can copy or write any
 * stream through sources and republish, docs/operations.md).
 */
import {
  AckPolicy,
  DeliverPolicy,
  JetStreamApiCodes,
  JetStreamApiError,
  type ConsumerConfig,
  type JetStreamManager,
} from '@nats-io/jetstream';
import { nanos } from '@nats-io/transport-node';
import { JOB_KINDS, type JobKind } from '../jobs/index.js';
import {
  PROVISION_HINT,
  advisoriesConsumerName,
  configDifferences,
  advisoriesStreamConfig,
  claimsStreamConfig,
  consumerName,
  eventsStreamConfig,
  jobFilter,
  jobsStreamConfig,
  streamProblems,
  type DesiredStream,
} from '../protocol/index.js';
import type { WorkerSettings } from './settings.js';

type TopologySettings = Pick<
  WorkerSettings,
  | 'jobsStream'
  | 'eventsStream'
  | 'advisoriesStream'
  | 'claimsStream'
  | 'consumerPrefix'
  | 'ackWaitMs'
  | 'maxDeliver'
  | 'eventsMaxAgeDays'
  | 'streamReplicas'
>;

type DesiredConsumer = Required<
  Pick<ConsumerConfig, 'filter_subject' | 'ack_policy' | 'deliver_policy' | 'ack_wait' | 'max_deliver' | 'description'>
> & {
  durable_name: string;
};

export function jobConsumerConfig(s: TopologySettings, kind: JobKind): DesiredConsumer {
  return {
    durable_name: consumerName(s.consumerPrefix, kind),
    description: `media-worker ${kind} jobs`,
    filter_subject: jobFilter(kind),
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    ack_wait: nanos(s.ackWaitMs),
    max_deliver: s.maxDeliver,
  };
}

export class TopologyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TopologyError';
  }
}

/**
 * Streams first, then the consumers: one per kind (all kinds, so that jobs of a kind no host
 * serves yet are kept and counted by the consumer) (the advisories stream's consumer is the gateway's: gateway/settlement/consumers.ts).
 */
export async function ensureTopology(jsm: JetStreamManager, s: TopologySettings): Promise<void> {
  await ensureStream(jsm, jobsStreamConfig(s));
  await ensureStream(jsm, eventsStreamConfig(s));
  await ensureStream(jsm, advisoriesStreamConfig(s));
  await ensureStream(jsm, claimsStreamConfig(s));
  for (const kind of JOB_KINDS) await ensureConsumer(jsm, s.jobsStream, jobConsumerConfig(s, kind));
  // Workers handled the advisories until their user lost the reads of the queue by sequence; the
  // gateway's durable takes them now, and a work-queue stream allows one consumer per filter.
  await jsm.consumers
    .delete(s.advisoriesStream, advisoriesConsumerName(s.consumerPrefix))
    .catch(notFound(JetStreamApiCodes.ConsumerNotFound));
}

/**
 * What a worker does at start instead: every stream and consumer it uses exists as its settings
 * say, or it refuses to start with what is missing or differs and the command that fixes it.
 */
export async function checkTopology(jsm: JetStreamManager, s: TopologySettings): Promise<void> {
  const problems = await streamProblems(jsm, [jobsStreamConfig(s), eventsStreamConfig(s), claimsStreamConfig(s)]);
  const consumers = JOB_KINDS.map((kind): [string, DesiredConsumer] => [s.jobsStream, jobConsumerConfig(s, kind)]);
  if (problems.length === 0) {
    for (const [stream, desired] of consumers) {
      const existing = await jsm.consumers
        .info(stream, desired.durable_name)
        .catch(notFound(JetStreamApiCodes.ConsumerNotFound));
      if (existing === null) problems.push(`consumer ${desired.durable_name} on ${stream} does not exist`);
      else
        problems.push(
          ...configDifferences(existing.config, desired).map(
            (d) => `consumer ${desired.durable_name} on ${stream} ${d}`,
          ),
        );
    }
  }
  if (problems.length > 0) {
    throw new TopologyError(
      `The worker's streams and consumers are not as its settings expect (${problems.join('; ')}): ${PROVISION_HINT}`,
    );
  }
}

async function ensureStream(jsm: JetStreamManager, desired: DesiredStream): Promise<void> {
  const existing = await jsm.streams.info(desired.name).catch(notFound(JetStreamApiCodes.StreamNotFound));
  if (existing === null) {
    await jsm.streams.add(desired);
    return;
  }
  const current = existing.config;
  for (const key of ['retention', 'storage'] as const) {
    if (current[key] !== desired[key]) {
      throw new TopologyError(
        `Expected stream ${desired.name} to have ${key} ${desired[key]} but it has ${current[key]}; it cannot be changed in place (docs/protocol.md)`,
      );
    }
  }
  const differs =
    !sameSet(current.subjects ?? [], desired.subjects) ||
    current.discard !== desired.discard ||
    current.max_age !== desired.max_age ||
    current.num_replicas !== desired.num_replicas ||
    (desired.max_msgs_per_subject !== undefined && current.max_msgs_per_subject !== desired.max_msgs_per_subject) ||
    (desired.discard_new_per_subject !== undefined &&
      Boolean(current.discard_new_per_subject) !== desired.discard_new_per_subject);
  if (differs) await jsm.streams.update(desired.name, { ...current, ...desired });
}

async function ensureConsumer(jsm: JetStreamManager, stream: string, desired: DesiredConsumer): Promise<void> {
  const existing = await jsm.consumers
    .info(stream, desired.durable_name)
    .catch(notFound(JetStreamApiCodes.ConsumerNotFound));
  if (existing === null) {
    await jsm.consumers.add(stream, desired);
    return;
  }
  const current = existing.config;
  if (current.filter_subject !== desired.filter_subject || current.ack_policy !== desired.ack_policy) {
    throw new TopologyError(
      `Expected consumer ${desired.durable_name} on ${stream} to filter ${desired.filter_subject} with ack policy ${desired.ack_policy} ` +
        `but it filters ${String(current.filter_subject)} with ${current.ack_policy}; delete it to let the worker recreate it`,
    );
  }
  if (
    current.ack_wait !== desired.ack_wait ||
    current.max_deliver !== desired.max_deliver ||
    current.description !== desired.description
  ) {
    await jsm.consumers.update(stream, desired.durable_name, {
      ack_wait: desired.ack_wait,
      max_deliver: desired.max_deliver,
      description: desired.description,
    });
  }
}

function notFound(code: number) {
  return (err: unknown): null => {
    if (err instanceof JetStreamApiError && err.code === code) return null;
    throw err;
  };
}

function sameSet(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((x) => b.includes(x));
}
