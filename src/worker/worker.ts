/**
 * The daemon: starting (connect, streams and consumers, services) -> running (one pull loop per
 * slot) -> draining (no new pulls; running jobs finish within the grace period or are handed back)
 * -> stopped (connection drained), or failed when the connection closes for good (lifecycle.ts says
 * which state follows which event). SIGTERM handling belongs to the caller, which calls stop().
 * startWorker reads in that order: housekeeping, quoting, the job loops; every
 * ending goes through tearDown().
 */
import { jetstream, jetstreamManager, type Consumer, type ConsumerMessages, type JsMsg } from '@nats-io/jetstream';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import { Availability, type KindChecks } from './availability.js';
import { RunningTasks, cancelTask, listenForAborts } from './cancel.js';
import { capabilities, type HostFacts } from './discovery.js';
import {
  CAPABILITIES_SUBJECT,
  connectNats,
  consumerName,
  createClaimer,
  publishClaim,
  whoCanRun,
  type ClaimOp,
  type ClaimResult,
} from '../protocol/index.js';
import { EventPublisher } from './event-publisher.js';
import { checkKillPoint } from './kill-point.js';
import { startHealthServer, type HealthServer } from './health.js';
import { handleJobMessage, type Runtime } from './job-runner.js';
import { workerMetrics, type WorkerMetrics } from './metrics.js';
import { startQuoteService, type QuoteService } from './quote-service.js';
import { createResultStore, type ResultStore } from './results.js';
import { JOB_KINDS, type JobKind } from '../jobs/index.js';
import type { WorkerSettings } from './settings.js';
import { TopologyError, checkTopology } from './topology.js';
import type { JobExecutor, QuoteFunction } from './types.js';
import { isLive, nextState, type LifecycleEvent, type WorkerState } from './lifecycle.js';
import { sleep } from '../sleep.js';
import { errorMessage } from '../errors.js';

export interface WorkerDeps {
  executor: JobExecutor;
  /** Root logger; every job logs through child({ taskId, model }). */
  logger: Logger;
  /** Offered as the quote service when given. */
  quote?: QuoteFunction;
  /** Defaults to the process's metrics (workerMetrics()). */
  metrics?: WorkerMetrics;
  /** Reported by the quote service's discovery (semantic version). */
  version?: string;
  /**
   * The store the executor writes results with (createResultStore(settings)); the worker runs its
   * sweeper. Default: one made from the settings, exposed as `handle.results`.
   */
  results?: ResultStore;
  /**
   * Readiness checks per kind (src/app/readiness.ts builds them for `serve`): a kind is pulled only
   * while its checks pass. Kinds without checks are always ready.
   */
  readiness?: KindChecks;
  /**
   * Removes what killed workers left behind (job directories, partial files); run at start, before
   * any job is pulled, then every WORKER_LEFTOVER_SWEEP_INTERVAL_MS. Returns how many it removed.
   */
  sweepLeftovers?: () => Promise<number>;
  /** What discovery reports of this host's hardware (the CLI's `serve` says what it opened). */
  host?: Pick<HostFacts, 'hardwareClass' | 'executionProvider' | 'device' | 'precision' | 'backends'>;
}

/** How long a quote for a kind this host cannot run waits for another live worker to say it can. */
const PEER_DISCOVERY_WAIT_MS = 500;

export interface WorkerHandle {
  readonly state: WorkerState;
  /** Port of /metrics, /healthz and /readyz (the chosen one when configured as 0). */
  readonly healthPort: number;
  /** Where the executor stores results (the sweeper runs while the worker runs). */
  readonly results: ResultStore;
  /** Which kinds run here now, and why not. */
  readonly availability: Availability;
  /** Settles when the worker has stopped: by stop(), or rejects when the connection closed for good. */
  readonly stopped: Promise<void>;
  /** Drains and stops; safe to call more than once (every call gets the same promise). */
  stop(): Promise<void>;
}

const MAX_PULL_BACKOFF_MS = 5_000;

