import * as ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import { convertTfjsSource, INPUT_NAME, ONNX_OPSET, OUTPUT_NAME } from '../../src/inference/convert/convert.js';
import {
  hwioToOihw,
  kerasToOnnx,
  samePads,
  type KerasToOnnxOptions,
} from '../../src/inference/convert/keras-to-onnx.js';
import { decodeModel, encodeModel } from '../../src/inference/convert/onnx-builder.js';
import {
  parseTfjsLayersModel,
  TfjsModelFormatError,
  type TfjsLayersModel,
} from '../../src/inference/convert/tfjs-layers-model.js';
import { installedSource, ModelSourceError, parseModelName } from '../../src/inference/convert/upscalerjs.js';
import { getManifest } from '../../src/inference/model-registry.js';
import { TEST_GRAPH_OPTIONS } from './converter-options.js';

const options: KerasToOnnxOptions = TEST_GRAPH_OPTIONS;

describe('samePads', () => {
  it.each([
    [1, 1, [0, 0, 0, 0]],
    [3, 3, [1, 1, 1, 1]],
    [5, 5, [2, 2, 2, 2]],
    [2, 2, [0, 0, 1, 1]],
    [3, 5, [1, 2, 1, 2]],
  ])('pads a %ix%i kernel as TF does', (kh, kw, pads) => {
    expect(samePads(kh, kw)).toEqual(pads);
  });
});

describe('hwioToOihw', () => {
  it('moves every element of a 2x1x2x3 kernel to its OIHW place and scales it', () => {
    const shape = [2, 1, 2, 3];
    const data = Float32Array.from({ length: 12 }, (_, i) => i);
    const out = hwioToOihw({ shape, data }, 2);
    for (let h = 0; h < 2; h += 1) {
      for (let i = 0; i < 2; i += 1) {
        for (let o = 0; o < 3; o += 1) {
          const src = ((h * 1 + 0) * 2 + i) * 3 + o;
          expect(out[((o * 2 + i) * 2 + h) * 1 + 0]).toBe(src * 2);
        }
      }
    }
  });
});

/** A tiny Keras graph in the UpscalerJS dialect: conv -> relu -> concat -> add -> mul -> shuffle. */
function tinyModel(
  overrides: { layers?: unknown[]; weights?: Array<{ name: string; shape: number[] }> } = {},
): TfjsLayersModel {
  const conv = (name: string, input: string, filters: number, kernel: number, padding = 'same') => ({
    class_name: 'Conv2D',
    config: {
      name,
      filters,
      kernel_size: [kernel, kernel],
      strides: [1, 1],
      padding,
      activation: 'linear',
      use_bias: true,
    },
    inbound_nodes: [[[input, 0, 0, {}]]],
  });
  const layers = overrides.layers ?? [
    { class_name: 'InputLayer', config: { name: 'in', batch_input_shape: [null, null, null, 3] }, inbound_nodes: [] },
    conv('c1', 'in', 4, 3),
    { class_name: 'Activation', config: { name: 'r1', activation: 'relu' }, inbound_nodes: [[['c1', 0, 0, {}]]] },
    {
      class_name: 'Concatenate',
      config: { name: 'cat', axis: 3 },
      inbound_nodes: [
        [
          ['c1', 0, 0, {}],
          ['r1', 0, 0, {}],
        ],
      ],
    },
    conv('c2', 'cat', 4, 1, 'valid'),
    {
      class_name: 'Add',
      config: { name: 'add' },
      inbound_nodes: [
        [
          ['c2', 0, 0, {}],
          ['c1', 0, 0, {}],
        ],
      ],
    },
    { class_name: 'MultiplyBeta', config: { name: 'mb', beta: 0.2 }, inbound_nodes: [[['add', 0, 0, {}]]] },
    {
      class_name: 'UpSampling2D',
      config: { name: 'up', size: [2, 2], interpolation: 'nearest' },
      inbound_nodes: [[['mb', 0, 0, {}]]],
    },
    conv('c3', 'up', 12, 3),
    { class_name: 'PixelShuffle2x', config: { name: 'ps', scale: 2 }, inbound_nodes: [[['c3', 0, 0, {}]]] },
  ];
  const weights = overrides.weights ?? [
    { name: 'c1/kernel', shape: [3, 3, 3, 4] },
    { name: 'c1/bias', shape: [4] },
    { name: 'c2/kernel', shape: [1, 1, 8, 4] },
    { name: 'c2/bias', shape: [4] },
    { name: 'c3/kernel', shape: [3, 3, 4, 12] },
    { name: 'c3/bias', shape: [12] },
  ];
  const total = weights.reduce((sum, w) => sum + w.shape.reduce((a, b) => a * b, 1), 0);
  const bytes = new Uint8Array(total * 4);
  const view = new DataView(bytes.buffer);
  for (let i = 0; i < total; i += 1) view.setFloat32(i * 4, Math.sin(i) / 4, true);
  const outputLayer = (layers.at(-1) as { config: { name: string } }).config.name;
  return parseTfjsLayersModel(
    {
      format: 'layers-model',
      modelTopology: {
        model_config: {
          class_name: 'Functional',
          config: { name: 'tiny', layers, input_layers: [['in', 0, 0]], output_layers: [[outputLayer, 0, 0]] },
        },
      },
      weightsManifest: [{ paths: ['w.bin'], weights: weights.map((w) => ({ ...w, dtype: 'float32' })) }],
    },
    [bytes],
  );
}

