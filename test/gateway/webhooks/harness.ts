/**
 * A real nats-server with the gateway's store streams and the webhook deliveries running in this
 * process (webhooks/queue.ts), loopback receivers allowed: what the queue tests share.
 */
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { pino } from 'pino';
import { ensureConsumers } from '../../../src/gateway/settlement/consumers.js';
import { GatewayMetrics } from '../../../src/gateway/monitoring/metrics.js';
import { EVENTS_SUBJECT_PREFIX, maxDeliveriesAdvisoryFilter } from '../../../src/protocol/index.js';
import { openStore, type Store } from '../../../src/gateway/store/index.js';
import { ensureStoreStreams } from '../../../src/gateway/store/streams.js';
import { startWebhookDeliveries } from '../../../src/gateway/webhooks/queue.js';
import { startNatsServer, type TestNatsServer } from '../../worker/helpers/nats-server.js';

export interface QueueHarness {
  nats: TestNatsServer;
  nc: NatsConnection;
  store: Store;
  stop(): Promise<void>;
}

export async function startQueueHarness(prefix: string, retryDelaysMs: number[]): Promise<QueueHarness> {
  const nats = await startNatsServer();
  const nc = await connect({ servers: nats.url });
  const jsm = await jetstreamManager(nc);
  await ensureStoreStreams(jsm, prefix);
  const store = await openStore(nc, prefix);
  const consumerPrefix = prefix.toLowerCase();
  // Only the webhooks' durable is used here; the events stream is there for ensureConsumers' others
  // (with the subjects their filter names: nats-server 2.9 refuses a filter outside its stream's).
  await jsm.streams.add({ name: `${prefix}_EV`, subjects: [`${EVENTS_SUBJECT_PREFIX}.>`] });
  await jsm.streams.add({ name: `${prefix}_ADV`, subjects: [maxDeliveriesAdvisoryFilter(`${prefix}_JOBS`)] });
  await ensureConsumers(jsm, {
    eventsStream: `${prefix}_EV`,
    claimsStream: `${prefix}_EV`,
    jobsStream: `${prefix}_JOBS`,
    advisoriesStream: `${prefix}_ADV`,
    consumerPrefix,
    names: store.names,
  });
  const deliveries = await startWebhookDeliveries({
    js: jetstream(nc),
    store: store.webhooks,
    tasks: store.tasks,
    names: store.names,
    consumerPrefix,
    policy: { allowLoopback: true },
    retryDelaysMs,
    body: (task) => ({ success: true, data: { id: task.id, status: task.status } }),
    userAgent: 'test',
    metrics: new GatewayMetrics(),
    logger: pino({ level: 'silent' }),
  });
  return {
    nats,
    nc,
    store,
    async stop() {
      await deliveries.stop();
      await nc.close();
      await nats.close();
    },
  };
}
