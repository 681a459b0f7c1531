/**
 * The gateway process: connect to NATS, check that the streams and its consumers exist as its
 * settings expect (the worker's jobs and events streams too; `media-worker provision` makes them all,
 * the gateway changes none), start the two consumers and the HTTP API.
 * `stop()` closes in order: refuse new requests and finish those in progress, stop the consumers,
 * then drain the connection.
 */
import { jetstream, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import {
  PROVISION_HINT,
  advisoriesStreamConfig,
  claimsStreamConfig,
  connectNats,
  eventsStreamConfig,
  jobsStreamConfig,
  openObjectStore,
  resultsBaseUrl,
  streamProblems,
  type ProtocolSettings,
} from '../protocol/index.js';
import { cancelClient } from './worker-clients/cancel-client.js';
import { consumerProblems, startConsumers, type ConsumerLoops } from './settlement/consumers.js';
import { buildApp, servedLinks, type GatewayApp } from './http/app.js';
import { PACKAGE_VERSION } from '../paths.js';
import { successEnvelope } from './errors.js';
import { taskView, withSignedLinks } from './api-views.js';
import { startWebhookDeliveries, webhookConsumerConfig } from './webhooks/queue.js';
import { watchFleet } from './monitoring/fleet-gauges.js';
import { GatewayMetrics } from './monitoring/metrics.js';
import { startDebitReconciler } from './settlement/debit-reconciler.js';
import { startEventReconciler } from './settlement/event-reconciler.js';
import { startPendingSweeper } from './settlement/pending-sweeper.js';
import { watchProgress } from './progress-board.js';
import { quoteClient, timedQuotes } from './worker-clients/quote-client.js';
import { perGatewayCap, quoteGate } from './worker-clients/quote-gate.js';
import { resultCheck } from './results/result-check.js';
import { storedFileCheck } from './results/stored-files.js';
import { startUploadUrls } from './results/upload-urls.js';
import { securityEvents } from './monitoring/security-events.js';
import { gatewayService } from './service.js';
import { GatewaySettingsError, type GatewaySettings } from './settings.js';
import { openStore } from './store/index.js';
import { startPollView } from './poll-view/poll-view.js';
import { startTracing, telemetrySettingsFromEnv, type TelemetrySettings, type Tracing } from '../telemetry/index.js';

export interface GatewayHandle {
  /** The address the API listens on. */
  url: string;
  app: GatewayApp;
  stop(): Promise<void>;
}

/** A worker answering a cancel of a task running on another host waits up to 5 s for that host's event. */
const CANCEL_TIMEOUT_MS = 10_000;

/** `telemetry`: the OTEL_* settings (default: the environment's); tracing starts first and stops last. */
export async function startGateway(
  settings: GatewaySettings,
  protocol: ProtocolSettings,
  logger: Logger,
  telemetry: TelemetrySettings = telemetrySettingsFromEnv(),
): Promise<GatewayHandle> {
  const tracing = await startTracing(telemetry, { serviceName: 'media-worker-gateway', logger });
  try {
    return await startTraced(settings, protocol, logger, tracing);
  } catch (err) {
    await tracing.shutdown();
    throw err;
  }
}

async function startTraced(
  settings: GatewaySettings,
  protocol: ProtocolSettings,
  logger: Logger,
  tracing: Tracing,
): Promise<GatewayHandle> {
  if (protocol.resultsStore === 'upload-url' && protocol.s3Bucket === undefined) {
    throw new GatewaySettingsError(
      "Invalid setting RESULTS_S3_BUCKET: Expected it to be set with RESULTS_STORE=upload-url (the gateway presigns the workers' upload URLs against it) but received it unset",
    );
  }
  const nc = await connectNats(protocol);
  const jsm = await jetstreamManager(nc);
  const workerStreams = await workerStreamProblems(jsm, protocol);
  if (workerStreams.length > 0)
    throw new Error(
      `The worker protocol's streams are not as the gateway's settings expect (${workerStreams.join('; ')}): ${PROVISION_HINT}`,
    );
  const store = await openStore(nc, settings.streamPrefix, protocol.streamReplicas);
  const js = jetstream(nc);
  const metrics = new GatewayMetrics();
  const security = securityEvents(metrics, logger);
  const service = gatewayService({
    js,
    ledger: store.ledger,
    tasks: store.tasks,
    quote: timedQuotes(
      quoteClient(nc, { timeoutMs: settings.quoteTimeoutMs, inboxPrefix: protocol.natsInboxPrefix }),
      metrics,
    ),
    quoteGate: quoteGate(perGatewayCap(settings.quotesPerAccount, settings.gatewayInstances)),
    metrics,
    security,
    cancel: cancelClient(nc, CANCEL_TIMEOUT_MS),
    webhooks: store.webhooks,
  });
  const consumerNames = {
    eventsStream: protocol.eventsStream,
    claimsStream: protocol.claimsStream,
    jobsStream: protocol.jobsStream,
    advisoriesStream: protocol.advisoriesStream,
    consumerPrefix: settings.consumerPrefix,
    names: store.names,
  };
  const consumers = await consumerProblems(jsm, consumerNames);
  if (consumers.length > 0)
    throw new Error(
      `The gateway's consumers are not as its settings expect (${consumers.join('; ')}): ${PROVISION_HINT}`,
    );
  const checkResult = resultCheck(resultsBaseUrl(protocol), security, storedFileCheck(protocol, settings.serveResults));
  const loops: ConsumerLoops = await startConsumers(js, consumerNames, service, metrics, logger, checkResult);
  const webhookPolicy = { allowLoopback: settings.webhookAllowLoopback };
  const links = servedLinks(settings, protocol.publicBaseUrl, protocol.upscaleResultLifetimeDays);
  const webhooks = await startWebhookDeliveries({
    js,
    store: store.webhooks,
    tasks: store.tasks,
    names: store.names,
    consumerPrefix: settings.consumerPrefix,
    policy: webhookPolicy,
    retryDelaysMs: settings.webhookRetryDelaysMs,
    // The JSON a poll of the task answers, its result links signed.
    body: (task) => successEnvelope(withSignedLinks(taskView(task), task, links)),
    userAgent: `media-worker-gateway/${PACKAGE_VERSION} (webhooks)`,
    metrics,
    logger: logger.child({ component: 'webhooks' }),
  });
  const progress = watchProgress(nc);
  const view = await startPollView(
    { nc, js, names: store.names, tasks: store.tasks, ledger: store.ledger, accounts: store.accounts, logger, metrics },
    { maxEntries: settings.viewCacheEntries, maxAgeMs: settings.viewMaxAgeMs },
  );
  const pendingSweeper = startPendingSweeper(
    { jsm, names: store.names, service, lifetimesMs: settings.pendingLifetimeMs, logger },
    settings.pendingSweepIntervalMs,
  );
  // The server reports its default (2 min) when the stream was made without one.
  const jobsDuplicateWindowMs = (await jsm.streams.info(protocol.jobsStream)).config.duplicate_window / 1e6;
  const debitReconciler = startDebitReconciler({
    jsm,
    names: store.names,
    tasks: store.tasks,
    service,
    jobsDuplicateWindowMs,
    logger: logger.child({ component: 'debit-reconciler' }),
  });
  // RESULTS_STORE=upload-url: the workers' requests for upload URLs are answered here (results/upload-urls.ts).
  const uploadUrls =
    protocol.resultsStore === 'upload-url'
      ? startUploadUrls({
          nc,
          jsm,
          claimsStream: protocol.claimsStream,
          tasks: store.tasks,
          protocol,
          logger: logger.child({ component: 'upload-urls' }),
        })
      : undefined;
  const eventReconciler = startEventReconciler({
    jsm,
    eventsStream: protocol.eventsStream,
    claimsStream: protocol.claimsStream,
    tasks: store.tasks,
    service,
    checkResult,
    logger: logger.child({ component: 'event-reconciler' }),
  });
  const webhookDurable = webhookConsumerConfig(store.names, settings.consumerPrefix);
  watchFleet(metrics, {
    jsm,
    jobsStream: protocol.jobsStream,
    webhooks: { stream: webhookDurable.stream, durable: webhookDurable.config.durable_name },
    viewLive: () => view.live(),
  });
  let stopping = false;
  let natsUp = true;
  metrics.natsConnected.set(1);
  void watchConnection(nc, (up) => {
    natsUp = up;
    metrics.natsConnected.set(up ? 1 : 0);
    logger.warn({ connected: up }, up ? 'NATS reconnected' : 'NATS connection lost; reconnecting');
  });
  const app = await buildApp({
    settings,
    resultsDir: protocol.resultsDir,
    resultsBaseUrl: protocol.publicBaseUrl,
    ...(protocol.resultsStore === 'local' ? {} : { resultsBucket: onceOpened(() => openObjectStore(protocol)) }),
    upscaleResultLifetimeDays: protocol.upscaleResultLifetimeDays,
    accounts: store.accounts,
    ledger: store.ledger,
    tasks: store.tasks,
    service,
    metrics,
    logger,
    progress,
    view,
    webhooks: store.webhooks,
    idempotency: store.idempotency,
    webhookPolicy,
    notReadyReason: () =>
      stopping
        ? 'stopping'
        : nc.isClosed()
          ? 'NATS connection closed'
          : natsUp
            ? null
            : 'NATS connection lost; reconnecting',
  });
  const url = await app.listen({ host: settings.host, port: settings.port });
  return {
    url,
    app,
    async stop() {
      stopping = true;
      await app.close();
      await pendingSweeper.stop();
      await debitReconciler.stop();
      await eventReconciler.stop();
      await loops.stop();
      await webhooks.stop();
      await uploadUrls?.stop();
      progress.stop();
      await view.stop();
      await nc.drain();
      await tracing.shutdown();
    },
  };
}

/** `open` called once, on first use. */
function onceOpened<T>(open: () => Promise<T>): () => Promise<T> {
  let opened: Promise<T> | undefined;
  return () => (opened ??= open());
}

/** Readiness follows the connection: a gateway without NATS can neither charge nor answer polls. */
async function watchConnection(nc: NatsConnection, onChange: (connected: boolean) => void): Promise<void> {
  for await (const status of nc.status()) {
    if (status.type === 'disconnect') onChange(false);
    else if (status.type === 'reconnect') onChange(true);
  }
}

function workerStreamProblems(jsm: JetStreamManager, protocol: ProtocolSettings): Promise<string[]> {
  return streamProblems(jsm, [
    jobsStreamConfig(protocol),
    eventsStreamConfig(protocol),
    advisoriesStreamConfig(protocol),
    claimsStreamConfig(protocol),
  ]);
}
