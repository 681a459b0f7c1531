/**
 * The gateway's durable consumers, shared by every gateway of a deployment (each message is
 * handled by one of them):
 *
 * - `<prefix>-events` on the worker's events stream (`media.events.>`): settles each task from its
 *   terminal event, then acks. Redelivered or handled twice, an event changes nothing more
 *   (settle() is idempotent on the task id).
 * - `<prefix>-outbox` on the ledger: for every debit, makes sure its task exists and its job is
 *   published (service.ts explains why that repairs a crash between debit and publish).
 * - `<prefix>-advisories` on the captured max-deliveries advisories of the jobs stream: fails and
 *   refunds the task of a job whose deliveries ran out, and removes the job (exhausted-jobs.ts).
 *
 * A message is acked only after its effect is stored; a failure naks it for a retry.
 */
import {
  AckPolicy,
  DeliverPolicy,
  JetStreamApiCodes,
  JetStreamApiError,
  type ConsumerConfig,
  type ConsumerMessages,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
} from '@nats-io/jetstream';
import { nanos } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import {
  configDifferences,
  consumeOptions,
  messageJson,
  EVENTS_SUBJECT_PREFIX,
  maxDeliveriesAdvisoryFilter,
} from '../../protocol/index.js';
import { settleExhaustedJob } from './exhausted-jobs.js';
import type { GatewayMetrics } from '../monitoring/metrics.js';
import type { ResultCheck } from '../results/result-check.js';
import type { GatewayService } from '../service.js';
import { ledgerEntrySchema } from '../store/records.js';
import type { StoreNames } from '../store/streams.js';
import { settleEventMessage } from './settle-event.js';
import { webhookConsumerConfig } from '../webhooks/queue.js';

/**
 * Handling a message takes milliseconds; a short ack wait bounds how long messages handed to a
 * gateway that died (prefetched, unacked) wait before another gateway gets them.
 */
const ACK_WAIT_MS = 10_000;
const RETRY_DELAY_MS = 1000;

export interface ConsumerLoops {
  /** Resolves when both loops have stopped. */
  stop(): Promise<void>;
}

export interface ConsumerNames {
  eventsStream: string;
  /** The work queue and the stream capturing its max-deliveries advisories. */
  jobsStream: string;
  advisoriesStream: string;
  /** Where the claims are (protocol/claims.ts): an event settles only from its task's first claimer. */
  claimsStream: string;
  consumerPrefix: string;
  names: StoreNames;
}

/** The durables: these three and the webhooks' (webhooks/queue.ts); `media-worker provision` creates them, a gateway only checks and binds them. */
export function durableConfigs(
  n: ConsumerNames,
): { stream: string; config: ConsumerConfig & { durable_name: string } }[] {
  const durable = (stream: string, name: string, filter: string, description: string) => ({
    stream,
    config: {
      durable_name: name,
      filter_subject: filter,
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.All,
      ack_wait: nanos(ACK_WAIT_MS),
      description,
    } as ConsumerConfig & { durable_name: string },
  });
  return [
    durable(
      n.eventsStream,
      `${n.consumerPrefix}-events`,
      `${EVENTS_SUBJECT_PREFIX}.>`,
      'media-worker gateway: settles tasks from terminal events',
    ),
    durable(
      n.names.ledgerStream,
      `${n.consumerPrefix}-outbox`,
      n.names.ledgerFilter,
      'media-worker gateway: task and job of every debit',
    ),
    durable(
      n.advisoriesStream,
      `${n.consumerPrefix}-advisories`,
      maxDeliveriesAdvisoryFilter(n.jobsStream),
      'media-worker gateway: fails the tasks of jobs that exhausted their deliveries',
    ),
    // The webhooks' deliveries have a loop of their own (webhooks/queue.ts).
    webhookConsumerConfig(n.names, n.consumerPrefix),
  ];
}

/** Provisioning: creates the durables that are missing (an existing one is left as it is). */
export async function ensureConsumers(jsm: JetStreamManager, n: ConsumerNames): Promise<void> {
  for (const { stream, config } of durableConfigs(n)) {
    if ((await jsm.consumers.info(stream, config.durable_name).catch(consumerNotFound)) === null)
      await jsm.consumers.add(stream, config);
  }
}

