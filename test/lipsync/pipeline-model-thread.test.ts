/** The lip-sync network on its worker thread: same results as on the calling thread, event loop free. */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildModel, encodeModel, floatTensor, floatValueInfo, node } from '../../src/inference/convert/onnx-builder.js';
import { SessionCache, sessionOptions } from '../../src/inference/session.js';
import { LipsyncThread, ThreadedLipsyncModel, loadThreadedLipsyncModel, releaseLipsyncThreads } from '../../src/lipsync/model-thread.js';
import { loadLipsyncModel, parseLipsyncModelMapping, type LipsyncModel } from '../../src/lipsync/wav2lip-model.js';
import { testModelManifest } from '../../scripts/make-test-lipsync-model.js';

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
    await expect(threaded.run(mel.subarray(0, 80 * 16), faces, 2)).rejects.toThrow('Expected 2560 mel values and 110592 face values for 2 faces but received 1280');
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
      code: 'LIPSYNC_FAILED',
      message: expect.stringMatching(/^Expected lip-sync weights wav2lip for vendor-lipsync-3 but they are not installed/),
    });
  });

  it('feeds a fixed-batch graph in padded chunks and returns only the real faces', async () => {
    const select = new Float32Array(18);
    for (let c = 0; c < 3; c += 1) select[c * 6 + c] = 1;
    const file = path.join(dir, 'fixed.onnx');
    await writeFile(
      file,
      encodeModel(
        buildModel({
          graphName: 'fixed',
          nodes: [
            node('Conv', ['video_frames', 'select'], ['face'], 'face', { kernel_shape: [1, 1] }),
            node('ReduceMean', ['mel_spectrogram'], ['level'], 'level', { axes: [1, 2, 3], keepdims: 1 }),
            node('Mul', ['level', 'zero'], ['nothing'], 'nothing'),
            node('Add', ['face', 'nothing'], ['out'], 'out'),
          ],
          initializers: [floatTensor('select', [3, 6, 1, 1], select), floatTensor('zero', [], Float32Array.of(0))],
          inputs: [floatValueInfo('mel_spectrogram', [2, 1, 80, 16]), floatValueInfo('video_frames', [2, 6, 96, 96])],
          outputs: [floatValueInfo('out', [2, 3, 96, 96])],
          opset: 17,
          producerName: 'test',
          producerVersion: '1',
          docString: '',
          metadata: [],
        }),
      ),
    );
    const thread = new LipsyncThread(file);
    try {
      const fixed = await thread.open(sessionOptions(['cpu'], 1), 'mel_spectrogram');
      expect(fixed).toBe(2);
      const manifest = { ...testModelManifest().manifest, output: { ...testModelManifest().manifest.output, name: 'out' } };
      const model = new ThreadedLipsyncModel(manifest, thread, 8, fixed);
      expect(model.batch).toBe(2);
      const { mel, faces } = inputs(3);
      const out = await model.run(mel, faces, 3);
      for (let b = 0; b < 3; b += 1) {
        expect(out.subarray(b * 3 * PLANE, (b + 1) * 3 * PLANE)).toEqual(faces.subarray(b * 6 * PLANE, b * 6 * PLANE + 3 * PLANE));
      }
    } finally {
      await thread.close();
    }
  });
});