export async function startWorker(settings: WorkerSettings, deps: WorkerDeps): Promise<WorkerHandle> {
  const logger = deps.logger;
  const metrics = deps.metrics ?? workerMetrics();
  let state: WorkerState = 'starting';
  const advance = (event: LifecycleEvent): void => {
    state = nextState(state, event);
  };
  let connected = true;

  checkKillPoint(); // a test-only hook's bad value stops the start, naming the variable
  const nc = await connectNats(settings);
  const parts: WorkerParts = {
    nc,
    logger,
    timers: [],
    stopPulling: new AbortController(),
    drain: new AbortController(),
    loops: [],
  };

  try {
    const jsm = await jetstreamManager(nc);
    await checkTopology(jsm, settings);
    const js = jetstream(nc);
    const events = new EventPublisher(nc, js, jsm, settings, logger);
    const claimOptions = {
      claimsStream: settings.claimsStream,
      host: settings.hostId,
      timeoutMs: settings.publishTimeoutMs,
      leaseMs: settings.claimLeaseMs,
    };
    const claim = createClaimer(js, jsm, claimOptions);
    await checkHostIdentity(() => publishClaim(js, claimOptions, HOST_CHECK_TASK, 'claim'), settings.hostId);
    const results = deps.results ?? createResultStore(settings, logger);
    // Upload URLs are asked for over this connection, as this host.
    results.connect?.(nc, settings.hostId);

    const availability = new Availability({
      slots: settings.concurrency,
      checks: deps.readiness ?? {},
      metrics,
      logger: logger.child({ component: 'readiness' }),
    });
    const health = await startHealthServer(settings.healthHost, settings.healthPort, metrics.registry, {
      live: () => isLive(state),
      notReadyReason: () =>
        state !== 'running'
          ? `worker is ${state}`
          : !connected
            ? 'NATS connection lost; reconnecting'
            : availability.notReadyReason(),
      kinds: () => availability.status(),
      ...(deps.host?.device === undefined ? {} : { device: deps.host.device }),
    });
    parts.health = health;
    await startHousekeeping(parts, settings, deps, { availability, results, metrics });

    const runtime: Runtime = {
      settings,
      nc,
      events,
      executor: deps.executor,
      logger,
      metrics,
      workerName: settings.natsName,
      inFlight: new Map(),
      drainSignal: parts.drain.signal,
      running: new RunningTasks(),
      hostId: settings.hostId,
      claim,
      discardResults: (taskId) => results.discard(taskId),
    };
    parts.abortListener = listenForAborts(nc, runtime.running, logger.child({ component: 'cancel' }));
    parts.quoteService = await startQuoting(settings, deps, {
      nc,
      events,
      claim,
      running: runtime.running,
      discardResults: runtime.discardResults,
      availability,
      metrics,
      state: () => state,
    });
    await startJobLoops(parts, settings, { js, availability, runtime });

    metrics.natsConnected.set(1);
    void watchConnection(nc, (up) => {
      connected = up;
      metrics.natsConnected.set(up ? 1 : 0);
      logger[up ? 'info' : 'warn'](up ? 'NATS connection restored' : 'NATS connection lost; reconnecting');
    });

    advance('started');
    logger.info(
      {
        concurrency: settings.concurrency,
        served: availability.servedKinds().filter((kind) => availability.isReady(kind)),
        jobsStream: settings.jobsStream,
        eventsStream: settings.eventsStream,
        healthPort: health.port,
        quote: Boolean(deps.quote),
      },
      'Worker running',
    );

    let stopping: Promise<void> | undefined;
    const stop = (): Promise<void> => {
      stopping ??= (async () => {
        advance('drain');
        logger.info(
          { graceMs: settings.drainGraceMs },
          'Draining: no new jobs; running jobs may finish within the grace period',
        );
        await tearDown(parts, { how: 'drain', graceMs: settings.drainGraceMs });
        advance('drained');
        logger.info('Worker stopped');
      })();
      return stopping;
    };

    const stopped = nc.closed().then(async (err) => {
      if (stopping) return stopping;
      // Closed without stop(): authentication revoked, or the server refused us for good.
      advance('closed');
      await tearDown(parts, { how: 'closed' });
      logger.fatal({ err }, 'NATS connection closed; worker stopped');
      throw err instanceof Error ? err : new Error('NATS connection closed');
    });
    // Callers that only use stop() must not see an unhandled rejection.
    stopped.catch(() => undefined);

    return {
      get state() {
        return state;
      },
      healthPort: health.port,
      results,
      availability,
      stopped,
      stop,
    };
  } catch (err) {
    await tearDown(parts, { how: 'start failed' });
    throw err;
  }
}

