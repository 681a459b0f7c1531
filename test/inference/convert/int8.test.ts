/**
 * The int8 variants (convert/int8.ts): the quantization arithmetic, the QDQ graph of a small
 * network run by ONNX Runtime, the registry's checks on the calibration file, and the real
 * realesrgan-x4fast-int8 made by `models prepare`: tiled equals untiled within 1/255, as for fp32.
 */
import { copyFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  activationQuantization,
  buildModel,
  calibratedTensors,
  decodeModel,
  encodeModel,
  ensureModelFile,
  equalizeChannels,
  floatTensor,
  floatValueInfo,
  forgetVerifiedModels,
  int8Bytes,
  int8CalibrationSchema,
  ModelIntegrityError,
  node,
  openSession,
  quantizeWeights,
  roundHalfEven,
  sha256Hex,
  srModel,
  toInt8,
  upscaleRgb,
  type Int8Calibration,
  type OnnxModel,
} from '../../../src/inference/index.js';
import { PACKAGE_ROOT } from '../../../src/paths.js';
import { makeTempDir } from '../../media/helpers.js';
import { maxAbsDiff, photoCrop } from '../tile-fixtures.js';

describe('int8 arithmetic', () => {
  it('rounds half to even, as QuantizeLinear does', () => {
    expect([0.5, 1.5, 2.5, -0.5, -1.5, 2.4, 2.6].map(roundHalfEven)).toEqual([0, 2, 2, 0, -2, 2, 3]);
  });

  it('gives an activation range a scale over 255 steps and a zero point that makes 0 exact', () => {
    expect(activationQuantization(0, 255)).toEqual({ scale: 1, zeroPoint: 0 });
    const { scale, zeroPoint } = activationQuantization(-1, 3);
    expect(scale).toBeCloseTo(4 / 255, 7);
    expect(zeroPoint).toBe(64);
    // A range that misses 0 is widened to hold it; an empty range quantizes nothing.
    expect(activationQuantization(2, 4).zeroPoint).toBe(0);
    expect(activationQuantization(0, 0)).toEqual({ scale: 1, zeroPoint: 0 });
  });

  it('quantizes weights per output channel, symmetric in [-127, 127]', () => {
    const { values, scales } = quantizeWeights(Float32Array.of(1, -0.5, 0.25, 0.002, 0.001, 0), 2);
    expect(Array.from(scales)).toEqual([Math.fround(1 / 127), Math.fround(0.002 / 127)]);
    expect(Array.from(values)).toEqual([127, -64, 32, 127, 64, 0]);
  });
});

/** conv 3x3 (3->4) -> relu -> conv 3x3 (4->3): a small float32 network with fixed weights. */
function smallNetwork(): OnnxModel {
  const weights = (n: number, seed: number) =>
    Float32Array.from({ length: n }, (_, i) => Math.sin(i * 12.9898 + seed) * 0.2);
  return buildModel({
    graphName: 'small',
    nodes: [
      node('Conv', ['input', 'a.weight', 'a.bias'], ['a'], 'Conv_a', { pads: [1, 1, 1, 1] }),
      node('Relu', ['a'], ['a_relu'], 'Relu_a'),
      node('Conv', ['a_relu', 'b.weight', 'b.bias'], ['output'], 'Conv_b', { pads: [1, 1, 1, 1] }),
    ],
    initializers: [
      floatTensor('a.weight', [4, 3, 3, 3], weights(108, 1)),
      floatTensor('a.bias', [4], Float32Array.of(0.1, -0.2, 0.3, 0)),
      floatTensor('b.weight', [3, 4, 3, 3], weights(108, 2)),
      floatTensor('b.bias', [3], Float32Array.of(0.05, 0, -0.05)),
    ],
    inputs: [floatValueInfo('input', [1, 3, 'h', 'w'])],
    outputs: [floatValueInfo('output', [1, 3, 'h', 'w'])],
    opset: 17,
    producerName: 'test',
    producerVersion: '1',
    docString: '',
    metadata: [],
  });
}

