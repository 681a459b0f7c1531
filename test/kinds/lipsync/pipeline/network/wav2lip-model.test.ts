import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import ort from 'onnxruntime-node';
import sharp, { type Sharp } from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProcessingError } from '../../../../../src/errors.js';
import {
  sha256Hex,
  parseManifest,
  type LipsyncManifest,
  ensureModelFile,
  forgetVerifiedModels,
  getManifest,
  ModelIntegrityError,
  ModelRegistryError,
  sha256File,
  SessionCache,
} from '../../../../../src/inference/index.js';
import {
  buildWav2LipTestModel,
  DEFAULT_LIPSYNC_MODEL_MAPPING,
  TEST_MOUTH,
  withLipsyncGenerators,
  loadLipsyncModel,
  OnnxLipsyncModel,
  parseLipsyncModelMapping,
  type LipsyncModel,
} from '../../../../../src/kinds/lipsync/pipeline/index.js';
import { testModelManifest } from '../../../../../scripts/make-test-lipsync-model.js';
import { ASTRONAUT } from '../faces-helpers.js';
import { fixedBatchGraph } from '../fixed-batch-graph.js';

const SIZE = 96;
const PLANE = SIZE * SIZE;

/** A 96x96 crop as planar BGR in 0..1. */
async function bgrPlanes(image: Sharp): Promise<Float32Array> {
  const rgb = await image.resize(SIZE, SIZE, { fit: 'fill' }).removeAlpha().raw().toBuffer();
  const out = new Float32Array(3 * PLANE);
  for (let i = 0; i < PLANE; i += 1) {
    out[i] = (rgb[i * 3 + 2] as number) / 255;
    out[PLANE + i] = (rgb[i * 3 + 1] as number) / 255;
    out[2 * PLANE + i] = (rgb[i * 3] as number) / 255;
  }
  return out;
}

