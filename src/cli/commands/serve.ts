import type { Command } from 'commander';
import path from 'node:path';
import type { Config } from '../../config.js';
import { createEngine, executeJob, quoteOnly, type Engine } from '../../execute.js';
import { ensureModelFile, chooseSrModel } from '../../inference/index.js';
import type { Logger } from '../../logger.js';
import { jobDirSweep, modelTempSweep, sweepLeftovers } from '../../media/index.js';
import { hardwareClassOf } from '../../job-cost.js';
import { PACKAGE_VERSION } from '../../paths.js';
import { kindChecks } from '../../readiness.js';
import { registryOptions } from '../../runtime.js';
import {
  createResultStore,
  setExecutionProvider,
  startWorker,
  workerSettingsFromEnv,
  type JobExecutor,
  type QuoteFunction,
  type ResultStore,
  type WorkerSettings,
} from '../../worker/index.js';
import { cliContext } from '../context.js';
import { reportFailure } from '../exit.js';
import { handOverSignals, installStartupSignalHandlers } from '../startup-signals.js';

export function registerServe(program: Command): void {
  program
    .command('serve')
    .summary('run the daemon: jobs from NATS JetStream, one terminal event per job, the quote service')
    .description(
      'Connects to NATS (NATS_URL), sets up its streams and consumers, takes jobs of the kinds this host ' +
        'serves (WORKER_CONCURRENCY), publishes one completed or failed event per task, answers quote ' +
        'requests on media.quote, cancels tasks on media.cancel, announces what it can run on media.capabilities, and serves /metrics, /healthz and /readyz (WORKER_HEALTH_PORT). ' +
        'Each kind is pulled only while it can run here (models installed, directories writable, disk space: ' +
        '/readyz says why not); directories left by killed workers are removed at start. ' +
        'SIGTERM or SIGINT drains: no new jobs, in-flight jobs finish or are handed back within ' +
        'WORKER_DRAIN_GRACE_MS, then the process exits 0 (during start-up: at once). Protocol: docs/protocol.md, ' +
        'operations: docs/operations.md. Settings come from the environment: `media-worker config --reference` lists them.',
    )
    .action(async () => {
      try {
        await serve();
      } catch (err) {
        process.exitCode = reportFailure(err);
      }
    });
}

async function serve(): Promise<void> {
  // Already installed by src/cli.ts for the real command line; here for callers that skip it.
  installStartupSignalHandlers();
  const { config, logger } = cliContext({}, { daemon: true });
  const settings = withMusicSlot(workerSettingsFromEnv(), (config.musicBackends?.length ?? 0) > 0, process.env['WORKER_CONCURRENCY'] !== undefined);
  const engine = createEngine(config, logger, settings.watchdogMs);
  const executionProvider =
    settings.concurrency.image > 0 || settings.concurrency.video > 0 ? await reportExecutionProvider(engine, logger) : undefined;
  const results = createResultStore(settings, logger);
  const worker = await startWorker(settings, {
    executor: executorFor(engine, results),
    quote: quoteFor(engine),
    logger,
    results,
    version: PACKAGE_VERSION,
    readiness: kindChecks({ config, settings, engine, logger }),
    sweepLeftovers: () => sweepAllLeftovers(config),
    host: { hardwareClass: hardwareClassOf(config), executionProvider },
  });
  logger.info({ healthPort: worker.healthPort, kinds: settings.concurrency }, 'media-worker serving');

  const stop = (signal: NodeJS.Signals): void => {
    logger.info({ signal }, 'draining');
    worker.stop().then(
      async () => {
        await engine.release();
        process.exit(0);
      },
      (err: unknown) => {
        logger.fatal({ err }, 'drain failed');
        process.exit(1);
      },
    );
  };
  // From here on a signal drains (jobs may be running); the listeners stay, so none is missed.
  handOverSignals(stop);
  await worker.stopped;
}

/**
 * A host with a music backend configured serves one music job at a time unless WORKER_CONCURRENCY
 * says otherwise (its default leaves music off, for hosts without one).
 */
export function withMusicSlot(settings: WorkerSettings, musicConfigured: boolean, concurrencySet: boolean): WorkerSettings {
  if (!musicConfigured || concurrencySet || settings.concurrency.music > 0) return settings;
  return { ...settings, concurrency: { ...settings.concurrency, music: 1 } };
}

/** Job directories (temp dir) and half-written model files whose process is gone. */
async function sweepAllLeftovers(config: Config): Promise<number> {
  const filesDir = path.resolve(config.modelFilesDir ?? config.modelsDir);
  const reports = await Promise.all([sweepLeftovers(jobDirSweep(config.tmpDir)), sweepLeftovers(modelTempSweep(filesDir))]);
  return reports.reduce((n, r) => n + r.removed.length, 0);
}

function executorFor(engine: Engine, results: ResultStore): JobExecutor {
  return async (job, ctx) => {
    const executed = await executeJob(job, engine, {
      taskId: ctx.taskId,
      logger: ctx.logger,
      signal: ctx.signal,
      onProgress: (p) => ctx.onProgress(p),
      // Jobs from the network never name local files.
      allowLocalPaths: false,
      store: async (localPath, meta) => ({ url: (await results.storeResult(localPath, meta)).url }),
    });
    return { creditsUsed: executed.quote.creditsUsed, result: executed.result };
  };
}

function quoteFor(engine: Engine): QuoteFunction {
  return (job, signal) => quoteOnly(job, engine.config, { taskId: job.id ?? 'quote', allowLocalPaths: false, signal, timeLimitsMs: engine.timeLimitsMs });
}

/**
 * Opens the default image network at start: a broken model or GPU set-up shows before the first job,
 * and the metrics say which execution provider really runs. A network that cannot be had here is
 * not fatal: the readiness checks keep image and video from being pulled and say why.
 */
async function reportExecutionProvider(engine: Engine, logger: Logger): Promise<string | undefined> {
  try {
    const file = await ensureModelFile(chooseSrModel(engine.config.srModels, 'image', '2'), { ...registryOptions(engine.config), logger });
    const session = await engine.sessions.get(file.path);
    setExecutionProvider(session.provider);
    logger.info({ provider: session.provider, providers: session.providers, threads: session.threads }, 'inference ready');
    return session.provider;
  } catch (err) {
    logger.warn({ err }, 'The default super-resolution network cannot be opened; image and video wait for their readiness checks');
    return undefined;
  }
}
