/**
 * ONNX Runtime sessions: created once per model file and provider preference, then reused by every
 * job (creating one parses the graph and plans memory, which costs far more than a tile).
 *
 * A GPU provider that cannot start (its libraries absent, no adapter) costs one warning line and
 * the session runs on the CPU; `provider` says what was obtained so the caller can report it.
 *
 * The cache puts each session on a worker thread of its own (session-thread.ts): onnxruntime-node
 * runs a network synchronously on the calling thread, which would freeze the daemon's event loop.
 */
import os from 'node:os';
import path from 'node:path';
import ort from 'onnxruntime-node';
import {
  type ExecutionProviderName,
  isExecutionProviderName,
  missingProviderLibrary,
  providerAttempts,
  providerOptions,
  resolveThreadCount,
} from './execution-providers.js';
import { SessionThread, type ThreadSessionInfo } from './session-thread.js';
import type { TensorOutput } from './tensors.js';
import { firstErrorLine } from '../errors.js';

/** The slice of a pino logger this module needs, so tests can pass a recorder. */
export interface WarnLogger {
  warn(obj: object, msg: string): void;
}

export interface SessionSettings {
  /** Providers in order of preference; the CPU is always the last resort. Default: cpu only. */
  executionProviders?: readonly ExecutionProviderName[];
  /** ONNX Runtime intra-op threads; 0 or absent: one per available core. */
  threads?: number;
  /** The GPU to run on (CUDA and TensorRT `deviceId`); default 0. */
  deviceIndex?: number;
  logger?: WarnLogger;
}

/** Batch, channels, height, width. */
export type Nchw = readonly [number, number, number, number];

export type { NamedTensor, TensorOutput } from './tensors.js';

/** Runs one float32 NCHW tensor through a single-input, single-output network. */
export interface TensorRunner {
  run(input: Float32Array, dims: Nchw): Promise<TensorOutput>;
}

export interface ModelSession extends TensorRunner {
  readonly modelPath: string;
  /** The provider the session was created with (the head of `providers`). */
  readonly provider: ExecutionProviderName;
  /** The list ONNX Runtime accepted, ending with cpu. */
  readonly providers: readonly ExecutionProviderName[];
  readonly requestedProviders: readonly ExecutionProviderName[];
  readonly threads: number;
  /** The GPU it was opened on (SessionSettings.deviceIndex). */
  readonly deviceIndex?: number;
  readonly inputNames: readonly string[];
  readonly outputNames: readonly string[];
  /** Shape of the first input as the graph declares it (strings are free dimensions). */
  readonly inputShape: readonly (number | string)[];
  /** True when the session runs on its own worker thread (see session-thread.ts). */
  readonly onThread: boolean;
  release(): Promise<void>;
}

/** A session on the calling thread, with the raw ONNX Runtime session for multi-input networks. */
export interface InlineSession extends ModelSession {
  readonly onThread: false;
  readonly session: ort.InferenceSession;
}

/**
 * A session on a worker thread of its own, with what its open reported of the graph (a caller
 * checks its contract on that) and the thread's named runs, for networks of several inputs.
 */
export interface ThreadSession extends ModelSession {
  readonly onThread: true;
  readonly graph: ThreadSessionInfo;
  readonly thread: Pick<SessionThread, 'run'>;
}

/** What ONNX Runtime is asked for; injectable so tests can make a provider fail on demand. */
export type CreateInferenceSession = (
  modelPath: string,
  options: ort.InferenceSession.SessionOptions,
) => Promise<ort.InferenceSession>;

/** Fails fast, without ONNX Runtime's native error on stderr, for a GPU build that is not installed. */
export function checkProviderLibrary(options: ort.InferenceSession.SessionOptions): void {
  const first = options.executionProviders?.[0];
  const head = typeof first === 'string' ? first : first?.name;
  const missing = isExecutionProviderName(head) ? missingProviderLibrary(head) : undefined;
  if (missing !== undefined) {
    throw new Error(`${missing} is not installed (onnxruntime-node's GPU build: see Dockerfile.cuda)`);
  }
}

const createWithOrt: CreateInferenceSession = async (modelPath, options) => {
  checkProviderLibrary(options);
  return ort.InferenceSession.create(modelPath, options);
};

