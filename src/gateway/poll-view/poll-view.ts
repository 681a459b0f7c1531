/**
 * What a poll needs, answered from memory: tasks (GET /api/v1/tasks/{id}), balances
 * (GET /api/v1/balance) and the account of an API key (every request). Each is a bounded cache
 * of store records kept current by a watch of its stream (stream-watch.ts) and by this gateway's
 * own writes as it makes them (so a balance just debited here is never shown as it was before).
 * A miss, or any request while a watch is not live, is a direct read of the store, whose answer
 * is cached, for tasks and balances "none" included (a record written since arrives by the watch,
 * whose sequence is higher, and replaces it): a client polling an unknown task id again and again
 * costs one read per ABSENT_LIFETIME_MS, not one per poll. Staleness: a value changed by another gateway is replaced as soon as this gateway's
 * watch delivers the change (milliseconds; docs/operations.md, "Polling from memory"); a watch
 * that falls silent for LIVENESS_MS empties its cache and its reads go to the store again.
 */
import type { JetStreamClient } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import type { z } from 'zod';
import { hashApiKey } from '../ids.js';
import type { GatewayMetrics } from '../monitoring/metrics.js';
import type { Accounts } from '../store/accounts.js';
import type { Ledger } from '../store/ledger.js';
import {
  keyRecordSchema,
  ledgerEntrySchema,
  taskRecordSchema,
  type KeyRecord,
  type TaskRecord,
} from '../store/records.js';
import type { StoreNames } from '../store/streams.js';
import type { Versioned } from '../store/subject-store.js';
import type { Tasks } from '../store/tasks.js';
import { VersionedCache, type CacheBounds } from './versioned-cache.js';
import { watchStream, type StreamWatch } from './stream-watch.js';

export interface PollView {
  /** The caller's task, or null when the account has no task with this id. */
  task(accountId: string, taskId: string): Promise<TaskRecord | null>;
  /** The account's balance; null for an account without a ledger. */
  balance(accountId: string): Promise<number | null>;
  /** The account of a valid, unrevoked API key; null otherwise. */
  accountOfKey(apiKey: string): Promise<string | null>;
  /** Whether each family's watch is live now (polls answered from memory), for /metrics. */
  live(): Record<'tasks' | 'balances' | 'keys', boolean>;
  /** Called with every task record heard (the watch, this gateway's writes): the live events learn of settled tasks here. */
  onTask(listener: (task: TaskRecord) => void): void;
  stop(): Promise<void>;
}

export interface PollViewLimits {
  /** The most entries each cache (tasks, balances, keys) holds. */
  maxEntries: number;
  /** The longest any entry is served before it is read again. */
  maxAgeMs: number;
}

/** A finished task is usually polled once more; it leaves sooner than the others. */
const FINISHED_TASK_LIFETIME_MS = 60_000;
/**
 * "None" (an unknown task id, an account without a ledger) is remembered this long. Correct for
 * longer (the watch brings a record written since); short so that a flood of random ids does not
 * keep real entries out of the bound for long.
 */
const ABSENT_LIFETIME_MS = 30_000;
/** What an absent record is cached as (sequence 0: any record heard later is newer). */
const ABSENT_SEQ = 0;

export interface PollViewDeps {
  nc: NatsConnection;
  js: JetStreamClient;
  names: StoreNames;
  tasks: Tasks;
  ledger: Ledger;
  accounts: Accounts;
  logger: Pick<Logger, 'warn' | 'error'>;
  metrics: GatewayMetrics;
}

/** One cached store subject family: its cache and the watch that keeps it current. */
interface Family<V> {
  /** null: the store has no such record (see ABSENT_LIFETIME_MS). */
  cache: VersionedCache<V | null>;
  watch: StreamWatch;
  counted: Record<'hit' | 'miss' | 'bypass', { inc(): void }>;
}

/**
 * `keyOf` turns a watched subject and its parsed record into the cache key, or null for a record
 * that does not match its subject (only the store's writers publish there, but a claim is checked).
 */
