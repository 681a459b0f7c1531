/**
 * The gateway's state lives in five JetStream streams, so the only server is the nats-server the
 * workers already need and any number of gateways can share it:
 *
 * | stream | subjects | holds |
 * |---|---|---|
 * | `<P>_ACCOUNTS` | `<p>.accounts.<account>`, `<p>.keys.<key hash>` | account records; key hash -> account (one message per subject) |
 * | `<P>_LEDGER` | `<p>.ledger.<account>` | every balance change of an account, in order; the last one holds the balance |
 * | `<P>_TASKS` | `<p>.tasks.<account>.<task>`, `<p>.owners.<task>`, `<p>.order.<account>.<n>` | the latest state of each task; task -> account; the account's n-th task (history pages) |
 * | `<P>_WEBHOOKS` | `<p>.webhooks.queue.<task>`, `<p>.webhooks.state.<task>`, `<p>.webhooks.account.<account>` | the delivery of each task's webhook (the shared consumer's queue); its state; an account's secret and default endpoint |
 * | `<P>_IDEMPOTENCY` | `<p>.idempotency.<account>.<key hash>` | each `Idempotency-Key` of an account: claimed, then the answer to replay (24 h; idempotency.ts) |
 *
 * Every write that depends on what it read is a publish with "expected last subject sequence"
 * (optimistic concurrency; on nats-server 2.9 too). `<p>` is the prefix in lower case.
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
import { streamProblems } from '../../protocol/index.js';

export interface StoreNames {
  accountsStream: string;
  ledgerStream: string;
  tasksStream: string;
  tasksFilter: string;
  accountSubject(accountId: string): string;
  keySubject(keyHash: string): string;
  ledgerSubject(accountId: string): string;
  ledgerFilter: string;
  taskSubject(accountId: string, taskId: string): string;
  accountTasksFilter(accountId: string): string;
  ownerSubject(taskId: string): string;
  orderSubject(accountId: string, n: number): string;
  webhooksStream: string;
  webhookQueueSubject(taskId: string): string;
  webhookQueueFilter: string;
  webhookStateSubject(taskId: string): string;
  webhookAccountSubject(accountId: string): string;
  idempotencyStream: string;
  idempotencySubject(accountId: string, keyHash: string): string;
}

export function storeNames(prefix: string): StoreNames {
  const p = prefix.toLowerCase();
  return {
    accountsStream: `${prefix}_ACCOUNTS`,
    ledgerStream: `${prefix}_LEDGER`,
    tasksStream: `${prefix}_TASKS`,
    tasksFilter: `${p}.tasks.*.*`,
    accountSubject: (a) => `${p}.accounts.${a}`,
    keySubject: (h) => `${p}.keys.${h}`,
    ledgerSubject: (a) => `${p}.ledger.${a}`,
    ledgerFilter: `${p}.ledger.*`,
    taskSubject: (a, t) => `${p}.tasks.${a}.${t}`,
    accountTasksFilter: (a) => `${p}.tasks.${a}.*`,
    ownerSubject: (t) => `${p}.owners.${t}`,
    orderSubject: (a, n) => `${p}.order.${a}.${n}`,
    webhooksStream: `${prefix}_WEBHOOKS`,
    webhookQueueSubject: (t) => `${p}.webhooks.queue.${t}`,
    webhookQueueFilter: `${p}.webhooks.queue.*`,
    webhookStateSubject: (t) => `${p}.webhooks.state.${t}`,
    webhookAccountSubject: (a) => `${p}.webhooks.account.${a}`,
    idempotencyStream: `${prefix}_IDEMPOTENCY`,
    idempotencySubject: (a, h) => `${p}.idempotency.${a}.${h}`,
  };
}

/** Debits and refunds carry `Nats-Msg-Id: debit|refund:<task>:<expected sequence>` (subject-store.ts); the window covers a write sent again after a lost answer many times over. */
const LEDGER_DUPLICATE_WINDOW_MS = 60 * 60 * 1000;

/** How long an `Idempotency-Key` is remembered after its last write (the IETF draft's and Stripe's 24 h). */
export const IDEMPOTENCY_KEY_LIFETIME_MS = 24 * 60 * 60 * 1000;

