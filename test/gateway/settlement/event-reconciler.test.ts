/**
 * Every stored event settles its task (src/gateway/settlement/event-reconciler.ts), on a real nats-server with
 * no events consumer running: what a gateway is left with when nats-server 2.10 skips the events
 * consumer's redelivery of an event it failed once. An event older than the grace whose task is
 * pending settles it through the real service (completed, or failed and refunded once); an event
 * from a host that did not claim the task first, a young one, and one whose task is settled do not.
 */
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cancelClient } from '../../../src/gateway/worker-clients/cancel-client.js';
import { reconcileEventsOnce, type EventReconcileDeps } from '../../../src/gateway/settlement/event-reconciler.js';
import { GatewayMetrics } from '../../../src/gateway/monitoring/metrics.js';
import { quoteGate } from '../../../src/gateway/worker-clients/quote-gate.js';
import { securityEvents } from '../../../src/gateway/monitoring/security-events.js';
import { gatewayService, type GatewayService } from '../../../src/gateway/service.js';
import { openStore, type Store } from '../../../src/gateway/store/index.js';
import { ensureStoreStreams } from '../../../src/gateway/store/streams.js';
import {
  claimTask,
  claimsStreamConfig,
  eventSubject,
  eventsStreamConfig,
  jobsStreamConfig,
  parseProtocolSettings,
  type TerminalEvent,
} from '../../../src/protocol/index.js';
import { musicDebit } from '../helpers/music-debit.js';
import { sleep } from '../../worker/helpers/jetstream.js';
import { startNatsServer, type TestNatsServer } from '../../worker/helpers/nats-server.js';

const protocol = parseProtocolSettings({ jobsStream: 'ER_JOBS', eventsStream: 'ER_EVENTS', claimsStream: 'ER_CLAIMS' });
const logger = pino({ level: 'silent' });

let nats: TestNatsServer;
let nc: NatsConnection;
let js: JetStreamClient;
let jsm: JetStreamManager;
let store: Store;
let service: GatewayService;
let deps: EventReconcileDeps;

beforeAll(async () => {
  nats = await startNatsServer();
  nc = await connect({ servers: nats.url });
  js = jetstream(nc);
  jsm = await jetstreamManager(nc);
  for (const config of [jobsStreamConfig(protocol), eventsStreamConfig(protocol), claimsStreamConfig(protocol)])
    await jsm.streams.add(config);
  await ensureStoreStreams(jsm, 'ER');
  store = await openStore(nc, 'ER');
  const metrics = new GatewayMetrics();
  service = gatewayService({
    js,
    ledger: store.ledger,
    tasks: store.tasks,
    quote: async () => {
      throw new Error('no quotes here');
    },
    quoteGate: quoteGate(1),
    cancel: cancelClient(nc, 1000),
    metrics,
    security: securityEvents(metrics, logger),
  });
  deps = {
    jsm,
    eventsStream: protocol.eventsStream,
    claimsStream: protocol.claimsStream,
    tasks: store.tasks,
    service,
    logger,
  };
  await store.ledger.open(accountId, 1000);
});

afterAll(async () => {
  await nc?.close();
  await nats?.close();
});

const accountId = 'acct_events';

/** A pending task of 15 credits, its job queued, as a submission leaves it. */
async function pendingTask(): Promise<string> {
  const { seq, entry } = await musicDebit(store.ledger, accountId);
  await service.materialise(accountId, entry, seq);
  return entry.taskId;
}

/** Host `host` claims the task and stores its event; the event's stored time. */
async function eventFrom(
  host: string,
  taskId: string,
  status: 'completed' | 'failed',
  claimAs = host,
): Promise<{ seq: number; at: number }> {
  await claimTask(
    js,
    jsm,
    { claimsStream: protocol.claimsStream, host: claimAs, timeoutMs: 2000, leaseMs: 30_000 },
    taskId,
    'settle',
  );
  const at = new Date().toISOString();
  const event: TerminalEvent = {
    id: taskId,
    model: 'vendor-v5-generate-music',
    status,
    result: status === 'completed' ? { audio_url: 'https://media.test/a.mp3' } : null,
    creditsUsed: status === 'completed' ? 15 : 0,
    ...(status === 'failed'
      ? { refund: true, error: { code: 'GENERATION_FAILED', status: 500, message: 'boom' } }
      : {}),
    createdAt: at,
    startedAt: at,
    finishedAt: at,
    durationMs: 0,
    attempt: 1,
    worker: 'test',
  };
  const ack = await js.publish(eventSubject(host, taskId), JSON.stringify(event));
  return { seq: ack.seq, at: (await jsm.streams.getMessage(protocol.eventsStream, { seq: ack.seq }))!.time.getTime() };
}

const statusOf = async (taskId: string) => (await store.tasks.get(accountId, taskId))?.value.status;

describe('events that did not settle their task', () => {
  it("settles a pending task from its first claimer's stored event once it is older than the grace; not another host's, not a young one, not twice", async () => {
    const completed = await pendingTask();
    const failed = await pendingTask();
    const forged = await pendingTask();
    const young = await pendingTask();
    const balanceBefore = await store.ledger.balance(accountId);
    await eventFrom('host1', completed, 'completed');
    await eventFrom('host1', failed, 'failed');
    // host2 sends an event for a task host1 claimed first: not believed, whatever its age.
    await eventFrom('host2', forged, 'completed', 'host1');
    // The young event is stored a few milliseconds later than the others: the grace's boundary
    // (1 ms before it) must fall between them, which the same millisecond would not allow.
    await sleep(10);
    const youngEvent = await eventFrom('host1', young, 'completed');

    // The grace reaches to just before the young event: it is left, and the next pass starts at it.
    const first = await reconcileEventsOnce(deps, 1, youngEvent.at + 999, 1000);
    expect(first).toEqual({ nextSeq: youngEvent.seq, repaired: 2 });
    expect(await statusOf(completed)).toBe('completed');
    expect(await statusOf(failed)).toBe('failed');
    expect(await store.ledger.balance(accountId)).toBe(balanceBefore! + 15);
    expect(await statusOf(forged)).toBe('pending');
    expect(await statusOf(young)).toBe('pending');

    const second = await reconcileEventsOnce(deps, first.nextSeq, youngEvent.at + 5000, 1000);
    expect(second).toEqual({ nextSeq: youngEvent.seq + 1, repaired: 1 });
    expect(await statusOf(young)).toBe('completed');
    // Read again from the start: every task is settled or its event not believed; nothing refunded twice.
    expect((await reconcileEventsOnce(deps, 1, youngEvent.at + 5000, 1000)).repaired).toBe(0);
    expect(await store.ledger.balance(accountId)).toBe(balanceBefore! + 15);
  });
});
