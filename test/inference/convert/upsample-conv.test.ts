import * as ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import { kerasToOnnx, samePads } from '../../../src/inference/convert/keras-to-onnx.js';
import {
  buildModel,
  encodeModel,
  floatTensor,
  floatValueInfo,
  node,
  type OnnxNode,
  type OnnxTensor,
} from '../../../src/inference/convert/onnx-builder.js';
import { loadTfjsLayersModel } from '../../../src/inference/convert/tfjs-layers-model.js';
import {
  foldedAxis,
  foldNearestUpsampleIntoConv,
  type ConvWeights,
} from '../../../src/inference/convert/upsample-conv.js';
import { packageRoot, UPSCALERJS_VARIANTS } from '../../../src/inference/convert/upscalerjs.js';
import { random } from '../../helpers/seeded-random.js';

/** Seeded, so the same weights and images come on every run. */
function randomArray(length: number, next: () => number, low = -1, high = 1): Float32Array {
  return Float32Array.from({ length }, () => low + (high - low) * next());
}

async function run(
  nodes: OnnxNode[],
  initializers: OnnxTensor[],
  input: Float32Array,
  dims: number[],
): Promise<ort.Tensor> {
  const model = buildModel({
    graphName: 'g',
    nodes,
    initializers,
    inputs: [floatValueInfo('x', ['n', dims[1] as number, 'h', 'w'])],
    outputs: [floatValueInfo('y', ['n', 'c', 'oh', 'ow'])],
    opset: 17,
    producerName: 'test',
    producerVersion: '0',
    docString: '',
    metadata: [],
  });
  const session = await ort.InferenceSession.create(encodeModel(model), { intraOpNumThreads: 1 });
  try {
    const { y } = await session.run({ x: new ort.Tensor('float32', input, dims) });
    if (y === undefined) throw new Error('Expected output y');
    return y;
  } finally {
    await session.release();
  }
}

const convAttributes = (conv: ConvWeights) => ({
  dilations: [1, 1],
  group: 1,
  kernel_shape: [conv.shape[2], conv.shape[3]],
  pads: [...conv.pads],
  strides: [1, 1],
});

/** The literal graph: nearest up-sampling as Keras does it (Resize asymmetric floor), then the convolution. */
function reference(conv: ConvWeights, s: number): (input: Float32Array, dims: number[]) => Promise<ort.Tensor> {
  const initializers = [
    floatTensor('scales', [4], Float32Array.of(1, 1, s, s)),
    floatTensor('w', conv.shape, conv.kernel),
  ];
  if (conv.bias !== undefined) initializers.push(floatTensor('b', [conv.shape[0]], conv.bias));
  const nodes = [
    node('Resize', ['x', '', 'scales'], ['up'], 'up', {
      coordinate_transformation_mode: 'asymmetric',
      mode: 'nearest',
      nearest_mode: 'floor',
    }),
    node('Conv', conv.bias === undefined ? ['up', 'w'] : ['up', 'w', 'b'], ['y'], 'conv', convAttributes(conv)),
  ];
  return (input, dims) => run(nodes, initializers, input, dims);
}

function rewritten(
  conv: ConvWeights,
  s: number,
  mode = 'DCR',
): (input: Float32Array, dims: number[]) => Promise<ort.Tensor> {
  const folded = foldNearestUpsampleIntoConv(conv, s);
  const initializers = [floatTensor('w', folded.shape, folded.kernel)];
  if (folded.bias !== undefined) initializers.push(floatTensor('b', [folded.shape[0]], folded.bias));
  const nodes = [
    node('Conv', folded.bias === undefined ? ['x', 'w'] : ['x', 'w', 'b'], ['phases'], 'conv', convAttributes(folded)),
    node('DepthToSpace', ['phases'], ['y'], 'd2s', { blocksize: s, mode }),
  ];
  return (input, dims) => run(nodes, initializers, input, dims);
}

function maxAbs(data: Float32Array): number {
  return data.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
}

function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  expect(a.length).toBe(b.length);
  let max = 0;
  for (let i = 0; i < a.length; i += 1) {
    const d = Math.abs((a[i] as number) - (b[i] as number));
    if (!(d <= max)) max = d;
  }
  return max;
}

