/**
 * The lip-sync network on a worker thread of its own.
 *
 * onnxruntime-node runs a network synchronously on the calling thread (session-thread.ts explains
 * it): on the main thread a batch of real Wav2Lip faces would freeze the event loop for the whole
 * call, so the pipeline's other stages (reading the decoder, cropping the next batch, pasting and
 * writing the last one) would wait for it, and so would a daemon's heartbeats. The cached sessions
 * of session-thread.ts take one input to one output; Wav2Lip takes two (mel and faces), hence this
 * small worker for it.
 *
 * Loading goes through `loadLipsyncModel` first, so a model that is missing, corrupt or breaks the
 * contract fails with exactly its messages; the worker then opens the same verified file with the
 * same execution providers and thread count as the session the cache made. One worker per model
 * file and settings lives for the process (an idle worker does not keep the process alive);
 * `releaseLipsyncThreads` ends them at shutdown.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type ort from 'onnxruntime-node';
import { ensureModelFile } from '../inference/model-registry.js';
import { sessionOptions } from '../inference/session.js';
import type { LipsyncManifest } from '../inference/manifest.js';
import type { LipsyncModelId } from '../jobs/models.js';
import { loadLipsyncModel, type LipsyncModel, type LoadLipsyncModelOptions } from './wav2lip-model.js';

const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const ort = require(workerData.ortPath);
let session;
parentPort.on('message', async (m) => {
  try {
    if (m.type === 'open') {
      session = await ort.InferenceSession.create(workerData.modelPath, m.options);
      const meta = session.inputMetadata.find((x) => x.name === m.batchInput);
      const first = meta && meta.isTensor ? meta.shape[0] : undefined;
      parentPort.postMessage({ id: m.id, fixedBatch: typeof first === 'number' && first > 0 ? first : undefined });
    } else if (m.type === 'run') {
      const feeds = {};
      for (const f of m.feeds) feeds[f.name] = new ort.Tensor('float32', f.data, f.dims);
      const out = (await session.run(feeds))[m.output];
      if (!out || !(out.data instanceof Float32Array)) throw new Error('Expected float32 ' + m.output + ' from the lip-sync network');
      const data = out.data;
      const whole = data.byteOffset === 0 && data.byteLength === data.buffer.byteLength;
      parentPort.postMessage({ id: m.id, data }, whole ? [data.buffer] : []);
    } else if (m.type === 'release') {
      if (session) await session.release();
      session = undefined;
      parentPort.postMessage({ id: m.id });
      parentPort.close();
    }
  } catch (e) {
    parentPort.postMessage({ id: m.id, error: { name: (e && e.name) || 'Error', message: (e && e.message) || String(e) } });
  }
});
`;

interface Pending {
  resolve(value: Reply): void;
  reject(error: Error): void;
}

interface Reply {
  id: number;
  error?: { name: string; message: string };
  fixedBatch?: number;
  data?: Float32Array;
}

export interface Feed {
  name: string;
  data: Float32Array;
  dims: readonly number[];
}

/** One ONNX Runtime session with named float inputs, on its own thread. */
export class LipsyncThread {
  readonly modelPath: string;
  readonly #worker: Worker;
  readonly #pending = new Map<number, Pending>();
  readonly #exited: Promise<void>;
  #nextId = 0;
  #dead: Error | undefined;

