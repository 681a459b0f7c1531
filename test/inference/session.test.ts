import { existsSync } from 'node:fs';
import { copyFile, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ExecutionProviderName,
  missingProviderLibrary,
  ortBinaryDir,
  parseExecutionProviders,
  providerAttempts,
  resolveThreadCount,
} from '../../src/inference/execution-providers.js';
import { ensureModelFile } from '../../src/inference/model-registry.js';
import {
  type CreateInferenceSession,
  SessionCache,
  openSession,
  openThreadSession,
} from '../../src/inference/session.js';
import { warnRecorder } from './tile-fixtures.js';

describe('parseExecutionProviders', () => {
  it.each<[string | string[], ExecutionProviderName[]]>([
    ['cpu', ['cpu']],
    ['CUDA', ['cuda']],
    ['tensorrt, cuda', ['tensorrt', 'cuda']],
    ['cuda,cpu,cuda', ['cuda', 'cpu']],
    [
      ['webgpu', 'cpu'],
      ['webgpu', 'cpu'],
    ],
  ])('%j -> %j', (value, expected) => {
    expect(parseExecutionProviders(value)).toEqual(expected);
  });

  it.each(['', ' , ', 'gpu', 'cuda,rocm'])('rejects %j', (value) => {
    expect(() => parseExecutionProviders(value)).toThrow(
      new RangeError(
        `Expected execution providers to be a comma-separated list of cpu, cuda, tensorrt, webgpu but received ${JSON.stringify(value)}`,
      ),
    );
  });
});

describe('providerAttempts', () => {
  it.each<[ExecutionProviderName[], ExecutionProviderName[][]]>([
    [['cpu'], [['cpu']]],
    [['cuda'], [['cuda', 'cpu'], ['cpu']]],
    [
      ['tensorrt', 'cuda'],
      [['tensorrt', 'cuda', 'cpu'], ['cuda', 'cpu'], ['cpu']],
    ],
    [
      ['cpu', 'webgpu'],
      [['webgpu', 'cpu'], ['cpu']],
    ],
    [[], [['cpu']]],
  ])('%j -> %j', (preference, expected) => {
    expect(providerAttempts(preference)).toEqual(expected);
  });
});

describe('missingProviderLibrary', () => {
  it('names the absent CUDA library, and has nothing to say about bundled providers', () => {
    const dir = path.join(os.tmpdir(), 'no-such-ort-dir');
    expect(missingProviderLibrary('cuda', dir)).toBe(path.join(dir, 'libonnxruntime_providers_cuda.so'));
    expect(missingProviderLibrary('tensorrt', dir)).toBe(path.join(dir, 'libonnxruntime_providers_tensorrt.so'));
    expect(missingProviderLibrary('cpu', dir)).toBeUndefined();
    expect(missingProviderLibrary('webgpu', dir)).toBeUndefined();
  });
});

describe('resolveThreadCount', () => {
  it.each<[number | undefined, number, number]>([
    [undefined, 16, 16],
    [0, 2, 2],
    [0, 0, 1],
    [3, 16, 3],
  ])('configured %s with %i cores -> %i', (configured, cores, expected) => {
    expect(resolveThreadCount(configured, cores)).toBe(expected);
  });

  it('rejects a negative count', () => {
    expect(() => resolveThreadCount(-1, 4)).toThrow('Expected threads to be a non-negative integer but received -1');
  });
});