const INPUT = Float32Array.from({ length: 3 * 16 * 16 }, (_, i) => 0.5 + 0.5 * Math.sin(i * 0.37));

async function runBytes(bytes: Uint8Array): Promise<Float32Array> {
  const session = await ort.InferenceSession.create(bytes);
  try {
    return (await session.run({ input: new ort.Tensor('float32', INPUT, [1, 3, 16, 16]) })).output
      ?.data as Float32Array;
  } finally {
    await session.release();
  }
}

/** Ranges taken from the float32 network itself (min and max of each tensor on INPUT). */
async function calibrate(model: OnnxModel, keepFloat: string[] = []): Promise<Int8Calibration> {
  const tensors = calibratedTensors(model, keepFloat);
  const exposed = {
    ...model,
    graph: {
      ...model.graph,
      output: [
        ...(model.graph?.output ?? []),
        ...tensors.filter((t) => t !== 'output').map((name) => ({ name, type: { tensorType: { elemType: 1 } } })),
      ],
    },
  };
  const session = await ort.InferenceSession.create(encodeModel(exposed));
  const outputs = await session.run({ input: new ort.Tensor('float32', INPUT, [1, 3, 16, 16]) });
  await session.release();
  const ranges = Object.fromEntries(
    tensors.map((t) => {
      const values = outputs[t]?.data as Float32Array;
      return [t, [Math.min(...values), Math.max(...values)] as [number, number]];
    }),
  );
  return {
    schemaVersion: 1,
    of: 'small',
    ofSha256: '0'.repeat(64),
    method: 'minmax',
    inputs: ['test'],
    keepFloat,
    ranges,
  };
}

describe('the QDQ graph of a small network', () => {
  it('quantizes each convolution (weights, bias, input, output) and stays close to float32', async () => {
    const model = smallNetwork();
    // The graph's output is a convolution's output: a QDQ pair cannot rename it, so that convolution stays float32.
    expect(() => toInt8(model, { ...calibrateSync(), keepFloat: [] })).toThrow(/graph output/);
    const calibration = await calibrate(model, ['Conv_b']);
    const int8 = toInt8(model, calibration);
    const ops = (int8.graph?.node ?? []).map((n) => n.opType);
    expect(ops.filter((op) => op === 'QuantizeLinear')).toHaveLength(2);
    expect(ops.filter((op) => op === 'DequantizeLinear')).toHaveLength(4); // input, output, weight, bias
    const types = new Map((int8.graph?.initializer ?? []).map((t) => [t.name, t.dataType]));
    expect(types.get('a.weight.q')).toBe(3); // INT8
    expect(types.get('a.bias.q')).toBe(6); // INT32
    expect(types.has('a.weight')).toBe(false); // the float weights are gone
    const [float32, quantized] = await Promise.all([runBytes(encodeModel(model)), runBytes(encodeModel(int8))]);
    let worst = 0;
    for (let i = 0; i < float32.length; i += 1)
      worst = Math.max(worst, Math.abs((float32[i] as number) - (quantized[i] as number)));
    expect(worst).toBeGreaterThan(0); // it is really quantized
    expect(worst).toBeLessThan(0.05);
  });

  it('is deterministic, refuses a missing range, and leaves kept convolutions in float32', async () => {
    const model = smallNetwork();
    const calibration = await calibrate(model, ['Conv_b']);
    expect(sha256Hex(encodeModel(toInt8(decodeModel(encodeModel(model)), calibration)))).toBe(
      sha256Hex(encodeModel(toInt8(model, calibration))),
    );
    const { a: _dropped, ...fewer } = calibration.ranges;
    expect(() => toInt8(model, { ...calibration, ranges: fewer })).toThrow(/Expected a calibrated range for tensor a/);
    expect(() => toInt8(model, { ...calibration, keepFloat: ['Conv_x'] })).toThrow(/no Conv_x/);
    const allFloat = toInt8(model, { ...calibration, keepFloat: ['Conv_a', 'Conv_b'] });
    expect((allFloat.graph?.node ?? []).map((n) => n.opType)).toEqual(['Conv', 'Relu', 'Conv']);
  });
});