/** What a worker holds while it lives; released in one place, tearDown(), however the worker ends. */
interface WorkerParts {
  nc: NatsConnection;
  logger: Logger;
  /** What runs beside the pull loops (sweepers, readiness checks): each entry stops one. */
  timers: (() => void)[];
  health?: HealthServer;
  quoteService?: QuoteService;
  abortListener?: Subscription;
  /** Aborted when no more jobs are to be pulled (the drain, a closed connection, a failed start). */
  stopPulling: AbortController;
  /** Aborted when running jobs must stop: the drain's grace period is over, or the connection closed. */
  drain: AbortController;
  loops: Promise<void>[];
}

/**
 * How the worker ends: a drain lets running jobs finish within the grace period and drains the
 * connection; a connection closed for good leaves nothing to drain; a failed start closes it.
 */
type Ending = { how: 'drain'; graceMs: number } | { how: 'closed' } | { how: 'start failed' };

async function tearDown(parts: WorkerParts, ending: Ending): Promise<void> {
  const { nc, logger } = parts;
  parts.stopPulling.abort();
  const stopTimers = (): void => {
    for (const stopTimer of parts.timers.splice(0)) stopTimer();
  };
  switch (ending.how) {
    case 'drain': {
      const grace = setTimeout(
        () => parts.drain.abort(new DOMException('The worker is draining', 'AbortError')),
        ending.graceMs,
      );
      // Each loop returns once its job is acked, terminated or handed back (confirmed or
      // flushed): only then may the connection drain (an ack sent after drain() began is lost).
      await Promise.allSettled(parts.loops);
      clearTimeout(grace);
      stopTimers();
      await parts.quoteService
        ?.stop()
        .catch((err: unknown) => logger.warn({ err }, 'Quote service did not stop cleanly'));
      parts.abortListener?.unsubscribe();
      await nc.flush().catch(() => undefined);
      await nc.drain().catch(() => undefined);
      await parts.health?.close();
      return;
    }
    case 'closed':
      parts.drain.abort(new DOMException('The NATS connection closed', 'AbortError'));
      stopTimers();
      await parts.health?.close();
      return;
    case 'start failed':
      stopTimers();
      await parts.quoteService?.stop().catch(() => undefined);
      await parts.health?.close();
      await nc.close().catch(() => undefined);
      return;
  }
}

/**
 * Before any pull, what a killed worker left is reclaimed and each kind is checked; then the
 * readiness checks, the leftover sweeper and the results' sweeper run on their intervals.
 */
async function startHousekeeping(
  parts: WorkerParts,
  settings: WorkerSettings,
  deps: WorkerDeps,
  uses: { availability: Availability; results: ResultStore; metrics: WorkerMetrics },
): Promise<void> {
  const { availability, results, metrics } = uses;
  const { logger, timers } = parts;
  await sweepLeftoversOnce(deps.sweepLeftovers, metrics, logger);
  await availability.refresh();
  timers.push(availability.start(settings.readinessIntervalMs));
  if (deps.sweepLeftovers) {
    const sweep = deps.sweepLeftovers;
    const timer = setInterval(() => void sweepLeftoversOnce(sweep, metrics, logger), settings.leftoverSweepIntervalMs);
    timer.unref();
    timers.push(() => clearInterval(timer));
  }
  timers.push(
    results.startSweeper(settings.sweepIntervalMs, {
      swept(report) {
        metrics.resultsSweepErrors.inc(report.errors);
        if (report.errors === 0) metrics.resultsSweepLastSuccess.setToCurrentTime();
      },
      failed: () => metrics.resultsSweepErrors.inc(),
    }),
  );
}

