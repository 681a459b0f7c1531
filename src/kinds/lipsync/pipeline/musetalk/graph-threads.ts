/**
 * MuseTalk's graphs on worker threads of their own, as the Wav2Lip network runs (network/model-thread.ts):
 * onnxruntime-node runs a graph synchronously on the calling thread, so on the main thread a UNet
 * call would freeze the event loop, and with it the pipeline's other stages and a daemon's
 * heartbeats and lease renewals. Each graph is opened once, on its thread only, with the settings
 * of the caller's session cache (providers and their fallback, threads, device:
 * inference/thread-cache.ts), and held to its contract on what that open reported, with the same
 * messages as on the calling thread: the real UNet's weights are in device memory once. One thread
 * per graph file and cache lives for the process (idle, it keeps nothing alive);
 * `releaseMuseTalkThreads` ends them at shutdown.
 */
import { SessionThreadCache, type ExecutionProviderName, type SessionCache } from '../../../../inference/index.js';
import { MUSETALK_CONTRACTS, MUSETALK_GRAPHS, type MuseTalkGraph } from './graph-contract.js';
import { checkMuseTalkGraph } from './graph-session.js';

/** Runs one graph's named float32 inputs and returns its one output (engine.ts MuseTalkGraphRunner's shape). */
export type ThreadedGraphRun = (
  inputs: Record<string, { data: Float32Array; dims: readonly number[] }>,
) => Promise<Float32Array>;

const threads = new SessionThreadCache();

/** The graphs' runs, and the execution provider each opened on (a GPU run that fell back says so). */
export interface ThreadedGraphs {
  runs: Record<MuseTalkGraph, ThreadedGraphRun>;
  providers: Record<MuseTalkGraph, ExecutionProviderName>;
}

/**
 * The five graphs on threads of their own, `sessions`' settings: every graph is opened first, then
 * each is checked against its contract, in the graphs' order (as on the calling thread).
 */
export async function threadedGraphs(
  sessions: SessionCache,
  paths: Readonly<Record<MuseTalkGraph, string>>,
): Promise<ThreadedGraphs> {
  const opened = [];
  for (const graph of MUSETALK_GRAPHS) opened.push({ graph, session: await threads.get(sessions, paths[graph]) });
  for (const { graph, session } of opened) checkMuseTalkGraph(session.graph, graph);
  const runs = {} as Record<MuseTalkGraph, ThreadedGraphRun>;
  const providers = {} as Record<MuseTalkGraph, ExecutionProviderName>;
  for (const { graph, session } of opened) {
    providers[graph] = session.provider;
    const output = MUSETALK_CONTRACTS[graph].outputs[0]!.name;
    runs[graph] = async (inputs) => {
      const feeds = Object.entries(inputs).map(([name, { data, dims }]) => ({ name, data, dims: [...dims] }));
      const [result] = await session.thread.run(feeds, [output]);
      if (result === undefined) throw new Error(`Expected MuseTalk's ${graph} graph to return ${output}`);
      return result.data;
    };
  }
  return { runs, providers };
}

/** Ends every MuseTalk thread (daemon shutdown, tests). */
export function releaseMuseTalkThreads(): Promise<void> {
  return threads.release();
}