/** The options every session gets; `providers` is one attempt of providerAttempts(), on GPU `deviceIndex`. */
export function sessionOptions(
  providers: readonly ExecutionProviderName[],
  threads: number,
  deviceIndex = 0,
): ort.InferenceSession.SessionOptions {
  return {
    executionProviders: providerOptions(providers, deviceIndex),
    intraOpNumThreads: threads,
    // One inference at a time per session; parallelism comes from inside each operator.
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
    // ONNX Runtime's pool threads otherwise spin for a while after each run, competing with the
    // tile conversion that follows and with ffmpeg encoders on the same host (measured: JavaScript
    // right after a run took twice as long with spinning, and runs were no faster).
    extra: { session: { intra_op: { allow_spinning: '0' } } },
  };
}

interface Opened<T> {
  value: T;
  provider: ExecutionProviderName;
  providers: ExecutionProviderName[];
  requested: readonly ExecutionProviderName[];
  threads: number;
}

/** Tries each provider list in turn, ending on the CPU; one warning when the first choice failed. */
async function openWithFallback<T>(
  modelPath: string,
  settings: SessionSettings,
  open: (options: ort.InferenceSession.SessionOptions) => Promise<T>,
): Promise<Opened<T>> {
  const requested = settings.executionProviders?.length ? [...settings.executionProviders] : (['cpu'] as const);
  const threads = resolveThreadCount(settings.threads, os.availableParallelism());
  const failures: { providers: string; error: string }[] = [];
  let lastError: unknown;
  for (const providers of providerAttempts(requested)) {
    let value: T;
    try {
      value = await open(sessionOptions(providers, threads, settings.deviceIndex));
    } catch (error) {
      lastError = error;
      failures.push({ providers: providers.join(','), error: firstErrorLine(error) });
      continue;
    }
    const provider = providers[0] ?? 'cpu';
    if (failures.length > 0) {
      const failed = requested.filter((p) => !providers.includes(p));
      settings.logger?.warn(
        { modelPath, requested, using: provider, failures },
        `execution provider ${failed.join(', ')} could not start for ${path.basename(modelPath)}; falling back to ${provider}`,
      );
    }
    return { value, provider, providers, requested, threads };
  }
  throw new Error(`Could not open model ${modelPath}: ${firstErrorLine(lastError)}`, { cause: lastError });
}

/** Opens one session on the calling thread, without caching. */
export async function openSession(
  modelPath: string,
  settings: SessionSettings = {},
  create: CreateInferenceSession = createWithOrt,
): Promise<InlineSession> {
  const opened = await openWithFallback(modelPath, settings, (options) => create(modelPath, options));
  return wrapSession(opened.value, { ...opened, modelPath, deviceIndex: settings.deviceIndex ?? 0 });
}

/** Opens one session on a worker thread of its own, without caching (see session-thread.ts). */
export async function openThreadSession(modelPath: string, settings: SessionSettings = {}): Promise<ThreadSession> {
  const thread = new SessionThread(modelPath);
  let opened: Opened<ThreadSessionInfo>;
  try {
    opened = await openWithFallback(modelPath, settings, async (options) => {
      checkProviderLibrary(options);
      return thread.open(options);
    });
  } catch (error) {
    await thread.close();
    throw error;
  }
  const graph = opened.value;
  const inputNames = [...graph.inputNames];
  const outputNames = [...graph.outputNames];
  const inputShape = firstInputShape(graph);
  let released = false;
  return {
    modelPath,
    provider: opened.provider,
    providers: opened.providers,
    requestedProviders: opened.requested,
    threads: opened.threads,
    deviceIndex: settings.deviceIndex ?? 0,
    inputNames,
    outputNames,
    inputShape,
    onThread: true,
    graph,
    thread,
    run: async (input, dims) => {
      const inputName = inputNames[0];
      const outputName = outputNames[0];
      if (inputNames.length !== 1 || outputNames.length !== 1 || inputName === undefined || outputName === undefined) {
        throw new Error(oneInputOneOutput(modelPath, inputNames, outputNames));
      }
      const [output] = await thread.run([{ name: inputName, data: input, dims }], [outputName]);
      if (output === undefined) throw new Error(`Expected ${path.basename(modelPath)} to return float32 ${outputName}`);
      return output;
    },
    async release(): Promise<void> {
      if (released) return;
      released = true;
      await thread.close();
    },
  };
}

export interface SessionCacheSettings extends SessionSettings {
  /** Run each session on its own worker thread so the event loop stays free. Default true. */
  thread?: boolean;
}

