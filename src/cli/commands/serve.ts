import type { Command } from 'commander';
import { createEngine, executeJob, quoteOnly, type Engine } from '../../execute.js';
import { ensureModelFile } from '../../inference/model-registry.js';
import type { Logger } from '../../logger.js';
import { PACKAGE_VERSION } from '../../paths.js';
import { registryOptions } from '../../runtime.js';
import { DEFAULT_SR_MODELS } from '../../upscale/sr-models.js';
import {
  createResultStore,
  setExecutionProvider,
  startWorker,
  workerSettingsFromEnv,
  type JobExecutor,
  type QuoteFunction,
  type ResultStore,
} from '../../worker/index.js';
import { cliContext } from '../context.js';
import { reportFailure } from '../exit.js';

export function registerServe(program: Command): void {
  program
    .command('serve')
    .summary('run the daemon: jobs from NATS JetStream, one terminal event per job, the quote service')
    .description(
      'Connects to NATS (NATS_URL), sets up its streams and consumers, takes jobs of the kinds this host ' +
        'serves (WORKER_CONCURRENCY), publishes one completed or failed event per task, answers quote ' +
        'requests on media.quote, and serves /metrics, /healthz and /readyz (WORKER_HEALTH_PORT). ' +
        'SIGTERM or SIGINT drains: no new jobs, in-flight jobs finish or are handed back within ' +
        'WORKER_DRAIN_GRACE_MS, then the process exits 0. Protocol: docs/protocol.md. Settings come from the ' +
        'environment: `media-worker config --reference` lists them.',
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
  const { config, logger } = cliContext();
  const settings = workerSettingsFromEnv();
  const engine = createEngine(config, logger, settings.watchdogMs);
  await reportExecutionProvider(engine, logger);
  const results = createResultStore(settings, logger);
  const worker = await startWorker(settings, {
    executor: executorFor(engine, results),
    quote: quoteFor(engine),
    logger,
    results,
    version: PACKAGE_VERSION,
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
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  await worker.stopped;
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
 * Opens the default x2 network at start: a broken model or GPU set-up shows before the first job,
 * and the metrics say which execution provider really runs.
 */
async function reportExecutionProvider(engine: Engine, logger: Logger): Promise<void> {
  const file = await ensureModelFile(DEFAULT_SR_MODELS[2], { ...registryOptions(engine.config), logger });
  const session = await engine.sessions.get(file.path);
  setExecutionProvider(session.provider);
  logger.info({ provider: session.provider, providers: session.providers, threads: session.threads }, 'inference ready');
}
