/**
 * A submission's answer names a task that can be read at once (issue 38, item 3: in
 * `npm run chaos:partitions` a cancel sent right after an acknowledged submission got 404
 * TASK_NOT_FOUND, because writing the task record had timed out and was left to the outbox). Here
 * the first write of the task record fails, as it did in the partition, and no outbox runs: the task
 * must exist when submit() answers. Real nats-server, no HTTP.
 */
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { pino } from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { cancelClient } from '../../src/gateway/cancel-client.js';
import { GatewayMetrics } from '../../src/gateway/metrics.js';
import { quoteGate } from '../../src/gateway/quote-gate.js';
import { securityEvents } from '../../src/gateway/security-events.js';
import { gatewayService } from '../../src/gateway/service.js';
import { openStore, type Store } from '../../src/gateway/store/index.js';
import { ensureStoreStreams } from '../../src/gateway/store/streams.js';
import { jobsStreamConfig, parseProtocolSettings } from '../../src/protocol/index.js';
import { startNatsServer, type TestNatsServer } from '../worker/helpers/nats-server.js';

let nats: TestNatsServer;
let nc: NatsConnection;
let store: Store;

beforeAll(async () => {
  nats = await startNatsServer();
  nc = await connect({ servers: nats.url });
  const jsm = await jetstreamManager(nc);
  await jsm.streams.add(jobsStreamConfig(parseProtocolSettings({}))).catch(() => undefined);
  await ensureStoreStreams(jsm, 'RAA');
  store = await openStore(nc, 'RAA');
});

afterAll(async () => {
  await nc?.close();
  await nats?.close();
});

it('stores the task record before answering, even when its first write fails', async () => {
  const metrics = new GatewayMetrics();
  const logger = pino({ level: 'silent' });
  const ensure = store.tasks.ensure.bind(store.tasks);
  let failures = 1;
  store.tasks.ensure = async (...args) => {
    if (failures-- > 0) throw new Error('TIMEOUT (the stream leader is on the other side of a partition)');
    return ensure(...args);
  };
  const service = gatewayService({
    js: jetstream(nc),
    ledger: store.ledger,
    tasks: store.tasks,
    quote: async (job) => ({
      model: job.model,
      creditsUsed: 15,
      input: { custom_mode: false, prompt: 'a song', instrumental: false },
    }),
    quoteGate: quoteGate(10),
    cancel: cancelClient(nc, 1000),
    metrics,
    security: securityEvents(metrics, logger),
  });
  await store.ledger.open('acct_readafterack', 100);
  const answer = await service.submit(
    'acct_readafterack',
    { model: 'vendor-v5-generate-music', input: { prompt: 'a song', instrumental: false } } as never,
    'generate',
    logger,
  );
  expect((await store.tasks.get('acct_readafterack', answer['id'] as string))?.value.status).toBe('pending');
  expect(failures).toBeLessThan(0);
});