describe('the lip-sync TEST model', () => {
  it('is committed as a test model with the Wav2Lip contract, and its generator reproduces the checksum', async () => {
    const manifest = (await getManifest('wav2lip-test')) as LipsyncManifest;
    expect(manifest.task).toBe('lipsync');
    expect(manifest.testModel).toBe(true);
    expect(manifest.description).toMatch(/^TEST MODEL/);
    expect(manifest.source).toEqual({ kind: 'generated', generator: 'wav2lip-test' });
    expect(manifest.inputs.mel).toMatchObject({ name: 'mel_spectrogram', shape: ['B', 1, 80, 16], range: [-4, 4] });
    expect(manifest.inputs.faces).toMatchObject({
      name: 'video_frames',
      shape: ['B', 6, 96, 96],
      channels: 'BGR',
      range: [0, 1],
    });
    expect(manifest.output).toMatchObject({ shape: ['B', 3, 96, 96], channels: 'BGR', range: [0, 1] });
    expect(manifest.audio).toMatchObject({
      sampleRate: 16000,
      nFft: 800,
      hop: 200,
      win: 800,
      melBands: 80,
      fmin: 55,
      fmax: 7600,
    });
    expect(manifest.face).toEqual({ size: 96, maskFromRow: 0.5, pads: [0, 10, 0, 0] });
    const first = buildWav2LipTestModel();
    const second = buildWav2LipTestModel();
    expect(Buffer.from(second.bytes).equals(Buffer.from(first.bytes))).toBe(true);
    expect(sha256Hex(first.bytes)).toBe(manifest.sha256);
    expect(first.bytes.byteLength).toBe(manifest.bytes);
    // The script that writes the manifest writes this very one.
    expect(testModelManifest().manifest).toEqual(manifest);
  });

  describe('loaded through the registry', () => {
    const sessions = new SessionCache({ thread: false });
    let dir: string;
    let model: LipsyncModel;
    const logged: object[] = [];
    let target: Float32Array;
    let reference: Float32Array;

    beforeAll(async () => {
      forgetVerifiedModels();
      dir = await mkdtemp(path.join(tmpdir(), 'wav2lip-test-'));
      model = await loadLipsyncModel('vendor-lipsync-2', {
        sessions,
        mapping: parseLipsyncModelMapping('wav2lip-test'),
        registry: { filesDir: dir, logger: { info: (details) => logged.push(details) } },
        batch: 4,
      });
      const face = sharp(ASTRONAUT).extract({ left: 160, top: 60, width: 130, height: 130 });
      target = await bgrPlanes(face.clone());
      reference = await bgrPlanes(face.clone().flop().modulate({ brightness: 1.2 }));
    });
    afterAll(async () => {
      await sessions.release();
      await rm(dir, { recursive: true, force: true });
    });

    it('is generated on first use, verified and written once', async () => {
      expect(logged).toEqual([
        { network: 'wav2lip-test', file: path.join(dir, 'wav2lip-test.onnx'), generator: 'wav2lip-test' },
      ]);
      expect(await sha256File(path.join(dir, 'wav2lip-test.onnx'))).toBe(model.manifest.sha256);
      expect(await readdir(dir)).toEqual(['wav2lip-test.onnx']);
      expect([model.name, model.testModel, model.batch]).toEqual(['wav2lip-test', true, 4]);
    });

    it('draws the upper face from the masked target, the lower from the reference, and shades the mouth with the mel level', async () => {
      const masked = target.slice();
      for (let c = 0; c < 3; c += 1) masked.fill(0, c * PLANE + (SIZE / 2) * SIZE, (c + 1) * PLANE);
      const levels = [-4, 2, 0];
      const faces = new Float32Array(levels.length * 6 * PLANE);
      const mel = new Float32Array(levels.length * 80 * 16);
      levels.forEach((level, b) => {
        faces.set(masked, b * 6 * PLANE);
        faces.set(reference, b * 6 * PLANE + 3 * PLANE);
        mel.fill(level, b * 80 * 16, (b + 1) * 80 * 16);
      });
      const out = await model.run(mel, faces, levels.length);
      expect(out).toHaveLength(levels.length * 3 * PLANE);
      expect(out.every((v) => v >= 0 && v <= 1)).toBe(true);
      const at = (b: number, c: number, x: number, y: number): number =>
        out[b * 3 * PLANE + c * PLANE + y * SIZE + x] as number;
      const mouth = [TEST_MOUTH.cx, TEST_MOUTH.cy] as const;
      for (const [b, keep] of [
        [0, 1],
        [1, 1 - 0.85],
        [2, 1 - 0.85 * (4 / 6)],
      ] as const) {
        for (let c = 0; c < 3; c += 1) {
          // Upper half: the target's; lower half away from the mouth: the reference's.
          expect(at(b, c, 20, 10)).toBeCloseTo(target[c * PLANE + 10 * SIZE + 20] as number, 6);
          expect(at(b, c, 5, 90)).toBeCloseTo(reference[c * PLANE + 90 * SIZE + 5] as number, 6);
          // The mouth's centre: the reference's, darkened by the mel level.
          const plain = reference[c * PLANE + mouth[1] * SIZE + mouth[0]] as number;
          expect(at(b, c, mouth[0], mouth[1])).toBeCloseTo(plain * keep, 2);
        }
      }
    });

    it('refuses inputs of the wrong length', async () => {
      await expect(model.run(new Float32Array(80 * 16), new Float32Array(6 * PLANE), 2)).rejects.toThrow(
        'Expected 2560 mel values and 110592 face values for 2 faces but received 1280 and 55296',
      );
    });
  });
});

describe('a graph with a fixed batch', () => {
  it('is fed in chunks, the last one padded, and only the real faces come back', async () => {
    // Output: the masked face's channels plus 0 x the mel mean, batch fixed at 2.
    const session = await ort.InferenceSession.create(fixedBatchGraph());
    const manifest = {
      ...testModelManifest().manifest,
      output: { ...testModelManifest().manifest.output, name: 'out' },
    };
    const model = new OnnxLipsyncModel(manifest, session, 8);
    expect(model.batch).toBe(2);
    const faces = new Float32Array(3 * 6 * PLANE).map((_, i) => (i % 97) / 97);
    const out = await model.run(new Float32Array(3 * 80 * 16), faces, 3);
    for (let b = 0; b < 3; b += 1) {
      expect(out.subarray(b * 3 * PLANE, (b + 1) * 3 * PLANE)).toEqual(
        faces.subarray(b * 6 * PLANE, b * 6 * PLANE + 3 * PLANE),
      );
    }
    await session.release();
  });
});