describe('sessions on a real model', () => {
  let modelPath: string;
  let tmp: string;

  beforeAll(async () => {
    modelPath = (await ensureModelFile('esrgan-slim-x2')).path;
    tmp = await mkdtemp(path.join(os.tmpdir(), 'session-test-'));
  });

  afterAll(async () => {
    await rm(tmp, { recursive: true, force: true });
  });

  /** Real ONNX Runtime, except that the providers in `broken` refuse to start, as without their libraries. */
  function createWithBroken(broken: ExecutionProviderName[], seen: string[][] = []): CreateInferenceSession {
    return (file, options) => {
      // A GPU provider comes as { name, deviceId } (the device index), the CPU as its name.
      const providers = (options.executionProviders ?? []).map((p) => (typeof p === 'string' ? p : p.name));
      seen.push(providers);
      const head = providers[0] as ExecutionProviderName;
      if (broken.includes(head)) {
        return Promise.reject(
          new Error(`OrtSessionOptionsAppendExecutionProvider_${head}: Failed to load shared library`),
        );
      }
      return ort.InferenceSession.create(file, { ...options, executionProviders: ['cpu'] });
    };
  }

  it('opens on the CPU with one thread per core and runs a batch', async () => {
    const session = await openSession(modelPath);
    try {
      expect([session.provider, session.providers, session.threads]).toEqual([
        'cpu',
        ['cpu'],
        os.availableParallelism(),
      ]);
      expect([session.inputNames, session.outputNames]).toEqual([['input'], ['output']]);
      expect(session.inputShape[1]).toBe(3);
      expect(session.inputShape.filter((d) => typeof d === 'string').length).toBe(3);
      const out = await session.run(new Float32Array(2 * 3 * 8 * 6).fill(100), [2, 3, 8, 6]);
      expect(out.dims).toEqual([2, 3, 16, 12]);
      expect(out.data.length).toBe(2 * 3 * 16 * 12);
    } finally {
      await session.release();
    }
  });

  it('uses the configured thread count', async () => {
    const session = await openSession(modelPath, { threads: 1 });
    expect(session.threads).toBe(1);
    await session.release();
  });

  it.each<[string, ExecutionProviderName[], ExecutionProviderName[], ExecutionProviderName, string]>([
    [
      'cuda absent',
      ['cuda'],
      ['cuda'],
      'cpu',
      'execution provider cuda could not start for esrgan-slim-x2.onnx; falling back to cpu',
    ],
    [
      'tensorrt and cuda absent',
      ['tensorrt', 'cuda'],
      ['tensorrt', 'cuda'],
      'cpu',
      'execution provider tensorrt, cuda could not start for esrgan-slim-x2.onnx; falling back to cpu',
    ],
    [
      'tensorrt absent, cuda present',
      ['tensorrt', 'cuda'],
      ['tensorrt'],
      'cuda',
      'execution provider tensorrt could not start for esrgan-slim-x2.onnx; falling back to cuda',
    ],
    [
      'webgpu without an adapter',
      ['webgpu'],
      ['webgpu'],
      'cpu',
      'execution provider webgpu could not start for esrgan-slim-x2.onnx; falling back to cpu',
    ],
  ])('%s: falls back with exactly one log line', async (_name, requested, broken, using, message) => {
    const logger = warnRecorder();
    const seen: string[][] = [];
    const session = await openSession(
      modelPath,
      { executionProviders: requested, logger },
      createWithBroken(broken, seen),
    );
    expect(session.provider).toBe(using);
    expect(session.requestedProviders).toEqual(requested);
    expect(logger.lines.map((l) => l.msg)).toEqual([message]);
    expect(logger.lines[0]!.obj).toMatchObject({ modelPath, requested, using });
    expect(seen.length).toBe(broken.length + 1);
    await session.release();
  });

  it('with cuda requested on this host: cuda where its libraries are installed, else the CPU and one line', async () => {
    const binaries = ortBinaryDir();
    expect(binaries !== undefined && existsSync(path.join(binaries, 'onnxruntime_binding.node'))).toBe(true);
    const cudaInstalled = missingProviderLibrary('cuda') === undefined;
    const logger = warnRecorder();
    const session = await openSession(modelPath, { executionProviders: ['cuda'], logger });
    if (cudaInstalled) {
      expect([session.provider, logger.lines.length]).toEqual(['cuda', 0]);
    } else {
      expect([session.provider, logger.lines.length]).toEqual(['cpu', 1]);
      expect(logger.lines[0]!.msg).toContain('falling back to cpu');
      expect(JSON.stringify(logger.lines[0]!.obj)).toContain('libonnxruntime_providers_cuda.so is not installed');
    }
    await session.release();
  });

  it('names the file when even the CPU cannot open it', async () => {
    const missing = path.join(tmp, 'missing.onnx');
    await expect(openSession(missing)).rejects.toThrow(`Could not open model ${missing}: `);
  });

  describe('on a worker thread', () => {
    it('gives the same output as on the calling thread, and keeps the event loop free while running', async () => {
      const inline = await openSession(modelPath);
      const threaded = await openThreadSession(modelPath);
      try {
        expect([threaded.onThread, inline.onThread, threaded.provider]).toEqual([true, false, 'cpu']);
        expect([threaded.inputNames, threaded.outputNames]).toEqual([['input'], ['output']]);
        const input = new Float32Array(3 * 160 * 160).map((_, i) => (i * 7919) % 256);
        const dims = [1, 3, 160, 160] as const;
        const expected = await inline.run(input, dims);
        let ticks = 0;
        const timer = setInterval(() => (ticks += 1), 1);
        const actual = await threaded.run(input, dims);
        clearInterval(timer);
        expect(actual.dims).toEqual([1, 3, 320, 320]);
        expect(Buffer.from(actual.data.buffer).equals(Buffer.from(expected.data.buffer))).toBe(true);
        expect(ticks).toBeGreaterThan(0);
        // The caller's buffer is copied, not transferred: it stays usable for the next batch.
        expect(input.length).toBe(3 * 160 * 160);
      } finally {
        await inline.release();
        await threaded.release();
      }
    });

    it('reports its graph as the calling-thread session declares it: names, types and shapes of inputs and outputs', async () => {
      const inline = await openSession(modelPath);
      const threaded = await openThreadSession(modelPath);
      try {
        const plain = (meta: readonly ort.InferenceSession.ValueMetadata[]): object[] =>
          meta.map((m) => (m.isTensor ? { name: m.name, isTensor: true, type: m.type, shape: [...m.shape] } : m));
        const { graph } = threaded;
        expect([graph.inputNames, graph.outputNames]).toEqual([inline.session.inputNames, inline.session.outputNames]);
        expect(graph.inputMetadata).toEqual(plain(inline.session.inputMetadata));
        expect(graph.outputMetadata).toEqual(plain(inline.session.outputMetadata));
        expect(graph.outputMetadata).toEqual([
          { name: 'output', isTensor: true, type: 'float32', shape: expect.any(Array) as unknown },
        ]);
        expect(graph.outputMetadata[0]!.isTensor && graph.outputMetadata[0]!.shape).toHaveLength(4);
      } finally {
        await inline.release();
        await threaded.release();
      }
    });

    it("passes ONNX Runtime's errors through with their message", async () => {
      const threaded = await openThreadSession(modelPath);
      await expect(threaded.run(new Float32Array(4 * 8 * 8), [1, 4, 8, 8])).rejects.toThrow(/invalid dimensions/i);
      // Still usable after a failed run.
      expect((await threaded.run(new Float32Array(3 * 8 * 8), [1, 3, 8, 8])).dims).toEqual([1, 3, 16, 16]);
      await threaded.release();
      await expect(threaded.run(new Float32Array(3 * 8 * 8), [1, 3, 8, 8])).rejects.toThrow(/inference thread/);
    });

    it('falls back from an absent GPU provider with one line, and reports a missing file', async () => {
      const logger = warnRecorder();
      const threaded = await openThreadSession(modelPath, { executionProviders: ['tensorrt'], logger });
      expect(threaded.provider).toBe(missingProviderLibrary('tensorrt') === undefined ? 'tensorrt' : 'cpu');
      expect(logger.lines.length).toBe(threaded.provider === 'cpu' ? 1 : 0);
      await threaded.release();
      const missing = path.join(tmp, 'absent.onnx');
      await expect(openThreadSession(missing)).rejects.toThrow(`Could not open model ${missing}: `);
    });
  });

  describe('SessionCache', () => {
    it('puts sessions on worker threads by default', async () => {
      const cache = new SessionCache();
      const session = await cache.get(modelPath);
      expect(session.onThread).toBe(true);
      expect((await session.run(new Float32Array(3 * 4 * 4), [1, 3, 4, 4])).dims).toEqual([1, 3, 8, 8]);
      await cache.release();
    });

    it('creates a session once per model and shares it, also between concurrent callers', async () => {
      let created = 0;
      const cache = new SessionCache({}, (file, options) => {
        created += 1;
        return ort.InferenceSession.create(file, options);
      });
      const [a, b] = await Promise.all([cache.get(modelPath), cache.get(modelPath)]);
      const c = await cache.get(path.relative(process.cwd(), modelPath));
      expect(a).toBe(b);
      expect(a).toBe(c);
      expect([created, cache.size]).toEqual([1, 1]);
      const other = path.join(tmp, 'copy.onnx');
      await copyFile(modelPath, other);
      const d = await cache.get(other);
      expect(d).not.toBe(a);
      expect([created, cache.size]).toEqual([2, 2]);
      await cache.release();
      expect(cache.size).toBe(0);
    });

    it('makes a cache of its settings whose sessions are on threads: its own, the same fallback, released with it', async () => {
      const logger = warnRecorder();
      const cache = new SessionCache({ thread: false, threads: 1, executionProviders: ['tensorrt'], logger });
      const onThreads = cache.onThreads();
      const session = await onThreads.get(modelPath);
      expect([session.onThread, session.threads, session.requestedProviders]).toEqual([true, 1, ['tensorrt']]);
      expect(logger.lines.length).toBe(session.provider === 'cpu' ? 1 : 0);
      expect([cache.size, onThreads.size]).toEqual([0, 1]);
      await onThreads.release();
      await expect(session.run(new Float32Array(3 * 4 * 4), [1, 3, 4, 4])).rejects.toThrow(/inference thread/);
    });

    it('does not keep a failed creation: the file can appear later', async () => {
      const cache = new SessionCache({ thread: false });
      const late = path.join(tmp, 'late.onnx');
      await expect(cache.get(late)).rejects.toThrow('Could not open model');
      expect(cache.size).toBe(0);
      await copyFile(modelPath, late);
      const session = await cache.get(late);
      expect(session.modelPath).toBe(late);
      await cache.release();
    });
  });
});
