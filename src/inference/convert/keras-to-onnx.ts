/**
 * Translates the Keras layers of an UpscalerJS ESRGAN model into an ONNX graph.
 *
 * Keras works in NHWC; the ONNX graph is NCHW throughout (ONNX Runtime's convolution kernels are
 * NCHW, so this avoids a transpose per layer). Layer by layer:
 *   Conv2D            -> Conv (kernel HWIO -> OIHW; 'same' as explicit pads, 'valid' none)
 *   Activation relu   -> Relu
 *   Concatenate (-1)  -> Concat on axis 1
 *   Add               -> Add
 *   MultiplyBeta      -> Mul by 0.2 (the UpscalerJS class ignores its config and uses 0.2)
 *   UpSampling2D      -> Resize nearest, asymmetric, floor (Keras repeats pixels); but when its
 *                        only reader is a Conv2D, the two become one Conv at the lower resolution
 *                        then DepthToSpace DCR (exact: upsample-conv.ts)
 *   PixelShuffleNx    -> DepthToSpace DCR (tf.depthToSpace NHWC reads channel (i*N + j)*C + c for
 *                        sub-pixel (i, j): exactly ONNX's DCR order)
 * An input or output scale (thick works in 0-1, the graph takes 0-255) is folded into the first and
 * last convolutions when they are the only consumers/producers, otherwise added as a Mul.
 */
import { z } from 'zod';
import {
  GraphParts,
  upsampledInput,
  type ConvertedGraph,
  type ConverterOptions,
  type FoldedUpsample,
  type TensorState,
} from './graph-walk.js';
import { node } from './onnx-builder.js';
import { TfjsModelFormatError, type KerasLayer, type TfjsLayersModel, type WeightTensor } from './tfjs-layers-model.js';
import { foldNearestUpsampleIntoConv, type ConvWeights } from './upsample-conv.js';

/** Names, range scales, metadata and folding: what both converters are told (graph-walk.ts). */
export type KerasToOnnxOptions = ConverterOptions;

const int = z.number().int();
const pair = z.tuple([int.positive(), int.positive()]);

const conv2dConfig = z.object({
  filters: int.positive(),
  kernel_size: pair,
  strides: z.tuple([z.literal(1), z.literal(1)]),
  padding: z.enum(['same', 'valid']),
  data_format: z.literal('channels_last').optional(),
  dilation_rate: z.tuple([z.literal(1), z.literal(1)]).optional(),
  groups: z.literal(1).optional(),
  activation: z.enum(['linear', 'relu']),
  use_bias: z.boolean(),
});

const activationConfig = z.object({ activation: z.enum(['linear', 'relu']) });
const concatConfig = z.object({ axis: z.union([z.literal(3), z.literal(-1)]) });
const upsamplingConfig = z.object({
  size: pair,
  interpolation: z.literal('nearest').optional(),
  data_format: z.literal('channels_last').optional(),
});
const multiplyBetaConfig = z.object({ beta: z.literal(0.2).optional() });
const pixelShuffleConfig = z.object({ scale: int.positive().optional() });
const inputLayerConfig = z.object({
  batch_input_shape: z.tuple([z.null(), z.null(), z.null(), int.positive()]),
  dtype: z.literal('float32').optional(),
});

/** UpscalerJS applies this factor whatever the layer's config says. */
const MULTIPLY_BETA = 0.2;

function layerConfig<T extends z.ZodType>(schema: T, layer: KerasLayer): z.infer<T> {
  const parsed = schema.safeParse(layer.config);
  if (!parsed.success) {
    throw new TfjsModelFormatError(
      `Expected a supported ${layer.className} config for layer ${layer.name} but ${z.prettifyError(parsed.error)}`,
    );
  }
  return parsed.data;
}