describe('kerasToOnnx', () => {
  it('emits one ONNX op per Keras layer type, tracks scale, params and receptive field', () => {
    const converted = kerasToOnnx(tinyModel(), { ...options, foldUpsampling: false });
    const ops = (converted.model.graph?.node ?? []).map((n) => n.opType);
    expect(ops).toEqual(['Conv', 'Relu', 'Concat', 'Conv', 'Add', 'Mul', 'Resize', 'Conv', 'DepthToSpace']);
    expect(converted.scale).toBe(4);
    expect(converted.outputChannels).toBe(3);
    expect(converted.params).toBe(3 * 3 * 3 * 4 + 4 + 8 * 4 + 4 + 3 * 3 * 4 * 12 + 12);
    // c1 reaches 1 pixel, c3 (at 2x) half a pixel, rounded up per layer.
    expect(converted.receptiveFieldRadius).toBe(2);
  });

  it('folds an UpSampling2D into the Conv2D that alone reads it: Conv at the lower resolution, then DepthToSpace', () => {
    const converted = kerasToOnnx(tinyModel(), options);
    const nodes = converted.model.graph?.node ?? [];
    expect(nodes.map((n) => n.opType)).toEqual([
      'Conv',
      'Relu',
      'Concat',
      'Conv',
      'Add',
      'Mul',
      'Conv',
      'DepthToSpace',
      'DepthToSpace',
    ]);
    const c3 = nodes[6];
    expect(c3?.input?.[0]).toBe('mb');
    // 12 filters times 4 phases.
    expect(converted.model.graph?.initializer?.find((t) => t.name === 'c3.weight')?.dims?.map(Number)).toEqual([
      48, 4, 3, 3,
    ]);
    expect(converted.model.graph?.initializer?.some((t) => t.name === 'up.scales')).toBe(false);
    // The facts about the network do not depend on how it is emitted.
    const literal = kerasToOnnx(tinyModel(), { ...options, foldUpsampling: false });
    expect([converted.scale, converted.params, converted.receptiveFieldRadius]).toEqual([
      literal.scale,
      literal.params,
      literal.receptiveFieldRadius,
    ]);
  });

  it.each([
    ['read by two layers', 'two readers'],
    ['the graph output', 'output'],
  ])('keeps the Resize when the up-sampled tensor is %s', (_what, shape) => {
    const inputLayer = {
      class_name: 'InputLayer',
      config: { name: 'in', batch_input_shape: [null, null, null, 3] },
      inbound_nodes: [],
    };
    const up = {
      class_name: 'UpSampling2D',
      config: { name: 'up', size: [2, 2] },
      inbound_nodes: [[['in', 0, 0, {}]]],
    };
    const conv = {
      class_name: 'Conv2D',
      config: {
        name: 'c',
        filters: 3,
        kernel_size: [3, 3],
        strides: [1, 1],
        padding: 'same',
        activation: 'linear',
        use_bias: false,
      },
      inbound_nodes: [[['up', 0, 0, {}]]],
    };
    const layers =
      shape === 'output'
        ? [inputLayer, up]
        : [
            inputLayer,
            up,
            conv,
            {
              class_name: 'Add',
              config: { name: 'sum' },
              inbound_nodes: [
                [
                  ['c', 0, 0, {}],
                  ['up', 0, 0, {}],
                ],
              ],
            },
          ];
    const weights = shape === 'output' ? [] : [{ name: 'c/kernel', shape: [3, 3, 3, 3] }];
    const ops = (kerasToOnnx(tinyModel({ layers, weights }), options).model.graph?.node ?? []).map((n) => n.opType);
    expect(ops).toEqual(shape === 'output' ? ['Resize'] : ['Resize', 'Conv', 'Add']);
  });

  it('folds each of two chained x2 stages, with a relu on the convolutions, to the output of the literal graph', async () => {
    const conv = (name: string, input: string, filters: number, kernel: number) => ({
      class_name: 'Conv2D',
      config: {
        name,
        filters,
        kernel_size: [kernel, kernel],
        strides: [1, 1],
        padding: 'same',
        activation: 'relu',
        use_bias: true,
      },
      inbound_nodes: [[[input, 0, 0, {}]]],
    });
    const up = (name: string, input: string) => ({
      class_name: 'UpSampling2D',
      config: { name, size: [2, 2] },
      inbound_nodes: [[[input, 0, 0, {}]]],
    });
    const model = tinyModel({
      layers: [
        {
          class_name: 'InputLayer',
          config: { name: 'in', batch_input_shape: [null, null, null, 3] },
          inbound_nodes: [],
        },
        up('up1', 'in'),
        conv('c1', 'up1', 5, 3),
        up('up2', 'c1'),
        conv('c2', 'up2', 3, 5),
      ],
      weights: [
        { name: 'c1/kernel', shape: [3, 3, 3, 5] },
        { name: 'c1/bias', shape: [5] },
        { name: 'c2/kernel', shape: [5, 5, 5, 3] },
        { name: 'c2/bias', shape: [3] },
      ],
    });
    const folded = kerasToOnnx(model, options);
    expect((folded.model.graph?.node ?? []).map((n) => n.opType)).toEqual([
      'Conv',
      'DepthToSpace',
      'Relu',
      'Conv',
      'DepthToSpace',
      'Relu',
    ]);
    const [h, w] = [5, 4];
    const input = Float32Array.from({ length: 3 * h * w }, (_, i) => ((i * 37) % 17) - 8);
    const outputs: Float32Array[] = [];
    for (const converted of [kerasToOnnx(model, { ...options, foldUpsampling: false }), folded]) {
      const session = await ort.InferenceSession.create(encodeModel(converted.model));
      const { output } = await session.run({ input: new ort.Tensor('float32', input, [1, 3, h, w]) });
      await session.release();
      expect(output?.dims).toEqual([1, 3, h * 4, w * 4]);
      outputs.push(output?.data as Float32Array);
    }
    const [expected, actual] = outputs as [Float32Array, Float32Array];
    const scale = expected.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
    expect(scale).toBeGreaterThan(1);
    // The relu makes some outputs 0: both graphs must agree on which.
    expect(expected.filter((v) => v === 0).length).toBeGreaterThan(0);
    expect(actual.every((v, i) => Math.abs(v - (expected[i] as number)) <= 1e-5 * scale)).toBe(true);
  });

  it.each([true, false])(
    'runs in onnxruntime with the nearest up-sampling and DCR shuffle of Keras/TF (folded: %s)',
    async (foldUpsampling) => {
      // Identity-like network: one 1x1 conv copying channel c to 4 sub-pixels in DCR order.
      const identity = tinyModel({
        layers: [
          {
            class_name: 'InputLayer',
            config: { name: 'in', batch_input_shape: [null, null, null, 3] },
            inbound_nodes: [],
          },
          { class_name: 'UpSampling2D', config: { name: 'up', size: [2, 2] }, inbound_nodes: [[['in', 0, 0, {}]]] },
          {
            class_name: 'Conv2D',
            config: {
              name: 'c',
              filters: 12,
              kernel_size: [1, 1],
              strides: [1, 1],
              padding: 'same',
              activation: 'linear',
              use_bias: false,
            },
            inbound_nodes: [[['up', 0, 0, {}]]],
          },
          { class_name: 'PixelShuffle2x', config: { name: 'ps', scale: 2 }, inbound_nodes: [[['c', 0, 0, {}]]] },
        ],
        weights: [{ name: 'c/kernel', shape: [1, 1, 3, 12] }],
      });
      // Kernel: output channel (i*2 + j)*3 + c copies input c times (1 + i*2 + j), so each sub-pixel is tagged.
      const kernel = identity.weights.get('c/kernel');
      if (kernel === undefined) throw new Error('Expected the test kernel');
      kernel.data.fill(0);
      for (let sub = 0; sub < 4; sub += 1) for (let c = 0; c < 3; c += 1) kernel.data[c * 12 + sub * 3 + c] = 1 + sub;
      const bytes = encodeModel(kerasToOnnx(identity, { ...options, foldUpsampling }).model);
      const session = await ort.InferenceSession.create(bytes);
      const h = 2;
      const w = 3;
      const input = Float32Array.from({ length: 3 * h * w }, (_, i) => i + 1);
      const { output } = await session.run({ input: new ort.Tensor('float32', input, [1, 3, h, w]) });
      await session.release();
      expect(output?.dims).toEqual([1, 3, h * 4, w * 4]);
      const data = output?.data as Float32Array;
      for (let c = 0; c < 3; c += 1) {
        for (let y = 0; y < h * 4; y += 1) {
          for (let x = 0; x < w * 4; x += 1) {
            const source = input[c * h * w + Math.floor(y / 4) * w + Math.floor(x / 4)] as number;
            const sub = (y % 2) * 2 + (x % 2);
            expect(data[(c * h * 4 + y) * w * 4 + x]).toBe(source * (1 + sub));
          }
        }
      }
    },
  );

  it.each([
    [
      'an unknown layer type',
      [
        {
          class_name: 'InputLayer',
          config: { name: 'in', batch_input_shape: [null, null, null, 3] },
          inbound_nodes: [],
        },
        { class_name: 'Dense', config: { name: 'd' }, inbound_nodes: [[['in', 0, 0, {}]]] },
      ],
      [],
      'Expected a supported layer type but layer d is Dense',
    ],
    [
      "a 3x3 'valid' convolution",
      [
        {
          class_name: 'InputLayer',
          config: { name: 'in', batch_input_shape: [null, null, null, 3] },
          inbound_nodes: [],
        },
        {
          class_name: 'Conv2D',
          config: {
            name: 'v',
            filters: 3,
            kernel_size: [3, 3],
            strides: [1, 1],
            padding: 'valid',
            activation: 'linear',
            use_bias: false,
          },
          inbound_nodes: [[['in', 0, 0, {}]]],
        },
      ],
      [{ name: 'v/kernel', shape: [3, 3, 3, 3] }],
      "Expected 'valid' padding only on 1x1 convolutions but layer v is 3x3",
    ],
    [
      'a strided convolution',
      [
        {
          class_name: 'InputLayer',
          config: { name: 'in', batch_input_shape: [null, null, null, 3] },
          inbound_nodes: [],
        },
        {
          class_name: 'Conv2D',
          config: {
            name: 's',
            filters: 3,
            kernel_size: [1, 1],
            strides: [2, 2],
            padding: 'same',
            activation: 'linear',
            use_bias: false,
          },
          inbound_nodes: [[['in', 0, 0, {}]]],
        },
      ],
      [{ name: 's/kernel', shape: [1, 1, 3, 3] }],
      'Expected a supported Conv2D config for layer s',
    ],
    [
      'a weight no layer uses',
      [
        {
          class_name: 'InputLayer',
          config: { name: 'in', batch_input_shape: [null, null, null, 3] },
          inbound_nodes: [],
        },
        { class_name: 'Activation', config: { name: 'a', activation: 'relu' }, inbound_nodes: [[['in', 0, 0, {}]]] },
      ],
      [{ name: 'stray/kernel', shape: [2] }],
      'Expected every weight to belong to a layer but stray/kernel do not',
    ],
  ])('refuses %s', (_what, layers, weights, message) => {
    expect(() => kerasToOnnx(tinyModel({ layers, weights }), options)).toThrow(TfjsModelFormatError);
    expect(() => kerasToOnnx(tinyModel({ layers, weights }), options)).toThrow(message);
  });

  it('refuses quantized weights', () => {
    const json = {
      format: 'layers-model',
      modelTopology: {
        model_config: {
          class_name: 'Functional',
          config: {
            name: 'q',
            layers: [{ class_name: 'InputLayer', config: { name: 'in' }, inbound_nodes: [] }],
            input_layers: [['in', 0, 0]],
            output_layers: [['in', 0, 0]],
          },
        },
      },
      weightsManifest: [
        { paths: ['w.bin'], weights: [{ name: 'k', shape: [1], dtype: 'float32', quantization: { dtype: 'uint8' } }] },
      ],
    };
    expect(() => parseTfjsLayersModel(json, [new Uint8Array(4)])).toThrow(
      'Expected unquantized float32 weights but k is float32 (quantized)',
    );
  });
});

