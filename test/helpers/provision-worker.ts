/**
 * The worker's streams and consumers, as the operator's `media-worker provision` makes them, for a
 * worker started by a test (in its process or a fixture's): the worker itself only binds.
 */
import { jetstreamManager } from '@nats-io/jetstream';
import { connectNats } from '../../src/protocol/index.js';
import { ensureTopology, type WorkerSettings } from '../../src/worker/index.js';

/** The worker's streams and consumers only, for a worker started in the test's process. */
export async function provisionWorker(settings: WorkerSettings): Promise<void> {
  const nc = await connectNats({ ...settings, natsName: 'test-provision' });
  try {
    await ensureTopology(await jetstreamManager(nc), settings);
  } finally {
    await nc.close();
  }
}
