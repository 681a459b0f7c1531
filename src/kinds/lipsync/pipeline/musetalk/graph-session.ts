/**
 * Holding each of MuseTalk's graphs, as ONNX Runtime opened it, to its contract (graph-contract.ts):
 * the test networks and an operator's export go through this same check, whether the session is
 * on the calling thread or a worker thread (what its open reported: session-thread.ts).
 */
import type ort from 'onnxruntime-node';
import { contractProblems, MUSETALK_CONTRACTS, type DeclaredTensor, type MuseTalkGraph } from './graph-contract.js';

/** What the contract check reads of a session: the metadata of its inputs and outputs. */
export type MuseTalkGraphMetadata = Pick<ort.InferenceSession, 'inputMetadata' | 'outputMetadata'>;

/** What an ONNX Runtime session declares for its inputs and outputs. */
export function declaredTensors(session: MuseTalkGraphMetadata): {
  inputs: DeclaredTensor[];
  outputs: DeclaredTensor[];
} {
  const map = (meta: readonly ort.InferenceSession.ValueMetadata[]): DeclaredTensor[] =>
    meta.map((m) =>
      m.isTensor ? { name: m.name, type: m.type, shape: m.shape } : { name: m.name, type: 'not a tensor', shape: [] },
    );
  return { inputs: map(session.inputMetadata), outputs: map(session.outputMetadata) };
}

export class MuseTalkGraphError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MuseTalkGraphError';
  }
}

/** Throws a MuseTalkGraphError listing every way the session breaks the graph's contract. */
export function checkMuseTalkGraph(session: MuseTalkGraphMetadata, graph: MuseTalkGraph): void {
  const { inputs, outputs } = declaredTensors(session);
  const problems = contractProblems(MUSETALK_CONTRACTS[graph], inputs, outputs);
  if (problems.length > 0)
    throw new MuseTalkGraphError(`Expected MuseTalk's ${graph} graph interface but ${problems.join('; ')}`);
}