describe('convertTfjsSource', () => {
  it('gives identical bytes when converting twice, matching the committed manifest', async () => {
    const source = await installedSource('slim', 2);
    const first = await convertTfjsSource('esrgan-slim-x2', source);
    const second = await convertTfjsSource('esrgan-slim-x2', source);
    expect(Buffer.from(second.bytes).equals(Buffer.from(first.bytes))).toBe(true);
    expect(first.sha256).toBe((await getManifest('esrgan-slim-x2')).sha256);
  });

  it.each(['esrgan-slim-x4', 'esrgan-medium-x2', 'esrgan-medium-x4', 'esrgan-thick-x2', 'esrgan-thick-x4'])(
    'reproduces the sha256 in the manifest of %s',
    async (name) => {
      const parsed = parseModelName(name);
      if (parsed === undefined) throw new Error(`Expected a model name but received ${name}`);
      const result = await convertTfjsSource(name, await installedSource(parsed.variant, parsed.scale));
      const manifest = await getManifest(name);
      expect(result.sha256).toBe(manifest.sha256);
      expect(result.params).toBe(manifest.params);
    },
  );

  it('declares the documented I/O contract: NCHW float32, dynamic batch, height and width, opset 17', async () => {
    const result = await convertTfjsSource('esrgan-thick-x2', await installedSource('thick', 2));
    const model = decodeModel(result.bytes);
    expect(model.opsetImport.map((o) => [o.domain, Number(o.version)])).toEqual([['', ONNX_OPSET]]);
    const graph = model.graph;
    if (graph === null || graph === undefined) throw new Error('Expected a graph in the converted model');
    const io = (values: typeof graph.input) =>
      (values ?? []).map((v) => [
        v.name,
        v.type?.tensorType?.shape?.dim?.map((d) => (d.dimParam ? d.dimParam : Number(d.dimValue))),
      ]);
    expect(io(graph.input)).toEqual([[INPUT_NAME, ['batch', 3, 'height', 'width']]]);
    expect(io(graph.output)).toEqual([[OUTPUT_NAME, ['batch', 3, 'out_height', 'out_width']]]);
    // thick works in 0-1; the 0-255 scaling is folded into the first and last convolutions.
    expect((graph.node ?? []).filter((n) => n.opType === 'Mul').map((n) => n.input?.[1])).toEqual(
      Array(40).fill('beta'),
    );

    const session = await ort.InferenceSession.create(result.bytes);
    const [n, h, w] = [2, 7, 5];
    const { output } = await session.run({
      input: new ort.Tensor('float32', new Float32Array(n * 3 * h * w).fill(128), [n, 3, h, w]),
    });
    await session.release();
    expect(output?.dims).toEqual([n, 3, h * 2, w * 2]);
    // A flat mid-grey image stays near mid-grey on the 0-255 scale (a lost 255 factor would not).
    const data = output?.data as Float32Array;
    expect(Math.abs((data[h * w * 2] as number) - 128)).toBeLessThan(16);
  });

  it('refuses a package version other than the one recorded', async () => {
    const source = { ...(await installedSource('slim', 2)), version: '0.0.1' };
    await expect(convertTfjsSource('esrgan-slim-x2', source)).rejects.toThrow(ModelSourceError);
    await expect(convertTfjsSource('esrgan-slim-x2', source)).rejects.toThrow(
      /Expected @upscalerjs\/esrgan-slim 0\.0\.1 for model esrgan-slim-x2 but 1\.0\.0 is installed/,
    );
  });
});
