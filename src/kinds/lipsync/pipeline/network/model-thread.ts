/**
 * The lip-sync network on a worker thread of its own.
 *
 * onnxruntime-node runs a network synchronously on the calling thread (session-thread.ts explains
 * it): on the main thread a batch of real Wav2Lip faces would freeze the event loop for the whole
 * call, so the pipeline's other stages (reading the decoder, cropping the next batch, pasting and
 * writing the last one) would wait for it, and so would a daemon's heartbeats. The network runs on
 * a SessionThread, with its two named inputs, and the same batching and checks as on the calling
 * thread (wav2lip-model.ts LipsyncNetworkModel).
 *
 * Loading goes through `loadLipsyncModel` first, so a model that is missing, corrupt or breaks the
 * contract fails with exactly its messages; the thread then opens the same verified file with the
 * same execution providers and thread count as the session the cache made. One thread per model
 * file and settings lives for the process (an idle thread does not keep the process alive);
 * `releaseLipsyncThreads` ends them at shutdown.
 */
import {
  type LipsyncManifest,
  ensureModelFile,
  SessionThread,
  SessionThreadCache,
  type ThreadSessionInfo,
} from '../../../../inference/index.js';
import type { LipsyncModelId } from '../../../../jobs/index.js';
import { withLipsyncGenerators } from './wav2lip-test-model.js';
import {
  LipsyncNetworkModel,
  loadLipsyncModel,
  type LipsyncModel,
  type LoadLipsyncModelOptions,
} from './wav2lip-model.js';

/** The LipsyncModel contract served by a session on a worker thread; `graph` is what its open reported. */
export class ThreadedLipsyncModel extends LipsyncNetworkModel {
  constructor(manifest: LipsyncManifest, thread: SessionThread, graph: ThreadSessionInfo, batch?: number) {
    super(manifest, graph, async (feeds, output) => (await thread.run(feeds, [output]))[0]?.data, batch);
  }
}

const threads = new SessionThreadCache();

/**
 * The lip-sync network serving a public model id, on a worker thread. Fails exactly as
 * `loadLipsyncModel` does (LIPSYNC_FAILED naming what to install, and so on).
 */
export async function loadThreadedLipsyncModel(
  modelId: LipsyncModelId,
  options: LoadLipsyncModelOptions,
): Promise<LipsyncModel> {
  const checked = await loadLipsyncModel(modelId, options);
  const file = await ensureModelFile(checked.name, withLipsyncGenerators(options.registry ?? {}));
  const { thread, graph } = await threads.get(await options.sessions.get(file.path));
  return new ThreadedLipsyncModel(checked.manifest, thread, graph, checked.batch);
}

/** Ends every lip-sync thread (daemon shutdown, tests). */
export function releaseLipsyncThreads(): Promise<void> {
  return threads.release();
}