/**
 * One session per model file, provider preference and thread count, shared by concurrent callers
 * (a second caller waits for the first creation instead of starting its own).
 */
export class SessionCache {
  readonly #settings: SessionCacheSettings;
  readonly #create: CreateInferenceSession | undefined;
  readonly #sessions = new Map<string, Promise<InlineSession | ThreadSession>>();

  /** `create` (tests) implies sessions on the calling thread. */
  constructor(settings: SessionCacheSettings = {}, create?: CreateInferenceSession) {
    this.#settings = settings;
    this.#create = create;
  }

  get(modelPath: string): Promise<InlineSession | ThreadSession> {
    const resolved = path.resolve(modelPath);
    const key = [
      resolved,
      (this.#settings.executionProviders ?? ['cpu']).join(','),
      this.#settings.threads ?? 0,
      this.#settings.deviceIndex ?? 0,
    ].join('\0');
    let pending = this.#sessions.get(key);
    if (pending === undefined) {
      const onThread = this.#create === undefined && (this.#settings.thread ?? true);
      pending = onThread
        ? openThreadSession(resolved, this.#settings)
        : openSession(resolved, this.#settings, this.#create);
      this.#sessions.set(key, pending);
      // A failed creation must not stay cached: the file may be produced or fixed later.
      pending.catch(() => {
        if (this.#sessions.get(key) === pending) this.#sessions.delete(key);
      });
    }
    return pending;
  }

  get size(): number {
    return this.#sessions.size;
  }

  /**
   * A new, empty cache with these settings whose sessions are on worker threads: for a network of
   * several inputs whose caller holds a calling-thread cache but runs it on a thread, so that its
   * file is opened there only (thread-cache.ts).
   */
  onThreads(): SessionCache {
    return new SessionCache({ ...this.#settings, thread: true });
  }

  /** Releases every session (daemon shutdown). Sessions that failed to open are skipped. */
  async release(): Promise<void> {
    const pending = [...this.#sessions.values()];
    this.#sessions.clear();
    const opened = await Promise.allSettled(pending);
    await Promise.all(opened.map((r) => (r.status === 'fulfilled' ? r.value.release() : undefined)));
  }
}

interface WrapInfo {
  modelPath: string;
  provider: ExecutionProviderName;
  providers: readonly ExecutionProviderName[];
  requested: readonly ExecutionProviderName[];
  threads: number;
  deviceIndex: number;
}

function wrapSession(session: ort.InferenceSession, info: WrapInfo): InlineSession {
  const inputNames = [...session.inputNames];
  const outputNames = [...session.outputNames];
  const inputShape = firstInputShape(session);
  let released = false;
  return {
    modelPath: info.modelPath,
    provider: info.provider,
    providers: info.providers,
    requestedProviders: info.requested,
    threads: info.threads,
    deviceIndex: info.deviceIndex,
    inputNames,
    outputNames,
    inputShape,
    onThread: false,
    session,
    async run(input: Float32Array, dims: Nchw): Promise<TensorOutput> {
      const inputName = inputNames[0];
      const outputName = outputNames[0];
      if (inputNames.length !== 1 || outputNames.length !== 1 || inputName === undefined || outputName === undefined) {
        throw new Error(oneInputOneOutput(info.modelPath, inputNames, outputNames));
      }
      const result = await session.run({ [inputName]: new ort.Tensor('float32', input, dims) });
      const output = result[outputName];
      if (output === undefined || !(output.data instanceof Float32Array)) {
        throw new Error(`Expected ${path.basename(info.modelPath)} to return float32 ${outputName}`);
      }
      return { data: output.data, dims: output.dims };
    },
    async release(): Promise<void> {
      if (released) return;
      released = true;
      await session.release();
    },
  };
}

/** The first input's declared shape (strings are free dimensions); empty when it is not a tensor. */
function firstInputShape(graph: Pick<ort.InferenceSession, 'inputMetadata'>): (number | string)[] {
  const first = graph.inputMetadata[0];
  return first !== undefined && first.isTensor ? [...first.shape] : [];
}

function oneInputOneOutput(modelPath: string, inputs: readonly string[], outputs: readonly string[]): string {
  return `Expected ${path.basename(modelPath)} to have one input and one output but it has ${inputs.length} and ${outputs.length}`;
}