/** The quote service (media.quote, cancellation, discovery), answering for this host. */
function startQuoting(
  settings: WorkerSettings,
  deps: WorkerDeps,
  uses: {
    nc: NatsConnection;
    events: EventPublisher;
    claim: (taskId: string, op?: ClaimOp) => Promise<ClaimResult>;
    running: RunningTasks;
    discardResults: (taskId: string) => Promise<void>;
    availability: Availability;
    metrics: WorkerMetrics;
    state: () => WorkerState;
  },
): Promise<QuoteService> {
  const { nc, events, claim, running, discardResults, availability, metrics, state } = uses;
  const logger = deps.logger;
  const host: Omit<HostFacts, 'instance'> = {
    worker: settings.natsName,
    version: deps.version ?? '0.0.0',
    ...deps.host,
  };
  const servesNow = (kind: JobKind): boolean => state() === 'running' && availability.isReady(kind);
  return startQuoteService(nc, {
    quote: deps.quote,
    // This host, or any other live one: the quote does not promise which host runs the job.
    canRun: async (kind) =>
      settings.quoteUnserved === 'price' ||
      servesNow(kind) ||
      (
        await whoCanRun(nc, CAPABILITIES_SUBJECT, kind, {
          first: true,
          waitMs: PEER_DISCOVERY_WAIT_MS,
          inboxPrefix: settings.natsInboxPrefix,
        })
      ).length > 0,
    cancel: (request) =>
      cancelTask(
        {
          nc,
          events,
          workerName: settings.natsName,
          logger: logger.child({ component: 'cancel' }),
          hostId: settings.hostId,
          claim,
          runHere: (taskId) => running.facts(taskId),
          discardResults,
        },
        request,
      ),
    capabilities: (instance) => capabilities({ ...host, instance }, state(), availability.status(), new Date()),
    logger: logger.child({ component: 'service' }),
    metrics,
    concurrency: settings.quoteConcurrency,
    timeoutMs: settings.quoteTimeoutMs,
    version: host.version,
    metadata: {
      ...(host.hardwareClass === undefined ? {} : { hardware_class: host.hardwareClass }),
      ...(host.executionProvider === undefined ? {} : { execution_provider: host.executionProvider }),
    },
  });
}

/** One pull loop per slot of each kind; a kind with no slots is not pulled at all. */
async function startJobLoops(
  parts: WorkerParts,
  settings: WorkerSettings,
  uses: { js: ReturnType<typeof jetstream>; availability: Availability; runtime: Runtime },
): Promise<void> {
  const { js, availability, runtime } = uses;
  const { nc, logger, stopPulling } = parts;
  const metrics = runtime.metrics;
  const pulling = (): boolean => !stopPulling.signal.aborted;
  for (const kind of JOB_KINDS) {
    const slots = settings.concurrency[kind];
    if (slots === 0) {
      metrics.slots.set({ kind }, 0);
      continue;
    }
    const consumer = await js.consumers.get(settings.jobsStream, consumerName(settings.consumerPrefix, kind));
    const ready = (): Promise<boolean> => availability.waitUntilReady(kind, stopPulling.signal);
    for (let slot = 0; slot < slots; slot++) {
      const slotLogger = logger.child({ kind, slot });
      const handle = async (msg: JsMsg): Promise<void> => {
        // A pull asked for while the kind could run may deliver after a check failed (the disk
        // filled meanwhile): the job goes back to the queue for a host that can run it.
        if (!(await availability.readyToPull(kind))) {
          const delayMs = settings.nakDelaysMs[0] ?? 0;
          slotLogger.warn(
            { delayMs, reasons: availability.status()[kind].reasons },
            'Handing a job back: this kind cannot run here now',
          );
          msg.nak(delayMs);
          await nc.flush().catch(() => undefined);
          metrics.recordJob(kind, 'declined');
          return;
        }
        await handleJobMessage(runtime, msg, kind);
      };
      const onUnready = (withdraw: () => void): (() => void) => availability.onUnready((k) => k === kind && withdraw());
      parts.loops.push(
        pullLoop({
          consumer,
          expiresMs: settings.pullExpiresMs,
          pulling,
          stopSignal: stopPulling.signal,
          logger: slotLogger,
          nc,
          handle,
          ready,
          onUnready,
        }),
      );
    }
  }
}