describe('which weights serve which model id', () => {
  let dir: string;
  const sessions = new SessionCache({ thread: false });
  beforeAll(async () => {
    forgetVerifiedModels();
    dir = await mkdtemp(path.join(tmpdir(), 'wav2lip-mapping-'));
  });
  afterAll(async () => {
    await sessions.release();
    await rm(dir, { recursive: true, force: true });
  });

  it.each([
    [
      'one name for all',
      'wav2lip-test',
      {
        'vendor-lipsync-2': 'wav2lip-test',
        'vendor-lipsync-2-pro': 'wav2lip-test',
        'vendor-lipsync-3': 'wav2lip-test',
      },
    ],
    [
      'a JSON object for some ids',
      '{"vendor-lipsync-3":"wav2lip-hq"}',
      { ...DEFAULT_LIPSYNC_MODEL_MAPPING, 'vendor-lipsync-3': 'wav2lip-hq' },
    ],
  ])('parses %s', (_what, text, mapping) => {
    expect(parseLipsyncModelMapping(text)).toEqual(mapping);
  });

  it.each([
    ['an unknown id', '{"vendor-lipsync-4":"x"}', 'Unrecognized key'],
    ['a bad name', 'Wav2Lip!', 'Expected a model manifest name of lower-case letters, digits, dots and dashes'],
    [
      'broken JSON',
      '{"vendor-lipsync-3":',
      'Expected a manifest name or a JSON object for LIPSYNC_MODELS but received',
    ],
  ])('refuses %s', (_what, text, words) => {
    expect(() => parseLipsyncModelMapping(text, 'LIPSYNC_MODELS')).toThrow(words);
  });

  it('defaults every id to the real weights, wav2lip', () => {
    expect(DEFAULT_LIPSYNC_MODEL_MAPPING).toEqual({
      'vendor-lipsync-2': 'wav2lip',
      'vendor-lipsync-2-pro': 'wav2lip',
      'vendor-lipsync-3': 'wav2lip',
    });
  });

  it('fails a job with a processing failure (LIPSYNC_FAILED for the job) naming what to install when the real weights are not installed', async () => {
    const attempt = loadLipsyncModel('vendor-lipsync-2-pro', { sessions, registry: { modelsDir: dir } });
    await expect(attempt).rejects.toThrow(ProcessingError);
    await expect(attempt).rejects.toMatchObject({ name: 'ProcessingError', retryable: false });
    await expect(attempt).rejects.toThrow(
      'Expected lip-sync weights wav2lip for vendor-lipsync-2-pro but they are not installed (no manifest): install real Wav2Lip ONNX weights with ' +
        "node dist/scripts/install-lipsync-model.js --url URL --sha256 HEX run with the worker's environment (it writes where MEDIA_WORKER_MODELS_DIR and MEDIA_WORKER_MODEL_FILES_DIR point), or select the test model explicitly (mapping vendor-lipsync-2-pro to wav2lip-test; it does not lip-sync)",
    );
  });

  it('says the same when the manifest is there but its weights file is not', async () => {
    const manifest = testModelManifest().manifest;
    const installed = {
      ...manifest,
      name: 'wav2lip',
      file: 'wav2lip.onnx',
      testModel: false,
      source: { kind: 'external', url: 'https://example.com/w.onnx', instructions: 'install it' },
    };
    await writeFile(path.join(dir, 'wav2lip.json'), JSON.stringify(installed));
    await expect(loadLipsyncModel('vendor-lipsync-3', { sessions, registry: { modelsDir: dir } })).rejects.toThrow(
      'Expected lip-sync weights wav2lip for vendor-lipsync-3 but they are not installed (no weights file): install real Wav2Lip ONNX weights with node dist/scripts/install-lipsync-model.js',
    );
  });

  it('refuses a mapping to a model of another task', async () => {
    const mapping = { ...DEFAULT_LIPSYNC_MODEL_MAPPING, 'vendor-lipsync-3': 'blazeface-back-256' };
    await expect(loadLipsyncModel('vendor-lipsync-3', { sessions, mapping })).rejects.toThrow(
      'Expected a lip-sync model for vendor-lipsync-3 but blazeface-back-256 is a face-detection model',
    );
  });

  it('refuses a generated file whose checksum differs, and an unknown generator', async () => {
    const manifest = testModelManifest().manifest;
    const modelsDir = path.join(dir, 'generated');
    await mkdir(modelsDir);
    const wrong = 'a'.repeat(64);
    await writeFile(path.join(modelsDir, 'wav2lip-test.json'), JSON.stringify({ ...manifest, sha256: wrong }));
    const attempt = ensureModelFile('wav2lip-test', withLipsyncGenerators({ modelsDir }));
    await expect(attempt).rejects.toThrow(ModelIntegrityError);
    await expect(attempt).rejects.toThrow(
      `Model wav2lip-test generated by wav2lip-test has sha256 ${manifest.sha256} but manifest`,
    );
    expect(await readdir(modelsDir)).toEqual(['wav2lip-test.json']);

    await writeFile(
      path.join(modelsDir, 'wav2lip-test.json'),
      JSON.stringify({ ...manifest, source: { kind: 'generated', generator: 'nonsense' } }),
    );
    const unknown = ensureModelFile('wav2lip-test', withLipsyncGenerators({ modelsDir }));
    await expect(unknown).rejects.toThrow(ModelRegistryError);
    await expect(unknown).rejects.toThrow(
      'Expected a known generator (wav2lip-test) for model wav2lip-test but received nonsense',
    );
    // The registry knows no builder of its own: without lip-sync's generators it cannot make the file.
    await writeFile(path.join(modelsDir, 'wav2lip-test.json'), JSON.stringify(manifest));
    await expect(ensureModelFile('wav2lip-test', { modelsDir })).rejects.toThrow(
      'Expected a known generator (none given) for model wav2lip-test but received wav2lip-test',
    );
  });
});