describe('bias correction', () => {
  it("takes each channel's measured excess off the bias before it is quantized", async () => {
    const model = smallNetwork();
    const calibration = await calibrate(model, ['Conv_b']);
    const biasOf = (c: Int8Calibration) => {
      const tensor = (toInt8(model, c).graph?.initializer ?? []).find((t) => t.name === 'a.bias.q');
      const raw = tensor?.rawData as Uint8Array;
      return Array.from({ length: 4 }, (_, i) => new DataView(raw.buffer, raw.byteOffset).getInt32(i * 4, true));
    };
    const scaleOf = (c: Int8Calibration) => {
      const tensor = (toInt8(model, c).graph?.initializer ?? []).find((t) => t.name === 'a.bias.qscale');
      const raw = tensor?.rawData as Uint8Array;
      return Array.from({ length: 4 }, (_, i) => new DataView(raw.buffer, raw.byteOffset).getFloat32(i * 4, true));
    };
    const plain = biasOf(calibration);
    const corrected = biasOf({ ...calibration, biasCorrection: { Conv_a: [0.5, 0, 0, -0.25] } });
    const scales = scaleOf(calibration);
    expect(corrected[0]! - plain[0]!).toBeCloseTo(-0.5 / scales[0]!, -0.5);
    expect(corrected.slice(1, 3)).toEqual(plain.slice(1, 3));
    expect(corrected[3]! - plain[3]!).toBeCloseTo(0.25 / scales[3]!, -0.5);
    expect(() => toInt8(model, { ...calibration, biasCorrection: { Conv_a: [1] } })).toThrow(
      /Expected 4 bias corrections for Conv_a/,
    );
  });
});

describe('cross-layer equalization', () => {
  /** conv (3->4) -> PReLU -> conv (4->3): the shape equalizeChannels scales. */
  function withPrelu(): OnnxModel {
    const small = smallNetwork();
    const graph = small.graph ?? {};
    return {
      ...small,
      graph: {
        ...graph,
        node: [(graph.node ?? [])[0]!, node('PRelu', ['a', 'a.slope'], ['a_relu'], 'PRelu_a'), (graph.node ?? [])[2]!],
        initializer: [
          ...(graph.initializer ?? []),
          floatTensor('a.slope', [4, 1, 1], Float32Array.of(0.1, 0.25, 0.05, 0.2)),
        ],
      },
    };
  }

  it('scales channels without changing the function, and refuses a convolution it cannot scale', async () => {
    const model = withPrelu();
    const equalized = equalizeChannels(model, { Conv_a: [1, 4, 0.5, 16] });
    const [before, after] = await Promise.all([runBytes(encodeModel(model)), runBytes(encodeModel(equalized))]);
    let worst = 0;
    for (let i = 0; i < before.length; i += 1)
      worst = Math.max(worst, Math.abs((before[i] as number) - (after[i] as number)));
    expect(worst).toBeLessThan(1e-5);
    expect(sha256Hex(encodeModel(equalized))).not.toBe(sha256Hex(encodeModel(model)));
    expect(() => equalizeChannels(model, { Conv_a: [1, 2] })).toThrow(/Expected 4 equalization factors for Conv_a/);
    expect(() => equalizeChannels(smallNetwork(), { Conv_a: [1, 1, 1, 1] })).toThrow(/read by one PReLU/);
  });
});

function calibrateSync(): Int8Calibration {
  return {
    schemaVersion: 1,
    of: 'small',
    ofSha256: '0'.repeat(64),
    method: 'minmax',
    inputs: ['test'],
    keepFloat: [],
    ranges: { input: [0, 1], a: [-1, 1], a_relu: [0, 1], output: [-1, 1] },
  };
}