function randomConv(next: () => number, cout: number, cin: number, kh: number, kw: number, bias = true): ConvWeights {
  return {
    kernel: randomArray(cout * cin * kh * kw, next),
    shape: [cout, cin, kh, kw],
    pads: samePads(kh, kw),
    ...(bias ? { bias: randomArray(cout, next) } : {}),
  };
}

describe('foldedAxis', () => {
  it.each([
    // kernel, leading pad, factor -> first input offset, kernel size at input resolution
    [3, 1, 2, -1, 3],
    [3, 1, 3, -1, 3],
    [3, 1, 4, -1, 3],
    [3, 1, 8, -1, 3],
    [3, 1, 1, -1, 3],
    [1, 0, 4, 0, 1],
    [2, 0, 2, 0, 2],
    [5, 2, 2, -1, 3],
    [5, 2, 4, -1, 3],
    [7, 3, 2, -2, 5],
  ])('a %i-tap kernel with pad %i at x%i spans %i and %i taps', (k, pad, s, first, size) => {
    expect(foldedAxis(k, pad, s)).toEqual({ first, size });
  });
});

describe('foldNearestUpsampleIntoConv', () => {
  it('sums the taps of a 3x3 kernel that land on the same input pixel, per phase in DCR order', () => {
    // One channel in and out, taps numbered 1..9 row by row, x2: phase (0, 0) reads rows -1 and
    // 0 (taps row 0 alone, rows 1+2 together), phase (1, 1) rows 0 and 1.
    const conv: ConvWeights = {
      kernel: Float32Array.from({ length: 9 }, (_, i) => i + 1),
      shape: [1, 1, 3, 3],
      pads: [1, 1, 1, 1],
      bias: Float32Array.of(0.5),
    };
    const folded = foldNearestUpsampleIntoConv(conv, 2);
    expect(folded.shape).toEqual([4, 1, 3, 3]);
    expect(folded.pads).toEqual([1, 1, 1, 1]);
    expect(Array.from(folded.bias ?? [])).toEqual([0.5, 0.5, 0.5, 0.5]);
    const phase = (p: number) => Array.from(folded.kernel.subarray(p * 9, p * 9 + 9));
    // Original rows [1 2 3], [4 5 6], [7 8 9].
    expect(phase(0)).toEqual([1, 2 + 3, 0, 4 + 7, 5 + 6 + 8 + 9, 0, 0, 0, 0]);
    expect(phase(1)).toEqual([0, 1 + 2, 3, 0, 4 + 5 + 7 + 8, 6 + 9, 0, 0, 0]);
    expect(phase(2)).toEqual([0, 0, 0, 1 + 4, 2 + 3 + 5 + 6, 0, 7, 8 + 9, 0]);
    expect(phase(3)).toEqual([0, 0, 0, 0, 1 + 2 + 4 + 5, 3 + 6, 0, 7 + 8, 9]);
    // Every original tap is used once per phase.
    for (let p = 0; p < 4; p += 1) expect(phase(p).reduce((a, b) => a + b, 0)).toBe(45);
  });

  it.each([
    [
      'a factor of 0',
      { shape: [1, 1, 1, 1], pads: [0, 0, 0, 0] },
      0,
      'Expected an integer up-sampling factor >= 1 but received 0',
    ],
    [
      'a kernel of the wrong length',
      { shape: [1, 1, 3, 3], pads: [1, 1, 1, 1] },
      2,
      'Expected 9 kernel values for shape [1, 1, 3, 3] but received 1',
    ],
    [
      "pads other than 'same'",
      { shape: [1, 1, 1, 1], pads: [1, 0, 0, 0] },
      2,
      "Expected 'same' pads for a 1x1 kernel but received [1, 0, 0, 0]",
    ],
    [
      'a negative pad',
      { shape: [1, 1, 1, 1], pads: [1, 0, -1, 0] },
      2,
      "Expected 'same' pads for a 1x1 kernel but received [1, 0, -1, 0]",
    ],
  ] as const)('refuses %s', (_what, partial, s, message) => {
    expect(() => foldNearestUpsampleIntoConv({ kernel: Float32Array.of(1), ...partial }, s)).toThrow(message);
  });
});