/** `replicas`: NATS_STREAM_REPLICAS, the same for every stream of a deployment (docs/operations.md). */
export function streamConfigs(prefix: string, replicas = 1): (Partial<StreamConfig> & { name: string })[] {
  const p = prefix.toLowerCase();
  const n = storeNames(prefix);
  const common = {
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    discard: DiscardPolicy.Old,
    max_age: 0,
    num_replicas: replicas,
  };
  return [
    {
      ...common,
      name: n.accountsStream,
      subjects: [`${p}.accounts.*`, `${p}.keys.*`],
      max_msgs_per_subject: 1,
      description: 'media-worker gateway: accounts and API key hashes',
    },
    {
      ...common,
      name: n.ledgerStream,
      subjects: [`${p}.ledger.*`],
      // Every entry is kept: the ledger is the account's history and the proof of each refund.
      max_msgs_per_subject: -1,
      duplicate_window: nanos(LEDGER_DUPLICATE_WINDOW_MS),
      // Direct get (2.9+) reads "the next entry of this account after sequence n" for the refund check.
      allow_direct: true,
      description: 'media-worker gateway: credit ledger, one subject per account',
    },
    {
      ...common,
      name: n.tasksStream,
      subjects: [`${p}.tasks.*.*`, `${p}.owners.*`, `${p}.order.*.*`],
      max_msgs_per_subject: 1,
      // Direct get reads "the next task after sequence n" for the pending-task sweep.
      allow_direct: true,
      description: 'media-worker gateway: tasks',
    },
    {
      ...common,
      name: n.webhooksStream,
      subjects: [`${p}.webhooks.queue.*`, `${p}.webhooks.state.*`, `${p}.webhooks.account.*`],
      // The latest of each: a retry asked over the API replaces the task's delivery in the queue.
      max_msgs_per_subject: 1,
      // A delivery is queued with `Nats-Msg-Id: <webhook-id>`: an event settled again is no second delivery.
      duplicate_window: nanos(LEDGER_DUPLICATE_WINDOW_MS),
      description: "media-worker gateway: webhook deliveries, their state, accounts' webhook secrets",
    },
    {
      ...common,
      name: n.idempotencyStream,
      subjects: [`${p}.idempotency.*.*`],
      // The key's latest state (claimed, then answered, or freed); every change expects the sequence it read.
      max_msgs_per_subject: 1,
      max_age: nanos(IDEMPOTENCY_KEY_LIFETIME_MS),
      description: 'media-worker gateway: Idempotency-Key claims and the answers they replay',
    },
  ];
}

/** What a gateway (and `accounts`) checks at start: each store stream exists as configured; one line per problem. */
export function storeStreamProblems(jsm: JetStreamManager, prefix: string, replicas = 1): Promise<string[]> {
  return streamProblems(jsm, streamConfigs(prefix, replicas));
}

/**
 * Provisioning (`media-worker provision`, the operator): creates missing streams; an existing one
 * only has its replicas brought to the setting (in place, no data moves by hand).
 */
export async function ensureStoreStreams(jsm: JetStreamManager, prefix: string, replicas = 1): Promise<void> {
  for (const config of streamConfigs(prefix, replicas)) {
    const name = config.name;
    const existing = await jsm.streams.info(name).catch((err: unknown) => {
      if (err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound) return null;
      throw err;
    });
    if (existing === null) {
      await jsm.streams.add(config);
      continue;
    }
    // Streams made by an older gateway lack direct get (the sweeps) and the history index's subjects;
    // NATS_STREAM_REPLICAS may have changed since the stream was made.
    const subjects = [...new Set([...(existing.config.subjects ?? []), ...(config.subjects ?? [])])];
    const direct = config.allow_direct === true && existing.config.allow_direct !== true;
    if (
      direct ||
      subjects.length !== (existing.config.subjects ?? []).length ||
      existing.config.num_replicas !== replicas
    ) {
      await jsm.streams.update(name, {
        ...existing.config,
        subjects,
        allow_direct: existing.config.allow_direct || config.allow_direct === true,
        num_replicas: replicas,
      });
    }
  }
}