describe('realesrgan-x4fast-int8 from the registry', () => {
  const registry = { modelsDir: path.join(PACKAGE_ROOT, 'models') };
  let dir: string;
  let cleanup: () => Promise<void>;
  beforeAll(async () => {
    ({ dir, cleanup } = await makeTempDir('int8'));
  });
  afterAll(async () => cleanup());

  it.each(['realesrgan-x4fast', 'realesrgan-x4plus'])(
    "%s-int8: the conversion of the float32 file with the calibration has the manifest's sha256",
    async (name) => {
      const [float32, variant] = await Promise.all([
        ensureModelFile(name, registry),
        ensureModelFile(`${name}-int8`, registry),
      ]);
      const source = variant.manifest.source;
      if (source.kind !== 'int8') throw new Error(`Expected ${name}-int8 to be an int8 variant`);
      const calibration = int8CalibrationSchema.parse(
        JSON.parse(await readFile(path.join(registry.modelsDir, source.calibration.file), 'utf8')),
      );
      // Converted here, not read back from a file that may have been made before.
      const bytes = int8Bytes(new Uint8Array(await readFile(float32.path)), calibration);
      expect(sha256Hex(bytes)).toBe(variant.manifest.sha256);
      const ops = new Set((decodeModel(bytes).graph?.node ?? []).map((n) => n.opType));
      expect(ops.has('QuantizeLinear') && ops.has('DequantizeLinear')).toBe(true);
    },
  );

  it('refuses a calibration file whose bytes are not the ones its manifest pins', async () => {
    const models = path.join(dir, 'models');
    await mkdir(path.join(models, 'calibration'), { recursive: true });
    for (const name of ['realesrgan-x4fast.json', 'realesrgan-x4fast-int8.json'])
      await copyFile(path.join(PACKAGE_ROOT, 'models', name), path.join(models, name));
    await copyFile(
      path.join(PACKAGE_ROOT, 'models', 'realesrgan-x4fast.onnx'),
      path.join(models, 'realesrgan-x4fast.onnx'),
    );
    const calibration = JSON.parse(
      await readFile(path.join(PACKAGE_ROOT, 'models', 'calibration', 'realesrgan-x4fast-int8.json'), 'utf8'),
    ) as Int8Calibration;
    const ranges = Object.fromEntries(
      Object.entries(calibration.ranges).map(([k, [low, high]]) => [k, [low, high * 2]]),
    );
    await writeFile(
      path.join(models, 'calibration', 'realesrgan-x4fast-int8.json'),
      `${JSON.stringify({ ...calibration, ranges }, null, 2)}\n`,
    );
    forgetVerifiedModels();
    const refused = ensureModelFile('realesrgan-x4fast-int8', { modelsDir: models });
    await expect(refused).rejects.toThrow(ModelIntegrityError);
    await expect(refused).rejects.toThrow(/Calibration file .* has sha256 .* but its manifest expects/);
  });

  it('tiles seamlessly: tiled equals untiled within 1/255 at the manifest overlap (its receptive field)', async () => {
    const file = await ensureModelFile('realesrgan-x4fast-int8', registry);
    const overlap = file.manifest.task === 'super-resolution' ? file.manifest.tile.overlap : 0;
    const session = await openSession(file.path, { executionProviders: ['cpu'] });
    try {
      const model = srModel(session, 4);
      for (const [photo, left, top] of [
        ['coffee.png', 260, 120],
        ['chelsea.png', 130, 60],
      ] as const) {
        const image = await photoCrop(photo, left, top, 97, 90);
        const untiled = await upscaleRgb(model, image, { tile: 1024, overlap });
        const tiled = await upscaleRgb(model, image, { tile: 2 * overlap + 20, overlap });
        expect(tiled.tiles, photo).toBeGreaterThan(1);
        expect(maxAbsDiff(tiled.data, untiled.data), photo).toBeLessThanOrEqual(1);
      }
    } finally {
      await session.release();
    }
  });
});
