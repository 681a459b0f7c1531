import type { Command } from 'commander';
import { daemonSettings, startDaemon } from '../../app/index.js';
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
  const settings = daemonSettings(config);
  const daemon = await startDaemon(config, settings, logger);
  logger.info(
    {
      healthPort: daemon.worker.healthPort,
      kinds: settings.concurrency,
      deviceIndex: config.deviceIndex,
      device: daemon.device,
    },
    'media-worker serving',
  );

  const stop = (signal: NodeJS.Signals): void => {
    logger.info({ signal }, 'draining');
    daemon.stop().then(
      () => process.exit(0),
      (err: unknown) => {
        logger.fatal({ err }, 'drain failed');
        process.exit(1);
      },
    );
  };
  // From here on a signal drains (jobs may be running); the listeners stay, so none is missed.
  handOverSignals(stop);
  try {
    await daemon.worker.stopped;
  } finally {
    // Ended on its own (the NATS connection closed for good), no signal drained it: what a drain
    // releases is released all the same, tracing's last spans included. After a signal, the same stop.
    await daemon.stop().catch((err: unknown) => logger.error({ err }, 'stop after the worker ended failed'));
  }
}