/** What the gateway does at start: each durable exists with its filter and ack policy, or the problems are listed. */
export async function consumerProblems(jsm: JetStreamManager, n: ConsumerNames): Promise<string[]> {
  const problems: string[] = [];
  for (const { stream, config } of durableConfigs(n)) {
    const existing = await jsm.consumers.info(stream, config.durable_name).catch(consumerNotFound);
    const { filter_subject, ack_policy } = config;
    if (existing === null) problems.push(`consumer ${config.durable_name} on ${stream} does not exist`);
    else
      problems.push(
        ...configDifferences(existing.config, { filter_subject, ack_policy }).map(
          (d) => `consumer ${config.durable_name} on ${stream} ${d}`,
        ),
      );
  }
  return problems;
}

function consumerNotFound(err: unknown): null {
  if (err instanceof JetStreamApiError && err.code === JetStreamApiCodes.ConsumerNotFound) return null;
  throw err;
}

export async function startConsumers(
  js: JetStreamClient,
  n: ConsumerNames,
  service: GatewayService,
  metrics: GatewayMetrics,
  logger: Logger,
  checkResult: ResultCheck,
): Promise<ConsumerLoops> {
  const jsm = await js.jetstreamManager();
  const events = await js.consumers.get(n.eventsStream, `${n.consumerPrefix}-events`);
  const outbox = await js.consumers.get(n.names.ledgerStream, `${n.consumerPrefix}-outbox`);
  const advisories = await js.consumers.get(n.advisoriesStream, `${n.consumerPrefix}-advisories`);
  const eventMsgs = await events.consume(consumeOptions(64));
  const outboxMsgs = await outbox.consume(consumeOptions(64));
  const advisoryMsgs = await advisories.consume(consumeOptions(8));

  const settling = { jsm, claimsStream: n.claimsStream, service, checkResult, logger };
  const onEvent = async (msg: JsMsg): Promise<void> => {
    metrics.events.inc({
      result: await settleEventMessage(settling, {
        subject: msg.subject,
        seq: msg.seq,
        json: () => msg.json(),
        header: (name) => msg.headers?.get(name),
      }),
    });
  };

  const onDebit = async (msg: JsMsg): Promise<void> => {
    const entry = ledgerEntrySchema.safeParse(messageJson(msg));
    if (!entry.success) {
      logger.error({ subject: msg.subject, seq: msg.seq }, 'Not a ledger entry; skipped');
      return;
    }
    if (entry.data.type !== 'debit') return;
    const accountId = msg.subject.slice(msg.subject.lastIndexOf('.') + 1);
    await service.materialise(accountId, entry.data, msg.seq);
    metrics.outbox.inc();
  };

  const exhausted = {
    jsm,
    jobsStream: n.jobsStream,
    eventsStream: n.eventsStream,
    claimsStream: n.claimsStream,
    service,
    logger: logger.child({ component: 'advisories' }),
  };
  const onAdvisory = async (msg: JsMsg): Promise<void> => {
    metrics.exhaustedJobs.inc({ outcome: await settleExhaustedJob(exhausted, messageJson(msg)) });
  };

  const loops = [
    loop(eventMsgs, onEvent, logger, 'events'),
    loop(outboxMsgs, onDebit, logger, 'outbox'),
    loop(advisoryMsgs, onAdvisory, logger, 'advisories'),
  ];
  return {
    async stop() {
      await eventMsgs.close();
      await outboxMsgs.close();
      await advisoryMsgs.close();
      await Promise.all(loops);
    },
  };
}

async function loop(
  messages: ConsumerMessages,
  handle: (msg: JsMsg) => Promise<void>,
  logger: Logger,
  name: string,
): Promise<void> {
  for await (const msg of messages) {
    try {
      await handle(msg);
      await msg.ackAck();
    } catch (err) {
      logger.warn({ err, consumer: name, subject: msg.subject, seq: msg.seq }, 'Handling failed; retried');
      msg.nak(RETRY_DELAY_MS);
    }
  }
}