async function family<S extends z.ZodType>(
  deps: PollViewDeps,
  name: 'tasks' | 'balances' | 'keys',
  stream: string,
  filter: string,
  schema: S,
  bounds: CacheBounds<z.output<S>>,
  keyOf: (subject: string, record: z.output<S>) => string | null,
  onRecord: (record: z.output<S>) => void = () => undefined,
): Promise<Family<z.output<S>>> {
  const cache = new VersionedCache<z.output<S> | null>({
    ...bounds,
    expired: (value, atMs, nowMs) =>
      value === null ? nowMs - atMs >= ABSENT_LIFETIME_MS : (bounds.expired?.(value, atMs, nowMs) ?? false),
  });
  const watch = await watchStream(deps.nc, deps.js, {
    stream,
    filter,
    onMessage(subject, seq, data) {
      const parsed = schema.safeParse(data);
      const key = parsed.success ? keyOf(subject, parsed.data) : null;
      if (!parsed.success || key === null)
        deps.logger.warn({ subject, seq }, 'A store record that does not match its subject was not cached');
      else {
        cache.offer(key, seq, parsed.data, Date.now());
        onRecord(parsed.data);
      }
    },
    onInterrupt: () => cache.clear(),
    onError: (err) => deps.logger.warn({ err, stream }, 'A store watch stopped; polls read the store'),
  }).catch((err: unknown): StreamWatch => {
    // Correct without it, only slower: every lookup of this family reads the store.
    deps.logger.error(
      { err, stream, filter },
      `The poll view cannot watch ${stream} (a NATS user without the consumer permissions of deploy/nats/media-users.conf?); its polls read the store`,
    );
    return { live: () => false, stop: async () => undefined };
  });
  const counted = {
    hit: deps.metrics.viewReads.labels(name, 'hit'),
    miss: deps.metrics.viewReads.labels(name, 'miss'),
    bypass: deps.metrics.viewReads.labels(name, 'bypass'),
  };
  return { cache, watch, counted };
}

/**
 * The cached value, or the store's (cached when the watch is live). `absentToo`: whether "none" is
 * cached as well; not for API keys, which anyone may send before any limit by account applies (a
 * flood of random keys would push the real ones out of the bound).
 */
async function cachedRead<V>(
  f: Family<V>,
  key: string,
  read: () => Promise<Versioned<V> | null>,
  absentToo = true,
): Promise<V | null> {
  const now = Date.now();
  const live = f.watch.live(now);
  if (live) {
    const hit = f.cache.get(key, now);
    if (hit !== undefined) {
      f.counted.hit.inc();
      return hit;
    }
  }
  (live ? f.counted.miss : f.counted.bypass).inc();
  const epoch = f.cache.epoch;
  const found = await read();
  if (!live || (found === null && !absentToo)) return found?.value ?? null;
  return f.cache.fill(key, found?.seq ?? ABSENT_SEQ, found?.value ?? null, epoch, Date.now());
}

/** The last token of a subject. */
function lastToken(subject: string): string {
  return subject.slice(subject.lastIndexOf('.') + 1);
}

export async function startPollView(deps: PollViewDeps, limits: PollViewLimits): Promise<PollView> {
  const { names } = deps;
  const bounds = { maxEntries: limits.maxEntries, maxAgeMs: limits.maxAgeMs };
  const taskListeners: ((task: TaskRecord) => void)[] = [];
  const heard = (task: TaskRecord) => {
    for (const listener of taskListeners) listener(task);
  };
  const tasks = await family(
    deps,
    'tasks',
    names.tasksStream,
    names.tasksFilter,
    taskRecordSchema,
    {
      ...bounds,
      expired: (task: TaskRecord, atMs, nowMs) =>
        task.status !== 'pending' && nowMs - atMs >= FINISHED_TASK_LIFETIME_MS,
    },
    (subject, task) =>
      subject === names.taskSubject(task.accountId, task.id) ? taskKey(task.accountId, task.id) : null,
    heard,
  );
  const balances = await family(
    deps,
    'balances',
    names.ledgerStream,
    names.ledgerFilter,
    ledgerEntrySchema,
    bounds,
    (subject) => lastToken(subject),
  );
  const keys = await family(
    deps,
    'keys',
    names.accountsStream,
    names.keySubject('*'),
    keyRecordSchema,
    bounds,
    (subject) => lastToken(subject),
  );

  // This gateway's own writes are known before any watch delivers them: read-your-writes here.
  deps.tasks.onWrite((seq, task) => {
    tasks.cache.offer(taskKey(task.accountId, task.id), seq, task, Date.now());
    heard(task);
  });
  deps.ledger.onWrite((accountId, seq, entry) => balances.cache.offer(accountId, seq, entry, Date.now()));

  return {
    task: (accountId, taskId) => cachedRead(tasks, taskKey(accountId, taskId), () => deps.tasks.get(accountId, taskId)),
    balance: async (accountId) =>
      (await cachedRead(balances, accountId, () => deps.ledger.last(accountId)))?.balance ?? null,
    async accountOfKey(apiKey) {
      const hash = hashApiKey(apiKey);
      const key: KeyRecord | null = await cachedRead(keys, hash, () => deps.accounts.keyRecord(hash), false);
      return key === null || key.revokedAt !== undefined ? null : key.accountId;
    },
    live() {
      const now = Date.now();
      return { tasks: tasks.watch.live(now), balances: balances.watch.live(now), keys: keys.watch.live(now) };
    },
    onTask: (listener) => void taskListeners.push(listener),
    async stop() {
      await Promise.all([tasks.watch.stop(), balances.watch.stop(), keys.watch.stop()]);
    },
  };
}

function taskKey(accountId: string, taskId: string): string {
  return `${accountId}.${taskId}`;
}
