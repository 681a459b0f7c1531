import type { Command } from 'commander';
import { gatewaySettingsFromEnv, startGateway } from '../../gateway/index.js';
import { TOOL_NAMES } from '../../jobs/index.js';
import { protocolSettingsFor } from '../../protocol/index.js';
import { cliContext } from '../context.js';
import { reportFailure } from '../exit.js';

export function registerGateway(program: Command): void {
  program
    .command('gateway')
    .summary("serve the spec's HTTP API (accounts, credits, tasks) on top of the workers, over NATS")
    .description(
      `The reference control plane: POST /api/v1/generate, /api/v1/tools/{${TOOL_NAMES.join(',')}}, ` +
        'GET /api/v1/tasks/{id}, with Bearer API keys (`media-worker accounts create`), credits deducted at ' +
        "submission and refunded once on failure, prices from the workers' quote service (media.quote). " +
        'Tasks and the ledger live in NATS JetStream (NATS_URL), so several gateways may run at once. ' +
        'Listens on GATEWAY_HOST:GATEWAY_PORT; /healthz, /readyz, /metrics, /api/v1/openapi.json. ' +
        'SIGTERM or SIGINT finishes requests in progress and exits 0. Settings: `media-worker config --reference`.',
    )
    .action(async () => {
      try {
        await gateway();
      } catch (err) {
        process.exitCode = reportFailure(err);
      }
    });
}

async function gateway(): Promise<void> {
  const logger = cliContext({}, { daemon: true }).logger.child({ component: 'gateway' });
  const settings = gatewaySettingsFromEnv();
  const protocol = protocolSettingsFor('media-gateway');
  const handle = await startGateway(settings, protocol, logger);
  logger.info({ url: handle.url }, 'media-worker gateway listening');

  let stopping = false;
  const stop = (signal: NodeJS.Signals): void => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'gateway stopping');
    const grace = setTimeout(() => {
      logger.warn({ graceMs: settings.shutdownGraceMs }, 'requests still running after the grace period; exiting');
      process.exit(1);
    }, settings.shutdownGraceMs);
    grace.unref();
    handle.stop().then(
      () => process.exit(0),
      (err: unknown) => {
        logger.fatal({ err }, 'stop failed');
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}
