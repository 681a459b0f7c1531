/**
 * What an operator runs before starting workers and gateways (`media-worker provision`), done in the
 * test's own process: every stream and durable consumer as the environment's settings say. Workers
 * and gateways only check and bind, so a test starting them provisions first, with the same
 * WORKER_ACK_WAIT_MS, WORKER_MAX_DELIVER, ... as the processes it starts.
 */
import { jetstreamManager } from '@nats-io/jetstream';
import { provision } from '../../src/cli/commands/provision.js';
import { connectNats, protocolSettingsFromEnv } from '../../src/protocol/index.js';
import { workerSettingsFromEnv } from '../../src/worker/index.js';

/** `env`: the variables given to the processes (NATS_URL and credentials allowed to provision, the WORKER_* settings). */
export async function provisionFromEnv(
  env: NodeJS.ProcessEnv,
  gateway = { streamPrefix: 'GATEWAY', consumerPrefix: 'gateway' },
): Promise<void> {
  const full = { ...process.env, ...env };
  const protocol = protocolSettingsFromEnv({ ...full, NATS_CONNECTION_NAME: 'test-provision' });
  const nc = await connectNats(protocol);
  try {
    await provision(await jetstreamManager(nc), { worker: workerSettingsFromEnv(full), protocol, gateway });
  } finally {
    await nc.close();
  }
}
