/**
 * Adopting a network of one's own (src/inference/adopt/): graphs the engine cannot run are refused by
 * name before anything runs, networks that run but are no upscaler are refused by their probe, and
 * a refusal writes nothing. The shipped-network round trip is test/cli/commands/models.add.test.ts.
 */
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import onnxProto from 'onnx-proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  adoptNetwork,
  AdoptError,
  buildModel,
  ensureModelFile,
  encodeModel,
  floatTensor,
  floatValueInfo,
  node,
  unfilledFields,
  type Dim,
} from '../../src/inference/index.js';
import { checkImageGraph, readGraphFacts } from '../../src/inference/adopt/graph-facts.js';
import { seededRandom } from '../../src/seeded-random.js';

/** A one-convolution graph: `outChannels` 1x1 filters of `weights`, then DepthToSpace by `block` when it is above 1. */
function convGraph(opts: {
  input?: Dim[];
  outChannels: number;
  weights: Float32Array;
  block?: number;
  inputType?: number;
}): Uint8Array {
  const block = opts.block ?? 1;
  const nodes = [node('Conv', ['input', 'w'], [block > 1 ? 'features' : 'output'], 'conv')];
  if (block > 1)
    nodes.push(node('DepthToSpace', ['features'], ['output'], 'shuffle', { blocksize: block, mode: 'CRD' }));
  const input = floatValueInfo('input', opts.input ?? ['batch', 3, 'height', 'width']);
  if (opts.inputType !== undefined) input.type!.tensorType!.elemType = opts.inputType;
  return encodeModel(
    buildModel({
      graphName: 'test',
      nodes,
      initializers: [floatTensor('w', [opts.outChannels, 3, 1, 1], opts.weights)],
      inputs: [input],
      outputs: [floatValueInfo('output', ['batch', 3, 'out_height', 'out_width'])],
      opset: 17,
      producerName: 'adopt.test',
      producerVersion: '1',
      docString: '',
      metadata: [],
    }),
  );
}

const identity = new Float32Array([1, 0, 0, 0, 1, 0, 0, 0, 1]);

describe('graphs refused before anything runs', () => {
  it.each([
    [
      'a fixed input size',
      convGraph({ input: [1, 3, 64, 64], outChannels: 3, weights: identity }),
      /^fixed input size: input input has shape \[1, 3, 64, 64\]/,
    ],
    [
      'a float16 input',
      convGraph({ outChannels: 3, weights: identity, inputType: onnxProto.onnx.TensorProto.DataType.FLOAT16 }),
      /^float16 input input: the tiling engine feeds and reads float32/,
    ],
    [
      'one channel',
      convGraph({ input: ['batch', 1, 'h', 'w'], outChannels: 3, weights: identity }),
      /^not an RGB super-resolution network: its input input has 1 channels/,
    ],
    [
      'a 2-D input',
      convGraph({ input: ['batch', 3], outChannels: 3, weights: identity }),
      /^not a super-resolution network: its input input has shape \[batch, 3\]/,
    ],
  ])('%s', (_what, bytes, message) => {
    expect(() => checkImageGraph(readGraphFacts(bytes))).toThrow(message);
  });

  it('random bytes are no ONNX model', () => {
    const random = seededRandom(7);
    const bytes = Uint8Array.from({ length: 4096 }, () => Math.floor(random() * 256));
    expect(() => readGraphFacts(bytes)).toThrow(AdoptError);
    expect(() => readGraphFacts(bytes)).toThrow(/^not an ONNX model/);
  });
});

describe('a graph with float16 weights and float32 input and output', () => {
  it('is adopted like the float32 graph it was made from', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'adopt-fp16-'));
    try {
      const report = await adoptNetwork({
        file: (await ensureModelFile('realesrgan-x4fast-fp16')).path,
        name: 'mine-fp16',
        registry: { modelsDir: dir },
        threads: 2,
      });
      expect(report.facts.float16Weights).toBe(true);
      expect(report.manifest).toMatchObject({ scale: 4, input: { range: [0, 255] }, macsPerInputPixel: 1209024 });
      expect(report.agreement.maxDiff).toBeLessThanOrEqual(1);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 180_000);
});

describe('networks refused by their probe, with nothing written', () => {
  let dir: string;
  let models: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'adopt-test-'));
    models = path.join(dir, 'models');
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  async function adopt(bytes: Uint8Array, name: string): Promise<unknown> {
    const file = path.join(dir, `${name}.onnx`);
    await writeFile(file, bytes);
    return adoptNetwork({ file, name, registry: { modelsDir: models }, threads: 1 });
  }

  it('a network that does not enlarge its input', async () => {
    await expect(adopt(convGraph({ outChannels: 3, weights: identity }), 'same-size')).rejects.toThrow(
      /^not a super-resolution network: a 40x32 input gives 40x32, which is no integer scale of at least 2/,
    );
  });

  it('a network whose x2 output looks nothing like its input', async () => {
    const random = seededRandom(11);
    const weights = Float32Array.from({ length: 12 * 3 }, () => random() * 2 - 1);
    await expect(adopt(convGraph({ outChannels: 12, weights, block: 2 }), 'noise-x2')).rejects.toThrow(
      /^not a super-resolution network: its x2 output does not resemble its input upscaled at any input range/,
    );
    await expect(readdir(models)).rejects.toThrow(/ENOENT/);
  });

  it('adopts an x2 upscaler it can run, and says its licence and provenance are unfilled', async () => {
    // Nearest-neighbour x2: every input channel copied to its four sub-pixels (DepthToSpace CRD order).
    const weights = new Float32Array(12 * 3);
    for (let c = 0; c < 3; c += 1) for (let k = 0; k < 4; k += 1) weights[(c * 4 + k) * 3 + c] = 1;
    const report = await adoptNetwork({
      file: await writeFile(path.join(dir, 'nearest.onnx'), convGraph({ outChannels: 12, weights, block: 2 })).then(
        () => path.join(dir, 'nearest.onnx'),
      ),
      name: 'nearest-x2',
      registry: { modelsDir: models },
      threads: 1,
    });
    expect(report.manifest).toMatchObject({
      scale: 2,
      receptiveFieldRadius: 0,
      macsPerInputPixel: 36,
      tile: { size: 512, overlap: 0, batch: 1 },
      licence: null,
    });
    expect(report.agreement.maxDiff).toBe(0);
    expect(unfilledFields(report.manifest)).toEqual(['licence', 'source.url']);
    expect((await readdir(models)).sort()).toEqual(['nearest-x2.json', 'nearest-x2.onnx']);
    await expect(
      adoptNetwork({ file: path.join(dir, 'nearest.onnx'), name: 'nearest-x2', registry: { modelsDir: models } }),
    ).rejects.toThrow(/^a model named nearest-x2 exists already/);
  });
});
