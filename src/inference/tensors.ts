/**
 * The float32 tensors a network is run with and answers with: what a session (session.ts) and the
 * worker thread that holds it (session-thread.ts) both speak, in a module of their own so that
 * neither imports the other back.
 */

export interface TensorOutput {
  data: Float32Array;
  dims: readonly number[];
}

/** One float32 input of a network with several (a mouth-synchronising network's mel and faces). */
export interface NamedTensor {
  name: string;
  data: Float32Array;
  dims: readonly number[];
}
