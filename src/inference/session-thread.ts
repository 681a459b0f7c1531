/**
 * An ONNX Runtime session on its own worker thread.
 *
 * onnxruntime-node's `run` executes synchronously on the calling thread (its promise only defers
 * the start), so on the main thread every call freezes the event loop for as long as the network
 * runs: seconds per tile for the large models on a CPU. In the daemon that would stall NATS
 * heartbeats, ack extensions, progress timers and cancellation. On a worker thread the event loop
 * stays free; the price is one copy of each input batch (outputs are transferred, not copied).
 *
 * A run takes named float32 inputs and returns the named outputs, so networks with several inputs
 * (a mouth-synchronising network: mel and faces) run here as well as the one-in, one-out upscalers.
 *
 * The worker is plain CommonJS evaluated from a string, so it runs the same way from the
 * TypeScript sources (tests) and from dist/ without a build step of its own.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type ort from 'onnxruntime-node';
import type { NamedTensor, TensorOutput } from './tensors.js';

const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const ort = require(workerData.ortPath);
let session;
// Copied into plain objects: only their own data fields survive the structured clone.
function described(metadata) {
  return metadata.map((x) =>
    x.isTensor ? { name: x.name, isTensor: true, type: x.type, shape: x.shape } : { name: x.name, isTensor: false },
  );
}
function fail(id, e) {
  parentPort.postMessage({ id, error: { name: (e && e.name) || 'Error', message: (e && e.message) || String(e) } });
}
parentPort.on('message', async (m) => {
  try {
    if (m.type === 'open') {
      session = await ort.InferenceSession.create(workerData.modelPath, m.options);
      parentPort.postMessage({
        id: m.id,
        inputNames: session.inputNames,
        outputNames: session.outputNames,
        inputMetadata: described(session.inputMetadata),
        outputMetadata: described(session.outputMetadata),
      });
    } else if (m.type === 'run') {
      const feeds = {};
      for (const f of m.feeds) feeds[f.name] = new ort.Tensor('float32', f.data, f.dims);
      const results = await session.run(feeds);
      const outputs = [];
      const transfer = new Set();
      for (const name of m.outputs) {
        const out = results[name];
        if (!out) throw new Error('Expected the network to return ' + name + ' but it returns ' + Object.keys(results).join(', '));
        const data = out.data;
        if (!(data instanceof Float32Array)) throw new Error('Expected a float32 output but received ' + out.type);
        if (data.byteOffset === 0 && data.byteLength === data.buffer.byteLength) transfer.add(data.buffer);
        outputs.push({ data, dims: out.dims });
      }
      parentPort.postMessage({ id: m.id, outputs }, [...transfer]);
    } else if (m.type === 'release') {
      if (session) await session.release();
      session = undefined;
      parentPort.postMessage({ id: m.id });
      parentPort.close();
    }
  } catch (e) {
    fail(m.id, e);
  }
});
`;

/**
 * What the thread's session says of its graph: the parts of an ort.InferenceSession that describe
 * it (names, element types and shapes of its inputs and outputs), enough to check a contract.
 */
export type ThreadSessionInfo = Pick<
  ort.InferenceSession,
  'inputNames' | 'outputNames' | 'inputMetadata' | 'outputMetadata'
>;

interface Pending {
  resolve(value: unknown): void;
  reject(error: Error): void;
}

interface Reply {
  id: number;
  error?: { name: string; message: string };
  [key: string]: unknown;
}

export class SessionThread {
  /** The file this thread's session opens. */
  readonly modelPath: string;
  readonly #worker: Worker;
  readonly #pending = new Map<number, Pending>();
  #nextId = 0;
  #exited: Promise<void>;
  #dead: Error | undefined;

  constructor(modelPath: string) {
    this.modelPath = modelPath;
    const ortPath = createRequire(import.meta.url).resolve('onnxruntime-node');
    this.#worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { ortPath, modelPath } });
    // Idle, the thread must not keep the process alive; it is referenced while a call is pending.
    this.#worker.unref();
    this.#worker.on('message', (reply: Reply) => this.#settle(reply));
    this.#worker.on('error', (error) => this.#fail(error));
    this.#exited = new Promise((resolve) => {
      this.#worker.once('exit', (code) => {
        this.#fail(new Error(`The inference thread for ${modelPath} exited with code ${code}`));
        resolve();
      });
    });
  }

  /** Creates the session in the thread; rejects with ONNX Runtime's error (the thread stays usable). */
  open(options: ort.InferenceSession.SessionOptions): Promise<ThreadSessionInfo> {
    return this.#request({ type: 'open', options }) as Promise<ThreadSessionInfo>;
  }

  /** Float32 inputs by name in; the outputs named in `outputs`, in that order, out. */
  async run(feeds: readonly NamedTensor[], outputs: readonly string[]): Promise<TensorOutput[]> {
    // Inputs are copied, not transferred: callers reuse their batch buffers. A view is cloned with
    // its whole buffer, so a partial view is cut out first.
    const sent = feeds.map(({ name, data, dims }) => {
      const whole = data.byteOffset === 0 && data.byteLength === data.buffer.byteLength;
      return { name, data: whole ? data : data.slice(), dims: [...dims] };
    });
    const reply = (await this.#request({ type: 'run', feeds: sent, outputs: [...outputs] })) as {
      outputs: TensorOutput[];
    };
    return reply.outputs;
  }

  /** Releases the session and ends the thread. */
  async close(): Promise<void> {
    if (this.#dead === undefined) {
      await this.#request({ type: 'release' }).catch(() => undefined);
    }
    await this.#worker.terminate();
    await this.#exited;
  }

  #request(message: object): Promise<unknown> {
    if (this.#dead !== undefined) return Promise.reject(this.#dead);
    const id = this.#nextId;
    this.#nextId += 1;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      if (this.#pending.size === 1) this.#worker.ref();
      this.#worker.postMessage({ ...message, id });
    });
  }

  #settle(reply: Reply): void {
    const pending = this.#pending.get(reply.id);
    if (pending === undefined) return;
    this.#pending.delete(reply.id);
    if (this.#pending.size === 0) this.#worker.unref();
    if (reply.error !== undefined) {
      const error = new Error(reply.error.message);
      error.name = reply.error.name;
      pending.reject(error);
    } else {
      pending.resolve(reply);
    }
  }

  #fail(error: Error): void {
    this.#dead ??= error;
    for (const pending of this.#pending.values()) pending.reject(error);
    this.#pending.clear();
  }
}
