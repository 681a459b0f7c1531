/**
 * An ONNX Runtime session on its own worker thread.
 *
 * onnxruntime-node's `run` executes synchronously on the calling thread (its promise only defers
 * the start), so on the main thread every call freezes the event loop for as long as the network
 * runs: seconds per tile for the large models on a CPU. In the daemon that would stall NATS
 * heartbeats, ack extensions, progress timers and cancellation. On a worker thread the event loop
 * stays free; the price is one copy of each input batch (outputs are transferred, not copied).
 *
 * The worker is plain CommonJS evaluated from a string, so it runs the same way from the
 * TypeScript sources (tests) and from dist/ without a build step of its own.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type ort from 'onnxruntime-node';
import type { Nchw, TensorOutput } from './session.js';

const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const ort = require(workerData.ortPath);
let session;
function fail(id, e) {
  parentPort.postMessage({ id, error: { name: (e && e.name) || 'Error', message: (e && e.message) || String(e) } });
}
parentPort.on('message', async (m) => {
  try {
    if (m.type === 'open') {
      session = await ort.InferenceSession.create(workerData.modelPath, m.options);
      const meta = session.inputMetadata[0];
      parentPort.postMessage({
        id: m.id,
        inputNames: session.inputNames,
        outputNames: session.outputNames,
        inputShape: meta && meta.isTensor ? meta.shape : [],
      });
    } else if (m.type === 'run') {
      const feeds = { [session.inputNames[0]]: new ort.Tensor('float32', m.input, m.dims) };
      const out = (await session.run(feeds))[session.outputNames[0]];
      const data = out.data;
      if (!(data instanceof Float32Array)) throw new Error('Expected a float32 output but received ' + out.type);
      const whole = data.byteOffset === 0 && data.byteLength === data.buffer.byteLength;
      parentPort.postMessage({ id: m.id, data, dims: out.dims }, whole ? [data.buffer] : []);
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

export interface ThreadSessionInfo {
  inputNames: string[];
  outputNames: string[];
  inputShape: (number | string)[];
}

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
  readonly #worker: Worker;
  readonly #pending = new Map<number, Pending>();
  #nextId = 0;
  #exited: Promise<void>;
  #dead: Error | undefined;

  constructor(modelPath: string) {
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

  async run(input: Float32Array, dims: Nchw): Promise<TensorOutput> {
    // The input is copied, not transferred: callers reuse their batch buffer. A view is cloned with
    // its whole buffer, so a partial view is cut out first.
    const whole = input.byteOffset === 0 && input.byteLength === input.buffer.byteLength;
    const reply = (await this.#request({ type: 'run', input: whole ? input : input.slice(), dims })) as {
      data: Float32Array;
      dims: number[];
    };
    return { data: reply.data, dims: reply.dims };
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
