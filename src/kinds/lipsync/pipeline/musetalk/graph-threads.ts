/**
 * MuseTalk's graphs on worker threads of their own, as the Wav2Lip network runs (network/model-thread.ts):
 * onnxruntime-node runs a graph synchronously on the calling thread, so on the main thread a UNet
 * call would freeze the event loop, and with it the pipeline's other stages and a daemon's
 * heartbeats and lease renewals. Each graph is first opened through the session cache (its
 * contract is checked there, exactly as for a session on the calling thread); its thread then opens
 * the same verified file with the providers, threads and device the cache's session ended up with.
 * One thread per graph file and settings lives for the process (idle, it keeps nothing alive);
 * `releaseMuseTalkThreads` ends them at shutdown.
 */
import { SessionThreadCache, type ModelSession } from '../../../../inference/index.js';
import { MUSETALK_CONTRACTS, type MuseTalkGraph } from './graph-contract.js';

/** Runs one graph's named float32 inputs and returns its one output (engine.ts MuseTalkGraphRunner's shape). */
export type ThreadedGraphRun = (
  inputs: Record<string, { data: Float32Array; dims: readonly number[] }>,
) => Promise<Float32Array>;

const threads = new SessionThreadCache();

/** The graph of `session` (already opened and checked by the cache) on a thread of its own. */
export async function threadedGraph(graph: MuseTalkGraph, session: ModelSession): Promise<ThreadedGraphRun> {
  const { thread } = await threads.get(session);
  const output = MUSETALK_CONTRACTS[graph].outputs[0]!.name;
  return async (inputs) => {
    const feeds = Object.entries(inputs).map(([name, { data, dims }]) => ({ name, data, dims: [...dims] }));
    const [result] = await thread.run(feeds, [output]);
    if (result === undefined) throw new Error(`Expected MuseTalk's ${graph} graph to return ${output}`);
    return result.data;
  };
}

/** Ends every MuseTalk thread (daemon shutdown, tests). */
export function releaseMuseTalkThreads(): Promise<void> {
  return threads.release();
}
