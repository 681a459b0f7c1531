/**
 * What the poll view's tests share: a real nats-server with the store streams (started before the
 * file's tests, stopped after), "gateways" that are a store and a poll view on a connection of their
 * own, the view's read counters, and a pending task record.
 */
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { pino } from 'pino';
import { afterAll, beforeAll } from 'vitest';
import { GatewayMetrics } from '../../../src/gateway/monitoring/metrics.js';
import { openStore, type Store } from '../../../src/gateway/store/index.js';
import type { TaskRecord } from '../../../src/gateway/store/records.js';
import { ensureStoreStreams, storeNames, type StoreNames } from '../../../src/gateway/store/streams.js';
import { startPollView, type PollView } from '../../../src/gateway/poll-view/poll-view.js';
import { startNatsServer, type TestNatsServer } from '../../worker/helpers/nats-server.js';

export const viewLogger = pino({ level: 'silent' });
export const viewLimits = { maxEntries: 100, maxAgeMs: 60_000 };

export interface ViewGateway {
  nc: NatsConnection;
  store: Store;
  view: PollView;
  metrics: GatewayMetrics;
}

export interface ViewFixture {
  nats(): TestNatsServer;
  /** Closed after the file's tests. */
  connections: NatsConnection[];
  /** Stopped after the file's tests. */
  views: PollView[];
  gateway(names?: StoreNames): Promise<ViewGateway>;
}

/** Registers the file's beforeAll and afterAll. */
export function pollViewFixture(prefix: string): ViewFixture {
  let nats: TestNatsServer | undefined;
  const connections: NatsConnection[] = [];
  const views: PollView[] = [];
  beforeAll(async () => {
    nats = await startNatsServer();
    const nc = await connect({ servers: nats.url });
    connections.push(nc);
    await ensureStoreStreams(await jetstreamManager(nc), prefix);
  }, 60_000);
  afterAll(async () => {
    for (const view of views) await view.stop();
    for (const nc of connections) await nc.close();
    await nats?.close();
  });
  return {
    nats: () => nats!,
    connections,
    views,
    async gateway(names = storeNames(prefix)) {
      // Reconnects for as long as a test restarts the server.
      const nc = await connect({ servers: nats!.url, maxReconnectAttempts: -1, reconnectTimeWait: 200 });
      connections.push(nc);
      const store = await openStore(nc, prefix);
      const metrics = new GatewayMetrics();
      const view = await startPollView(
        {
          nc,
          js: jetstream(nc),
          names,
          tasks: store.tasks,
          ledger: store.ledger,
          accounts: store.accounts,
          logger: viewLogger,
          metrics,
        },
        viewLimits,
      );
      views.push(view);
      return { nc, store, view, metrics };
    },
  };
}

/** media_gateway_view_reads_total{family,outcome} of one gateway. */
export async function viewReads(g: { metrics: GatewayMetrics }, family: string, outcome: string): Promise<number> {
  const metric = (await g.metrics.viewReads.get()).values.find(
    (v) => v.labels['family'] === family && v.labels['outcome'] === outcome,
  );
  return metric?.value ?? 0;
}

export function pendingTask(accountId: string, id: string): TaskRecord {
  return {
    id,
    accountId,
    model: 'vendor-image-upscale',
    kind: 'image',
    status: 'pending',
    creditsUsed: 20,
    createdAt: new Date().toISOString(),
    debitSeq: 1,
    extras: {},
  };
}