describe('lip-sync and face-detection manifests', () => {
  it.each([
    [
      'faces with 5 channels',
      {
        inputs: {
          ...testModelManifest().manifest.inputs,
          faces: { ...testModelManifest().manifest.inputs.faces, shape: ['B', 5, 96, 96] },
        },
      },
      'inputs.faces.shape',
    ],
    [
      'a mel window with a fixed batch',
      {
        inputs: {
          ...testModelManifest().manifest.inputs,
          mel: { ...testModelManifest().manifest.inputs.mel, shape: [4, 1, 80, 16] },
        },
      },
      'inputs.mel.shape',
    ],
    ['a generated source without a generator', { source: { kind: 'generated' } }, 'source.generator'],
    [
      'an external source with a bad URL',
      { source: { kind: 'external', url: 'not a url', instructions: 'x' } },
      'source.url',
    ],
  ])('refuses a lip-sync manifest with %s', (_what, change, words) => {
    const call = (): unknown => parseManifest({ ...testModelManifest().manifest, ...change }, 'models/broken.json');
    expect(call).toThrow('Expected a valid model manifest in models/broken.json');
    expect(call).toThrow(words);
  });

  it.each([
    [
      'a package path that climbs out',
      { path: 'ONNX/../../etc/passwd' },
      'Expected a relative path inside the package',
    ],
    ['a version range', { version: '^1.2.0' }, 'Expected an exact version'],
  ])('refuses a face-detection manifest with %s', async (_what, change, words) => {
    const manifest = await getManifest('blazeface-back-256');
    expect(() =>
      parseManifest({ ...manifest, source: { ...manifest.source, ...change } }, 'models/broken.json'),
    ).toThrow(words);
  });
});