/** Keras HWIO [kh, kw, in, out] to ONNX OIHW [out, in, kh, kw], scaled on the way. */
export function hwioToOihw(kernel: WeightTensor, factor: number): Float32Array {
  const [kh, kw, cin, cout] = kernel.shape as [number, number, number, number];
  const out = new Float32Array(kernel.data.length);
  for (let h = 0; h < kh; h += 1) {
    for (let w = 0; w < kw; w += 1) {
      for (let i = 0; i < cin; i += 1) {
        const src = ((h * kw + w) * cin + i) * cout;
        for (let o = 0; o < cout; o += 1) {
          const value = kernel.data[src + o] as number;
          out[((o * cin + i) * kh + h) * kw + w] = factor === 1 ? value : value * factor;
        }
      }
    }
  }
  return out;
}

/** TF's 'same' padding for stride 1: the odd pixel, if any, goes after. */
export function samePads(kernelH: number, kernelW: number): [number, number, number, number] {
  const beginH = Math.floor((kernelH - 1) / 2);
  const beginW = Math.floor((kernelW - 1) / 2);
  return [beginH, beginW, kernelH - 1 - beginH, kernelW - 1 - beginW];
}

export function kerasToOnnx(source: TfjsLayersModel, options: KerasToOnnxOptions): ConvertedGraph {
  const graph = new GraphParts();
  const { nodes } = graph;
  const states = new Map<string, TensorState>();
  const usedWeights = new Set<string>();
  const folded = new Map<string, FoldedUpsample>();
  let params = 0;

  const consumers = new Map<string, KerasLayer[]>();
  for (const layer of source.layers) {
    for (const input of layer.inputs) consumers.set(input, [...(consumers.get(input) ?? []), layer]);
  }
  const inputConsumers = consumers.get(source.inputLayer) ?? [];
  const foldInputScale = options.inputScale !== 1 && inputConsumers.every((c) => c.className === 'Conv2D');
  const outputLayer = source.layers.find((l) => l.name === source.outputLayer);
  const foldOutputScale =
    options.outputScale !== 1 &&
    outputLayer?.className === 'Conv2D' &&
    (consumers.get(source.outputLayer) ?? []).length === 0 &&
    (options.outputScale > 0 || outputLayer.config['activation'] === 'linear');

  const weight = (layer: KerasLayer, kind: 'kernel' | 'bias'): WeightTensor => {
    const key = `${layer.name}/${kind}`;
    const found = source.weights.get(key);
    if (found === undefined)
      throw new TfjsModelFormatError(`Expected weight ${key} for layer ${layer.name} but the manifest has none`);
    usedWeights.add(key);
    params += found.data.length;
    return found;
  };

  const inputsOf = (layer: KerasLayer, count?: number): TensorState[] => {
    if (count !== undefined && layer.inputs.length !== count) {
      throw new TfjsModelFormatError(
        `Expected ${count} input(s) for layer ${layer.name} but received ${layer.inputs.length}`,
      );
    }
    if (layer.inputs.length === 0)
      throw new TfjsModelFormatError(`Expected inputs for layer ${layer.name} but received none`);
    return layer.inputs.map((name) => {
      const state = states.get(name);
      if (state === undefined) {
        throw new TfjsModelFormatError(`Expected layer ${name} to come before layer ${layer.name} that reads it`);
      }
      return state;
    });
  };

  const sameScale = (layer: KerasLayer, inputs: TensorState[]): number => {
    const scale = (inputs[0] as TensorState).scale;
    if (inputs.some((s) => s.scale !== scale)) {
      throw new TfjsModelFormatError(`Expected inputs of layer ${layer.name} to share one resolution`);
    }
    return scale;
  };

  /**
   * Whether the up-sampling can vanish into its reader: that reader must be its only one, a
   * convolution this converter accepts (stride and dilation 1; the schema refuses others), and
   * the up-sampled tensor must not also be the graph's output.
   */
  const foldsIntoConv = (layer: KerasLayer): boolean => {
    const readers = consumers.get(layer.name) ?? [];
    const [reader] = readers;
    return (
      options.foldUpsampling !== false &&
      layer.name !== source.outputLayer &&
      readers.length === 1 &&
      reader?.className === 'Conv2D' &&
      reader.inputs.length === 1 &&
      conv2dConfig.safeParse(reader.config).success
    );
  };

  let inputChannels = 0;
  for (const layer of source.layers) {
    switch (layer.className) {
      case 'InputLayer': {
        if (layer.name !== source.inputLayer) {
          throw new TfjsModelFormatError(
            `Expected one input layer (${source.inputLayer}) but ${layer.name} is another`,
          );
        }
        const config = layerConfig(inputLayerConfig, layer);
        inputChannels = config.batch_input_shape[3];
        states.set(layer.name, {
          onnxName: graph.input(options, foldInputScale),
          channels: inputChannels,
          scale: 1,
          radius: 0,
        });
        break;
      }
      case 'Conv2D': {
        const config = layerConfig(conv2dConfig, layer);
        const upsample = layer.inputs.length === 1 ? folded.get(layer.inputs[0] as string) : undefined;
        const [input] = upsample === undefined ? (inputsOf(layer, 1) as [TensorState]) : [upsampledInput(upsample)];
        const kernel = weight(layer, 'kernel');
        const [kh, kw] = config.kernel_size;
        const expectedShape = [kh, kw, input.channels, config.filters];
        if (kernel.shape.join() !== expectedShape.join()) {
          throw new TfjsModelFormatError(
            `Expected kernel of layer ${layer.name} to have shape [${expectedShape.join(', ')}] but received [${kernel.shape.join(', ')}]`,
          );
        }
        // A 'valid' convolution would shrink the image, which no tiled super-resolution can use.
        if (config.padding === 'valid' && (kh !== 1 || kw !== 1)) {
          throw new TfjsModelFormatError(
            `Expected 'valid' padding only on 1x1 convolutions but layer ${layer.name} is ${kh}x${kw}`,
          );
        }
        const isInputConv = foldInputScale && layer.inputs[0] === source.inputLayer;
        const isOutputConv = foldOutputScale && layer.name === source.outputLayer;
        const kernelFactor = (isInputConv ? options.inputScale : 1) * (isOutputConv ? options.outputScale : 1);
        let conv: ConvWeights = {
          kernel: hwioToOihw(kernel, kernelFactor),
          shape: [config.filters, input.channels, kh, kw],
          pads: config.padding === 'same' ? samePads(kh, kw) : [0, 0, 0, 0],
        };
        if (config.use_bias) {
          const bias = weight(layer, 'bias');
          if (bias.shape.join() !== String(config.filters)) {
            throw new TfjsModelFormatError(
              `Expected bias of layer ${layer.name} to have shape [${config.filters}] but received [${bias.shape.join(', ')}]`,
            );
          }
          const biasFactor = isOutputConv ? options.outputScale : 1;
          conv.bias = bias.data.map((v) => v * biasFactor);
        }
        if (upsample !== undefined) conv = foldNearestUpsampleIntoConv(conv, upsample.factor);
        const linearOut = config.activation === 'relu' ? `${layer.name}_linear` : layer.name;
        const convOut = upsample === undefined ? linearOut : `${layer.name}_phases`;
        graph.conv(layer.name, input.onnxName, conv, convOut);
        if (upsample !== undefined) {
          nodes.push(
            node('DepthToSpace', [convOut], [linearOut], `${layer.name}_depth_to_space`, {
              blocksize: upsample.factor,
              mode: 'DCR',
            }),
          );
        }
        if (config.activation === 'relu') nodes.push(node('Relu', [linearOut], [layer.name], `${layer.name}_relu`));
        const reach = Math.ceil(Math.max(kh - 1, kw - 1) / 2 / input.scale);
        states.set(layer.name, {
          onnxName: layer.name,
          channels: config.filters,
          scale: input.scale,
          radius: input.radius + reach,
        });
        break;
      }
      case 'Activation': {
        const config = layerConfig(activationConfig, layer);
        const [input] = inputsOf(layer, 1) as [TensorState];
        if (config.activation === 'linear') {
          states.set(layer.name, input);
        } else {
          nodes.push(node('Relu', [input.onnxName], [layer.name], layer.name));
          states.set(layer.name, { ...input, onnxName: layer.name });
        }
        break;
      }
      case 'Concatenate': {
        layerConfig(concatConfig, layer);
        const inputs = inputsOf(layer);
        const scale = sameScale(layer, inputs);
        nodes.push(
          node(
            'Concat',
            inputs.map((s) => s.onnxName),
            [layer.name],
            layer.name,
            { axis: 1 },
          ),
        );
        states.set(layer.name, {
          onnxName: layer.name,
          channels: inputs.reduce((sum, s) => sum + s.channels, 0),
          scale,
          radius: Math.max(...inputs.map((s) => s.radius)),
        });
        break;
      }
      case 'Add': {
        const inputs = inputsOf(layer);
        const scale = sameScale(layer, inputs);
        const first = inputs[0] as TensorState;
        if (inputs.length < 2 || inputs.some((s) => s.channels !== first.channels)) {
          throw new TfjsModelFormatError(`Expected two or more inputs with equal channels for layer ${layer.name}`);
        }
        let acc = first.onnxName;
        inputs.slice(1).forEach((s, i) => {
          const out = i === inputs.length - 2 ? layer.name : `${layer.name}_${i}`;
          nodes.push(node('Add', [acc, s.onnxName], [out], out));
          acc = out;
        });
        states.set(layer.name, {
          onnxName: layer.name,
          channels: first.channels,
          scale,
          radius: Math.max(...inputs.map((s) => s.radius)),
        });
        break;
      }
      case 'MultiplyBeta': {
        layerConfig(multiplyBetaConfig, layer);
        const [input] = inputsOf(layer, 1) as [TensorState];
        nodes.push(node('Mul', [input.onnxName, graph.scalar('beta', MULTIPLY_BETA)], [layer.name], layer.name));
        states.set(layer.name, { ...input, onnxName: layer.name });
        break;
      }
      case 'UpSampling2D': {
        const config = layerConfig(upsamplingConfig, layer);
        const [input] = inputsOf(layer, 1) as [TensorState];
        const [sh, sw] = config.size;
        if (sh !== sw)
          throw new TfjsModelFormatError(
            `Expected equal up-sampling on both axes for layer ${layer.name} but received ${sh}x${sw}`,
          );
        if (foldsIntoConv(layer)) {
          // No node: the reading convolution emits the up-sampling together with itself.
          folded.set(layer.name, { source: input, factor: sh });
          break;
        }
        graph.nearestResize(layer.name, input.onnxName, sh, layer.name);
        states.set(layer.name, { ...input, onnxName: layer.name, scale: input.scale * sh });
        break;
      }
      default: {
        const shuffle = /^PixelShuffle(\d+)x$/.exec(layer.className);
        if (shuffle === null) {
          throw new TfjsModelFormatError(
            `Expected a supported layer type but layer ${layer.name} is ${layer.className}`,
          );
        }
        const block = Number(shuffle[1]);
        const config = layerConfig(pixelShuffleConfig, layer);
        if (config.scale !== undefined && config.scale !== block) {
          throw new TfjsModelFormatError(
            `Expected scale ${block} in the config of layer ${layer.name} but received ${config.scale}`,
          );
        }
        const [input] = inputsOf(layer, 1) as [TensorState];
        if (input.channels % (block * block) !== 0) {
          throw new TfjsModelFormatError(
            `Expected channels of layer ${layer.name} to divide by ${block * block} but received ${input.channels}`,
          );
        }
        nodes.push(node('DepthToSpace', [input.onnxName], [layer.name], layer.name, { blocksize: block, mode: 'DCR' }));
        states.set(layer.name, {
          onnxName: layer.name,
          channels: input.channels / (block * block),
          scale: input.scale * block,
          radius: input.radius,
        });
      }
    }
  }

  const unused = [...source.weights.keys()].filter((key) => !usedWeights.has(key));
  if (unused.length > 0) {
    throw new TfjsModelFormatError(`Expected every weight to belong to a layer but ${unused.join(', ')} do not`);
  }
  const output = states.get(source.outputLayer);
  if (output === undefined || output.onnxName === options.inputName) {
    throw new TfjsModelFormatError(`Expected output layer ${source.outputLayer} to be computed by the graph`);
  }

  return graph.finish(options, { output, outputScaleFolded: foldOutputScale, inputChannels, params });
}