/**
 * One slot: pull one job (a fetch of one message: no prefetch, since a job waiting in the client
 * would have its ack timer running), handle it, repeat. When the drain begins, the pending pull is
 * withdrawn (its subscription closed, so the server stops offering it messages): a job offered to
 * a draining worker would burn one of its deliveries. One that arrives anyway is handed back.
 */
interface PullLoop {
  consumer: Consumer;
  /** Lifetime of one pull request. */
  expiresMs: number;
  /** False once the worker stops pulling (drain). */
  pulling: () => boolean;
  /** Aborted when the drain begins: the pending pull is withdrawn. */
  stopSignal: AbortSignal;
  logger: Logger;
  nc: NatsConnection;
  handle: (msg: JsMsg) => Promise<void>;
  /** Waits until the kind may be pulled; false ends the loop. */
  ready?: () => Promise<boolean>;
  /** Registers a withdrawal for when the kind becomes unable to run here; returns its removal. */
  onUnready?: (withdraw: () => void) => () => void;
}

async function pullLoop(loop: PullLoop): Promise<void> {
  const {
    consumer,
    expiresMs,
    pulling,
    stopSignal,
    logger,
    nc,
    handle,
    ready = () => Promise.resolve(true),
    onUnready,
  } = loop;
  let pending: ConsumerMessages | undefined;
  const withdraw = (): void => pending?.stop();
  stopSignal.addEventListener('abort', withdraw, { once: true });
  // The kind became unable to run here (disk full): the open pull is withdrawn too.
  const unsubscribe = onUnready?.(withdraw);
  let failures = 0;
  try {
    while (pulling()) {
      // A kind that cannot run here (models missing, disk short) is not asked for.
      if (!(await ready())) break;
      let msg: JsMsg | undefined;
      try {
        pending = await consumer.fetch({ max_messages: 1, expires: expiresMs });
        if (!pulling()) pending.stop();
        for await (const m of pending) msg = m;
        failures = 0;
      } catch (err) {
        if (!pulling() || nc.isClosed()) break;
        failures += 1;
        const waitMs = Math.min(250 * 2 ** (failures - 1), MAX_PULL_BACKOFF_MS);
        logger.warn({ err, waitMs }, 'Pull failed; retrying');
        await sleep(waitMs, stopSignal);
        continue;
      } finally {
        pending = undefined;
      }
      if (msg === undefined) continue;
      if (!pulling()) {
        msg.nak();
        await nc.flush().catch(() => undefined);
        break;
      }
      await handle(msg);
    }
  } finally {
    stopSignal.removeEventListener('abort', withdraw);
    unsubscribe?.();
  }
}

async function sweepLeftoversOnce(
  sweep: (() => Promise<number>) | undefined,
  metrics: WorkerMetrics,
  logger: Logger,
): Promise<void> {
  if (sweep === undefined) return;
  try {
    const removed = await sweep();
    if (removed > 0) {
      metrics.leftoversRemoved.inc(removed);
      logger.info({ removed }, 'Removed job directories and partial files left by worker processes that are gone');
    }
  } catch (err) {
    logger.warn({ err }, 'Leftover sweep failed');
  }
}

/** A task id no control plane issues: claimed once per host at start, to learn early whether this user may claim as WORKER_HOST_ID. */
const HOST_CHECK_TASK = '_host-check';

/** Refuses to start when the NATS user may not claim under WORKER_HOST_ID (every job would fail to be claimed). */
async function checkHostIdentity(claim: () => Promise<number>, hostId: string): Promise<void> {
  try {
    await claim();
  } catch (err) {
    throw new TopologyError(
      `This worker may not claim tasks as WORKER_HOST_ID=${hostId} (media.claims.${hostId}.*): ${errorMessage(err)}; ` +
        'each host needs its own NATS user allowed its host name (docs/operations.md, "Worker hosts")',
    );
  }
}

async function watchConnection(nc: NatsConnection, onChange: (connected: boolean) => void): Promise<void> {
  for await (const status of nc.status()) {
    if (status.type === 'disconnect') onChange(false);
    else if (status.type === 'reconnect') onChange(true);
  }
}
