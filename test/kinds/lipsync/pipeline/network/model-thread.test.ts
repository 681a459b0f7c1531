/**
 * The lip-sync network on its worker thread: same results as on the calling thread, event loop
 * free; its file opened once, on the thread only; failures as on the calling thread.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ensureModelFile,
  SessionCache,
  sessionOptions,
  SessionThread,
  sha256Hex,
} from '../../../../../src/inference/index.js';
import {
  ThreadedLipsyncModel,
  loadThreadedLipsyncModel,
  releaseLipsyncThreads,
  checkLipsyncGraph,
  loadLipsyncModel,
  parseLipsyncModelMapping,
  withLipsyncGenerators,
  type LipsyncModel,
} from '../../../../../src/kinds/lipsync/pipeline/index.js';
import { testModelManifest } from '../../../../../scripts/make-test-lipsync-model.js';
import { fixedBatchGraph } from '../fixed-batch-graph.js';
import { countOpens, failureOf } from '../open-counter.js';

const opens = countOpens();

const PLANE = 96 * 96;

function inputs(count: number): { mel: Float32Array; faces: Float32Array } {
  const mel = new Float32Array(count * 80 * 16).map((_, i) => ((i * 37) % 800) / 100 - 4);
  const faces = new Float32Array(count * 6 * PLANE).map((_, i) => ((i * 13) % 255) / 255);
  return { mel, faces };
}

describe('the lip-sync network on a worker thread', () => {
  const sessions = new SessionCache({ thread: false, threads: 1 });
  const mapping = parseLipsyncModelMapping('wav2lip-test');
  let inline: LipsyncModel;
  let threaded: LipsyncModel;
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'lipsync-thread-'));
    inline = await loadLipsyncModel('vendor-lipsync-2', { sessions, mapping, batch: 4 });
    threaded = await loadThreadedLipsyncModel('vendor-lipsync-2', { sessions, mapping, batch: 4 });
  });

  afterAll(async () => {
    await releaseLipsyncThreads();
    await sessions.release();
    await rm(dir, { recursive: true, force: true });
  });

  it('returns exactly what the calling-thread session returns, with the same manifest and batch', async () => {
    expect([threaded.name, threaded.testModel, threaded.batch]).toEqual([inline.name, inline.testModel, inline.batch]);
    expect(threaded.manifest).toEqual(inline.manifest);
    const { mel, faces } = inputs(5);
    const a = await inline.run(mel, faces, 5);
    const b = await threaded.run(mel, faces, 5);
    expect(b).toHaveLength(5 * 3 * PLANE);
    expect(b).toEqual(a);
    await expect(threaded.run(mel.subarray(0, 80 * 16), faces, 2)).rejects.toThrow(
      'Expected 2560 mel values and 110592 face values for 2 faces but received 1280',
    );
  });

  it('keeps the event loop running during a call', async () => {
    const { mel, faces } = inputs(32);
    let turns = 0;
    const timer = setInterval(() => (turns += 1), 0);
    let immediate = false;
    setImmediate(() => (immediate = true));
    await threaded.run(mel, faces, 32);
    clearInterval(timer);
    expect(immediate).toBe(true);
    expect(turns).toBeGreaterThan(0);
  });

  it('fails as the loader does when the weights are not installed', async () => {
    await expect(loadThreadedLipsyncModel('vendor-lipsync-3', { sessions })).rejects.toMatchObject({
      name: 'ProcessingError',
      message: expect.stringMatching(
        /^Expected lip-sync weights wav2lip for vendor-lipsync-3 but they are not installed/,
      ),
    });
  });

  it('feeds a fixed-batch graph in padded chunks and returns only the real faces', async () => {
    const file = path.join(dir, 'fixed.onnx');
    await writeFile(file, fixedBatchGraph());
    const thread = new SessionThread(file);
    try {
      const graph = await thread.open(sessionOptions(['cpu'], 1));
      const manifest = {
        ...testModelManifest().manifest,
        output: { ...testModelManifest().manifest.output, name: 'out' },
      };
      expect(checkLipsyncGraph(graph, manifest)).toBe(2);
      const model = new ThreadedLipsyncModel(manifest, thread, graph, 8);
      expect(model.batch).toBe(2);
      const { mel, faces } = inputs(3);
      const out = await model.run(mel, faces, 3);
      for (let b = 0; b < 3; b += 1) {
        expect(out.subarray(b * 3 * PLANE, (b + 1) * 3 * PLANE)).toEqual(
          faces.subarray(b * 6 * PLANE, b * 6 * PLANE + 3 * PLANE),
        );
      }
    } finally {
      await thread.close();
    }
  });
});

describe('the lip-sync network opened once', () => {
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'lipsync-once-'));
  });

  afterAll(async () => {
    await releaseLipsyncThreads();
    await rm(dir, { recursive: true, force: true });
  });

  it('opens its file once, on the thread, however often it is loaded', async () => {
    const sessions = new SessionCache({ thread: false, threads: 1 });
    const mapping = parseLipsyncModelMapping('wav2lip-test');
    const file = (await ensureModelFile('wav2lip-test', withLipsyncGenerators({}))).path;
    const before = opens(file);
    const model = await loadThreadedLipsyncModel('vendor-lipsync-2', { sessions, mapping, batch: 2 });
    await loadThreadedLipsyncModel('vendor-lipsync-3', { sessions, mapping });
    const { mel, faces } = inputs(2);
    expect(await model.run(mel, faces, 2)).toHaveLength(2 * 3 * PLANE);
    const after = opens(file);
    expect({ inline: after.inline - before.inline, thread: after.thread - before.thread }).toEqual({
      inline: 0,
      thread: 1,
    });
    // The caller's cache only lent its settings: nothing was opened in it.
    expect(sessions.size).toBe(0);
  });

  /** A models folder of its own with `bytes` installed as the real weights, wav2lip. */
  async function installed(name: string, bytes: Uint8Array): Promise<string> {
    const modelsDir = path.join(dir, name);
    await mkdir(modelsDir);
    const manifest = {
      ...testModelManifest().manifest,
      name: 'wav2lip',
      file: 'wav2lip.onnx',
      sha256: sha256Hex(bytes),
      bytes: bytes.length,
      testModel: false,
      source: { kind: 'external', url: 'https://example.com/w.onnx', instructions: 'install it' },
    };
    await writeFile(path.join(modelsDir, 'wav2lip.json'), JSON.stringify(manifest));
    await writeFile(path.join(modelsDir, 'wav2lip.onnx'), bytes);
    return modelsDir;
  }

  it.each<[string, Uint8Array, RegExp]>([
    [
      'bytes that are no graph',
      new TextEncoder().encode('not a model at all'),
      /^Could not open model \S+wav2lip.onnx: /,
    ],
    [
      'a graph that breaks the contract',
      fixedBatchGraph(),
      /^Expected wav2lip to take mel_spectrogram and video_frames and return \S+ but its graph takes mel_spectrogram, video_frames and returns out$/,
    ],
  ])('fails on %s exactly as on the calling thread', async (what, bytes, message) => {
    const registry = { modelsDir: await installed(what.replaceAll(' ', '-'), bytes) };
    const options = () => ({ sessions: new SessionCache({ thread: false, threads: 1 }), registry });
    const inline = await failureOf(loadLipsyncModel('vendor-lipsync-3', options()));
    const threaded = await failureOf(loadThreadedLipsyncModel('vendor-lipsync-3', options()));
    expect(inline.message).toMatch(message);
    expect(threaded).toEqual(inline);
  });
});
