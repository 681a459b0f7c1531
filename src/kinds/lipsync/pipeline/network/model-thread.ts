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
 * The file is found and verified as `loadLipsyncModel` does it, then opened once, on the thread
 * only, with the settings of the caller's session cache (providers and their fallback, threads,
 * device: inference/thread-cache.ts); the contract is checked on what that open reported. A model
 * that is missing, corrupt or breaks the contract fails with exactly the calling-thread loader's
 * messages. One thread per model file and cache lives for the process (an idle thread does not
 * keep the process alive); `releaseLipsyncThreads` ends them at shutdown.
 */
import {
  type LipsyncManifest,
  type SessionThread,
  SessionThreadCache,
  type ThreadSessionInfo,
} from '../../../../inference/index.js';
import type { LipsyncModelId } from '../../../../jobs/index.js';
import {
  LipsyncNetworkModel,
  lipsyncModelFile,
  type LipsyncModel,
  type LoadLipsyncModelOptions,
} from './wav2lip-model.js';

/** The LipsyncModel contract served by a session on a worker thread; `graph` is what its open reported. */
export class ThreadedLipsyncModel extends LipsyncNetworkModel {
  constructor(manifest: LipsyncManifest, thread: Pick<SessionThread, 'run'>, graph: ThreadSessionInfo, batch?: number) {
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
  const file = await lipsyncModelFile(modelId, options);
  const { thread, graph } = await threads.get(options.sessions, file.path);
  return new ThreadedLipsyncModel(file.manifest, thread, graph, options.batch);
}

/** Ends every lip-sync thread (daemon shutdown, tests). */
export function releaseLipsyncThreads(): Promise<void> {
  return threads.release();
}