  constructor(modelPath: string) {
    this.modelPath = modelPath;
    const ortPath = createRequire(import.meta.url).resolve('onnxruntime-node');
    this.#worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { ortPath, modelPath } });
    this.#worker.unref();
    this.#worker.on('message', (reply: Reply) => this.#settle(reply));
    this.#worker.on('error', (error) => this.#fail(error));
    this.#exited = new Promise((resolve) => {
      this.#worker.once('exit', (code) => {
        this.#fail(new Error(`The lip-sync thread for ${modelPath} exited with code ${code}`));
        resolve();
      });
    });
  }

  /** Opens the session; the first dimension of `batchInput` when the graph fixes it. */
  async open(options: ort.InferenceSession.SessionOptions, batchInput: string): Promise<number | undefined> {
    return (await this.#request({ type: 'open', options, batchInput })).fixedBatch;
  }

  /** Inputs are copied to the thread; the output is transferred back. */
  async run(feeds: readonly Feed[], output: string): Promise<Float32Array> {
    const reply = await this.#request({ type: 'run', feeds: feeds.map((f) => ({ name: f.name, data: f.data, dims: [...f.dims] })), output });
    if (!(reply.data instanceof Float32Array)) throw new Error(`Expected float32 ${output} from the lip-sync thread`);
    return reply.data;
  }

  async close(): Promise<void> {
    if (this.#dead === undefined) await this.#request({ type: 'release' }).catch(() => undefined);
    await this.#worker.terminate();
    await this.#exited;
  }

  #request(message: object): Promise<Reply> {
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

/** The LipsyncModel contract (see OnnxLipsyncModel) served by a LipsyncThread. */
export class ThreadedLipsyncModel implements LipsyncModel {
  readonly name: string;
  readonly manifest: LipsyncManifest;
  readonly testModel: boolean;
  readonly batch: number;
  readonly #thread: LipsyncThread;
  readonly #fixedBatch: number | undefined;

  constructor(manifest: LipsyncManifest, thread: LipsyncThread, batch: number, fixedBatch: number | undefined) {
    this.name = manifest.name;
    this.manifest = manifest;
    this.testModel = manifest.testModel;
    this.#thread = thread;
    this.#fixedBatch = fixedBatch;
    this.batch = fixedBatch ?? batch;
  }

  async run(mel: Float32Array, faces: Float32Array, count: number): Promise<Float32Array> {
    const { inputs, output } = this.manifest;
    const [, , melH, melW] = inputs.mel.shape;
    const [, faceC, faceH, faceW] = inputs.faces.shape;
    const [, outC, outH, outW] = output.shape;
    const melSize = melH * melW;
    const faceSize = faceC * faceH * faceW;
    const outSize = outC * outH * outW;
    if (!(Number.isInteger(count) && count > 0)) throw new RangeError(`Expected a positive integer face count but received ${count}`);
    if (mel.length !== count * melSize || faces.length !== count * faceSize) {
      throw new RangeError(
        `Expected ${count * melSize} mel values and ${count * faceSize} face values for ${count} faces but received ${mel.length} and ${faces.length}`,
      );
    }
    const out = new Float32Array(count * outSize);
    const chunk = this.#fixedBatch ?? count;
    const [low, high] = output.range;
    for (let start = 0; start < count; start += chunk) {
      const n = Math.min(chunk, count - start);
      const size = this.#fixedBatch ?? n;
      // A fixed-batch graph gets its last chunk padded with zeros; the padding's output is dropped.
      const melChunk = new Float32Array(size * melSize);
      melChunk.set(mel.subarray(start * melSize, (start + n) * melSize));
      const faceChunk = new Float32Array(size * faceSize);
      faceChunk.set(faces.subarray(start * faceSize, (start + n) * faceSize));
      const data = await this.#thread.run(
        [
          { name: inputs.mel.name, data: melChunk, dims: [size, 1, melH, melW] },
          { name: inputs.faces.name, data: faceChunk, dims: [size, faceC, faceH, faceW] },
        ],
        output.name,
      );
      if (data.length < n * outSize) throw new Error(`Expected ${this.name} to return float32 ${output.name} of ${size * outSize} values`);
      for (let i = 0; i < n * outSize; i += 1) {
        const v = data[i] as number;
        out[start * outSize + i] = v < low ? low : v > high ? high : v;
      }
    }
    return out;
  }
}

const threads = new Map<string, Promise<{ thread: LipsyncThread; fixedBatch: number | undefined }>>();

/**
 * The lip-sync network serving a public model id, on a worker thread. Fails exactly as
 * `loadLipsyncModel` does (LIPSYNC_FAILED naming what to install, and so on).
 */
export async function loadThreadedLipsyncModel(modelId: LipsyncModelId, options: LoadLipsyncModelOptions): Promise<LipsyncModel> {
  const checked = await loadLipsyncModel(modelId, options);
  const file = await ensureModelFile(checked.name, options.registry ?? {});
  const cached = await options.sessions.get(file.path);
  const key = [file.path, cached.providers.join(','), cached.threads].join('\0');
  let pending = threads.get(key);
  if (pending === undefined) {
    pending = (async () => {
      const thread = new LipsyncThread(file.path);
      try {
        return { thread, fixedBatch: await thread.open(sessionOptions(cached.providers, cached.threads), checked.manifest.inputs.mel.name) };
      } catch (error) {
        await thread.close();
        throw error;
      }
    })();
    threads.set(key, pending);
    pending.catch(() => {
      if (threads.get(key) === pending) threads.delete(key);
    });
  }
  const { thread, fixedBatch } = await pending;
  return new ThreadedLipsyncModel(checked.manifest, thread, checked.batch, fixedBatch);
}

/** Ends every lip-sync thread (daemon shutdown, tests). */
export async function releaseLipsyncThreads(): Promise<void> {
  const all = [...threads.values()];
  threads.clear();
  const opened = await Promise.allSettled(all);
  await Promise.all(opened.map((r) => (r.status === 'fulfilled' ? r.value.thread.close() : undefined)));
}