describe('up-sampling folded into the convolution equals Resize then Conv in onnxruntime', () => {
  // Factor, kernel, channels in/out, batch and odd sizes; 1x1 and 2x1 images are all border.
  const cases: Array<[number, number, number, number, number, number, number, number]> = [
    // s, kh, kw, cin, cout, n, h, w
    [2, 3, 3, 5, 3, 2, 7, 5],
    [3, 3, 3, 4, 3, 1, 5, 6],
    [4, 3, 3, 6, 3, 2, 9, 4],
    [4, 3, 3, 3, 2, 1, 1, 1],
    [8, 3, 3, 4, 3, 1, 3, 2],
    [2, 1, 1, 4, 3, 1, 4, 3],
    [2, 5, 5, 3, 4, 1, 6, 7],
    [3, 2, 2, 3, 3, 1, 5, 4],
    [4, 3, 5, 3, 2, 1, 2, 5],
  ];
  it.each(cases)(
    'x%i, %ix%i kernel, %i -> %i channels, batch %i, %ix%i input',
    async (s, kh, kw, cin, cout, n, h, w) => {
      const next = random(s * 1000 + kh * 100 + kw * 10 + h);
      const conv = randomConv(next, cout, cin, kh, kw);
      const dims = [n, cin, h, w];
      const input = randomArray(n * cin * h * w, next, 0, 255);
      const expected = await reference(conv, s)(input, dims);
      const actual = await rewritten(conv, s)(input, dims);
      expect(actual.dims).toEqual([n, cout, h * s, w * s]);
      expect(actual.dims).toEqual(expected.dims);
      const scale = maxAbs(expected.data as Float32Array);
      expect(scale).toBeGreaterThan(10);
      expect(maxAbsDiff(actual.data as Float32Array, expected.data as Float32Array)).toBeLessThan(1e-5 * scale);
    },
  );

  it('is sensitive to the phase order: the same kernels read in CRD order are wrong', async () => {
    const next = random(7);
    const conv = randomConv(next, 3, 4, 3, 3);
    const dims = [1, 4, 5, 5];
    const input = randomArray(4 * 5 * 5, next, 0, 255);
    const expected = await reference(conv, 2)(input, dims);
    const wrong = await rewritten(conv, 2, 'CRD')(input, dims);
    expect(maxAbsDiff(wrong.data as Float32Array, expected.data as Float32Array)).toBeGreaterThan(1);
  });
});

describe('the converter folds every ESRGAN UpSampling2D', () => {
  it.each([
    ['slim', 4],
    ['medium', 2],
  ] as const)('esrgan-%s-x%i: no Resize, and the same output as the literal graph', async (variant, scale) => {
    const { root } = await packageRoot(UPSCALERJS_VARIANTS[variant].package);
    const tfjs = await loadTfjsLayersModel(`${root}/models/x${scale}/model.json`);
    const options = {
      inputName: 'x',
      outputName: 'y',
      inputScale: 1,
      outputScale: 1,
      opset: 17,
      graphName: 'g',
      producerName: 'test',
      producerVersion: '0',
      docString: '',
      metadata: [],
    };
    const folded = kerasToOnnx(tfjs, options);
    const literal = kerasToOnnx(tfjs, { ...options, foldUpsampling: false });
    const ops = (graph: typeof folded) => (graph.model.graph?.node ?? []).map((n) => n.opType);
    expect(ops(literal)).toContain('Resize');
    expect(ops(folded)).not.toContain('Resize');
    expect(ops(folded).slice(-2)).toEqual(['Conv', 'DepthToSpace']);
    expect([folded.params, folded.scale, folded.receptiveFieldRadius]).toEqual([
      literal.params,
      literal.scale,
      literal.receptiveFieldRadius,
    ]);

    const next = random(scale);
    const dims = [1, 3, 13, 10];
    const input = randomArray(3 * 13 * 10, next, 0, 255);
    const outputs: Float32Array[] = [];
    for (const graph of [literal, folded]) {
      const session = await ort.InferenceSession.create(encodeModel(graph.model), { intraOpNumThreads: 1 });
      const { y } = await session.run({ x: new ort.Tensor('float32', input, dims) });
      await session.release();
      expect(y?.dims).toEqual([1, 3, 13 * scale, 10 * scale]);
      outputs.push(y?.data as Float32Array);
    }
    const [expected, actual] = outputs as [Float32Array, Float32Array];
    expect(maxAbs(expected)).toBeGreaterThan(100);
    // Float32 reordering only: well under 1/1000 of one 8-bit level.
    expect(maxAbsDiff(actual, expected)).toBeLessThan(1e-3);
  });
});
