/**
 * Translates an ncnn network (`.param` + `.bin`) into an ONNX graph, NCHW like ncnn itself (whose
 * blobs are CHW without the batch). The layers the Real-ESRGAN exports use:
 *   Input          -> the graph input (times the input scale)
 *   Convolution    -> Conv (OIHW kernel as stored, optional bias) + its fused activation
 *                     (ReLU, LeakyReLU, Sigmoid)
 *   Split          -> nothing: every output names the input tensor
 *   Concat         -> Concat on axis + 1
 *   Eltwise        -> Mul (product), Max, or a weighted Sum (a coefficient on a linear convolution
 *                     read only there is folded into that convolution's weights, else a Mul)
 *   BinaryOp       -> Add, Sub, Mul, Div of two blobs or of a blob and a scalar
 *   Interp nearest -> Resize nearest (asymmetric, floor); folded into the convolution that is its
 *                     only reader, like the TF.js converter does (exact: upsample-conv.ts)
 *   PReLU          -> PRelu (slopes [C,1,1])
 *   PixelShuffle   -> DepthToSpace (mode 0 is PyTorch's pixel_shuffle, ONNX CRD; mode 1 DCR)
 * Anything else, or a parameter this list does not cover, is refused with a message naming the layer.
 */
import {
  GraphParts,
  upsampledInput,
  type ConvertedGraph,
  type ConverterOptions,
  type FoldedUpsample,
  type TensorState,
} from './graph-walk.js';
import { NcnnWeightReader } from './ncnn-bin.js';
import { arrayParam, NcnnFormatError, scalarParam, type NcnnLayer, type NcnnParam } from './ncnn-param.js';
import { floatTensor, node } from './onnx-builder.js';
import { foldNearestUpsampleIntoConv, type ConvWeights } from './upsample-conv.js';

/** The options of both converters (names, range scales, metadata, folding: graph-walk.ts), plus what ncnn files do not say. */
export interface NcnnToOnnxOptions extends ConverterOptions {
  /** Channels of the network input (3 for RGB). */
  inputChannels: number;
}

export const SUPPORTED_NCNN_LAYERS = [
  'Input',
  'Convolution',
  'Split',
  'Concat',
  'Eltwise',
  'BinaryOp',
  'Interp',
  'PReLU',
  'PixelShuffle',
] as const;

const BINARY_OPS: Readonly<Record<number, string>> = { 0: 'Add', 1: 'Sub', 2: 'Mul', 3: 'Div' };

function unsupported(layer: NcnnLayer, what: string): NcnnFormatError {
  return new NcnnFormatError(`Unsupported ${what} in ncnn ${layer.type} layer ${layer.name}`);
}

/** ONNX pads [top, left, bottom, right] from ncnn's keys 4/14/15/16 (-233/-234: SAME). */
function convPads(layer: NcnnLayer, kh: number, kw: number): [number, number, number, number] {
  const left = scalarParam(layer, 4, 0);
  const top = scalarParam(layer, 14, left);
  const right = scalarParam(layer, 15, left);
  const bottom = scalarParam(layer, 16, top);
  if (left === -233 || left === -234) {
    // SAME_UPPER puts the odd pixel after, SAME_LOWER before; stride 1 only (checked by the caller).
    const upper = left === -233;
    const h = kh - 1;
    const w = kw - 1;
    const before = (n: number): number => (upper ? Math.floor(n / 2) : Math.ceil(n / 2));
    return [before(h), before(w), h - before(h), w - before(w)];
  }
  if (Math.min(left, top, right, bottom) < 0)
    throw unsupported(layer, `padding ${[left, top, right, bottom].join(',')}`);
  return [top, left, bottom, right];
}

export function ncnnToOnnx(param: NcnnParam, weights: Uint8Array, options: NcnnToOnnxOptions): ConvertedGraph {
  const graph = new GraphParts();
  const { nodes, initializers } = graph;
  const states = new Map<string, TensorState>();
  const folded = new Map<string, FoldedUpsample>();
  const reader = new NcnnWeightReader(weights);
  let params = 0;

  // Readers per blob, looking through Splits: what decides whether a scale or an upsampling folds.
  const readers = new Map<string, NcnnLayer[]>();
  const aliasOf = new Map<string, string>();
  const root = (blob: string): string => aliasOf.get(blob) ?? blob;
  for (const layer of param.layers) {
    if (layer.type === 'Split') for (const out of layer.outputs) aliasOf.set(out, root(layer.inputs[0] ?? ''));
    else for (const input of layer.inputs) readers.set(root(input), [...(readers.get(root(input)) ?? []), layer]);
  }
  const inputLayers = param.layers.filter((l) => l.type === 'Input');
  const producers = param.layers
    .filter((l) => l.type !== 'Split')
    .flatMap((l) => l.outputs.map((o) => [o, l] as const));
  const outputBlobs = producers.map(([blob]) => blob).filter((blob) => (readers.get(root(blob)) ?? []).length === 0);
  if (inputLayers.length !== 1 || outputBlobs.length !== 1) {
    throw new NcnnFormatError(
      `Expected one Input layer and one output blob but the network has ${inputLayers.length} and ${outputBlobs.length}`,
    );
  }
  const inputBlob = inputLayers[0]?.outputs[0] ?? '';
  const outputBlob = outputBlobs[0] as string;
  const outputProducer = producers.find(([blob]) => blob === outputBlob)?.[1];
  const foldInputScale =
    options.inputScale !== 1 && (readers.get(inputBlob) ?? []).every((l) => l.type === 'Convolution');
  const foldOutputScale =
    options.outputScale > 0 &&
    options.outputScale !== 1 &&
    outputProducer?.type === 'Convolution' &&
    scalarParam(outputProducer, 9, 0) === 0;

  /**
   * The Eltwise coefficient a linear convolution can carry in its weights: when its output's only
   * reader is a weighted sum, the weight of that input (recorded so the sum skips its Mul), else 1.
   */
  const appliedCoefficients = new Set<string>();
  const foldedCoefficient = (conv: NcnnLayer): number => {
    const blob = conv.outputs[0] ?? '';
    const [reader, ...others] = readers.get(root(blob)) ?? [];
    if (reader?.type !== 'Eltwise' || others.length > 0 || scalarParam(reader, 0, 1) !== 1) return 1;
    const index = reader.inputs.findIndex((input) => root(input) === root(blob));
    if (index < 0 || reader.inputs.filter((input) => root(input) === root(blob)).length > 1) return 1;
    const c = arrayParam(reader, 1)[index] ?? 1;
    if (c !== 1) appliedCoefficients.add(`${reader.name}\0${index}`);
    return c;
  };

  const stateOf = (layer: NcnnLayer, blob: string): TensorState => {
    const state = states.get(root(blob));
    if (state === undefined)
      throw new NcnnFormatError(`Expected blob ${blob} to be computed before ncnn layer ${layer.name} reads it`);
    return state;
  };
  const inputsOf = (layer: NcnnLayer, count?: number): TensorState[] => {
    if (count !== undefined && layer.inputs.length !== count) {
      throw new NcnnFormatError(
        `Expected ${count} input(s) for ncnn ${layer.type} layer ${layer.name} but received ${layer.inputs.length}`,
      );
    }
    return layer.inputs.map((blob) => stateOf(layer, blob));
  };
  const sameGrid = (layer: NcnnLayer, inputs: TensorState[]): Pick<TensorState, 'scale' | 'radius'> => {
    const scale = (inputs[0] as TensorState).scale;
    if (inputs.some((s) => s.scale !== scale))
      throw new NcnnFormatError(`Expected the inputs of ncnn layer ${layer.name} to share one resolution`);
    return { scale, radius: Math.max(...inputs.map((s) => s.radius)) };
  };
  // ONNX tensor names: the blob's, prefixed so that no blob (ncnn exports name theirs "output") clashes with the graph's own names.
  const out = (layer: NcnnLayer): string => {
    const [blob] = layer.outputs;
    if (layer.outputs.length !== 1 || blob === undefined)
      throw new NcnnFormatError(`Expected one output for ncnn ${layer.type} layer ${layer.name}`);
    return `blob_${blob}`;
  };
  const blobOf = (tensor: string): string => tensor.slice('blob_'.length);

  for (const layer of param.layers) {
    switch (layer.type) {
      case 'Input': {
        states.set(blobOf(out(layer)), {
          onnxName: graph.input(options, foldInputScale),
          channels: options.inputChannels,
          scale: 1,
          radius: 0,
        });
        break;
      }
      case 'Split':
        inputsOf(layer, 1);
        break;
      case 'Convolution': {
        const blob = root(layer.inputs[0] ?? '');
        const upsample = layer.inputs.length === 1 ? folded.get(blob) : undefined;
        const input = upsample === undefined ? (inputsOf(layer, 1)[0] as TensorState) : upsampledInput(upsample);
        const cout = scalarParam(layer, 0, 0);
        const kw = scalarParam(layer, 1, 0);
        const kh = scalarParam(layer, 11, kw);
        const dilation = [scalarParam(layer, 2, 1), scalarParam(layer, 12, scalarParam(layer, 2, 1))];
        const stride = [scalarParam(layer, 3, 1), scalarParam(layer, 13, scalarParam(layer, 3, 1))];
        const biasTerm = scalarParam(layer, 5, 0);
        const size = scalarParam(layer, 6, 0);
        const activation = scalarParam(layer, 9, 0);
        if (dilation.some((d) => d !== 1) || stride.some((s) => s !== 1))
          throw unsupported(layer, 'stride or dilation other than 1');
        if (scalarParam(layer, 8, 0) !== 0) throw unsupported(layer, 'int8 quantisation');
        if (scalarParam(layer, 18, 0) !== 0) throw unsupported(layer, 'non-zero pad value');
        if (cout <= 0 || kw <= 0 || size !== cout * input.channels * kh * kw) {
          throw new NcnnFormatError(
            `Expected weight_data_size ${cout * input.channels * kh * kw} (${cout}x${input.channels}x${kh}x${kw}) in ncnn layer ${layer.name} but it says ${size}`,
          );
        }
        const isInputConv = foldInputScale && blob === inputBlob;
        const isOutputConv = foldOutputScale && layer === outputProducer;
        const coefficient = activation === 0 ? foldedCoefficient(layer) : 1;
        const factor = (isInputConv ? options.inputScale : 1) * (isOutputConv ? options.outputScale : 1) * coefficient;
        const kernel = reader.tagged(size, `the kernel of ${layer.name}`);
        if (factor !== 1) for (let i = 0; i < kernel.length; i += 1) kernel[i] = (kernel[i] as number) * factor;
        let conv: ConvWeights = { kernel, shape: [cout, input.channels, kh, kw], pads: convPads(layer, kh, kw) };
        params += size;
        if (biasTerm !== 0) {
          const bias = reader.raw(cout, `the bias of ${layer.name}`);
          const biasFactor = (isOutputConv ? options.outputScale : 1) * coefficient;
          if (biasFactor !== 1) for (let i = 0; i < bias.length; i += 1) bias[i] = (bias[i] as number) * biasFactor;
          conv.bias = bias;
          params += cout;
        }
        if (upsample !== undefined) conv = foldNearestUpsampleIntoConv(conv, upsample.factor);
        const name = out(layer);
        const convOut = activation === 0 && upsample === undefined ? name : `${name}_conv`;
        graph.conv(layer.name, input.onnxName, conv, convOut);
        // Activations are pointwise, so they commute with DepthToSpace: applied at the low resolution.
        const activated = upsample === undefined ? name : `${name}_phases`;
        if (activation === 1) nodes.push(node('Relu', [convOut], [activated], `${layer.name}_relu`));
        else if (activation === 2) {
          const [slope = 0] = arrayParam(layer, 10);
          nodes.push(
            node('LeakyRelu', [convOut], [activated], `${layer.name}_leaky_relu`, { alpha: { float: slope } }),
          );
        } else if (activation === 4) nodes.push(node('Sigmoid', [convOut], [activated], `${layer.name}_sigmoid`));
        else if (activation !== 0) throw unsupported(layer, `activation type ${activation}`);
        if (upsample !== undefined) {
          const phases = activation === 0 ? convOut : activated;
          nodes.push(
            node('DepthToSpace', [phases], [name], `${layer.name}_depth_to_space`, {
              blocksize: upsample.factor,
              mode: 'DCR',
            }),
          );
        }
        const reach = Math.max(kh - 1, kw - 1) / 2 / input.scale;
        states.set(blobOf(name), { onnxName: name, channels: cout, scale: input.scale, radius: input.radius + reach });
        break;
      }
      case 'Concat': {
        const inputs = inputsOf(layer);
        const axis = scalarParam(layer, 0, 0);
        if (axis !== 0) throw unsupported(layer, `axis ${axis} (only channels)`);
        const name = out(layer);
        nodes.push(
          node(
            'Concat',
            inputs.map((s) => s.onnxName),
            [name],
            layer.name,
            { axis: 1 },
          ),
        );
        states.set(blobOf(name), {
          onnxName: name,
          channels: inputs.reduce((sum, s) => sum + s.channels, 0),
          ...sameGrid(layer, inputs),
        });
        break;
      }
      case 'Eltwise': {
        const inputs = inputsOf(layer);
        const op = scalarParam(layer, 0, 1);
        const coeffs = arrayParam(layer, 1);
        const name = out(layer);
        const first = inputs[0] as TensorState;
        if (inputs.length < 2 || inputs.some((s) => s.channels !== first.channels)) {
          throw new NcnnFormatError(
            `Expected two or more inputs with equal channels for ncnn Eltwise layer ${layer.name}`,
          );
        }
        if (op !== 1 && coeffs.length > 0) throw unsupported(layer, 'coefficients on a product or maximum');
        const terms = inputs.map((s, i) => {
          const c = coeffs[i] ?? 1;
          if (op !== 1 || c === 1 || appliedCoefficients.has(`${layer.name}\0${i}`)) return s.onnxName;
          nodes.push(
            node(
              'Mul',
              [s.onnxName, graph.scalar(`${layer.name}.coeff${i}`, c)],
              [`${name}_term${i}`],
              `${layer.name}_coeff${i}`,
            ),
          );
          return `${name}_term${i}`;
        });
        const opType = op === 0 ? 'Mul' : op === 1 ? 'Add' : op === 2 ? 'Max' : undefined;
        if (opType === undefined) throw unsupported(layer, `operation ${op}`);
        let acc = terms[0] as string;
        terms.slice(1).forEach((term, i) => {
          const target = i === terms.length - 2 ? name : `${name}_${i}`;
          nodes.push(node(opType, [acc, term], [target], `${layer.name}_${i}`));
          acc = target;
        });
        states.set(blobOf(name), { onnxName: name, channels: first.channels, ...sameGrid(layer, inputs) });
        break;
      }
      case 'BinaryOp': {
        const opType = BINARY_OPS[scalarParam(layer, 0, 0)];
        if (opType === undefined) throw unsupported(layer, `operation ${scalarParam(layer, 0, 0)}`);
        const withScalar = scalarParam(layer, 1, 0) !== 0;
        const inputs = inputsOf(layer, withScalar ? 1 : 2);
        const name = out(layer);
        const operands = inputs.map((s) => s.onnxName);
        if (withScalar) operands.push(graph.scalar(`${layer.name}.b`, scalarParam(layer, 2, 0)));
        else if ((inputs[0] as TensorState).channels !== (inputs[1] as TensorState).channels) {
          throw unsupported(layer, 'broadcast between different channel counts');
        }
        nodes.push(node(opType, operands, [name], layer.name));
        states.set(blobOf(name), {
          onnxName: name,
          channels: (inputs[0] as TensorState).channels,
          ...sameGrid(layer, inputs),
        });
        break;
      }
      case 'Interp': {
        const [input] = inputsOf(layer, 1) as [TensorState];
        const mode = scalarParam(layer, 0, 0);
        const sh = scalarParam(layer, 1, 1);
        const sw = scalarParam(layer, 2, 1);
        if (mode !== 1) throw unsupported(layer, `resize type ${mode} (only nearest)`);
        if (
          sh !== sw ||
          !Number.isInteger(sh) ||
          sh < 1 ||
          scalarParam(layer, 3, 0) !== 0 ||
          scalarParam(layer, 4, 0) !== 0
        ) {
          throw unsupported(layer, 'size (only equal integer scales)');
        }
        const name = out(layer);
        const [reader0, ...others] = readers.get(root(blobOf(name))) ?? [];
        if (
          options.foldUpsampling !== false &&
          others.length === 0 &&
          reader0?.type === 'Convolution' &&
          blobOf(name) !== outputBlob
        ) {
          // No node: the reading convolution computes the up-sampling together with itself.
          folded.set(blobOf(name), { source: input, factor: sh });
          break;
        }
        graph.nearestResize(layer.name, input.onnxName, sh, name);
        states.set(blobOf(name), { ...input, onnxName: name, scale: input.scale * sh });
        break;
      }
      case 'PReLU': {
        const [input] = inputsOf(layer, 1) as [TensorState];
        const count = scalarParam(layer, 0, 0);
        if (count !== 1 && count !== input.channels)
          throw unsupported(layer, `slope count ${count} for ${input.channels} channels`);
        const slopes = reader.raw(count, `the slopes of ${layer.name}`);
        params += count;
        const name = out(layer);
        initializers.push(floatTensor(`${layer.name}.slope`, count === 1 ? [] : [count, 1, 1], slopes));
        nodes.push(node('PRelu', [input.onnxName, `${layer.name}.slope`], [name], layer.name));
        states.set(blobOf(name), { ...input, onnxName: name });
        break;
      }
      case 'PixelShuffle': {
        const [input] = inputsOf(layer, 1) as [TensorState];
        const block = scalarParam(layer, 0, 1);
        const mode = scalarParam(layer, 1, 0);
        if (mode !== 0 && mode !== 1) throw unsupported(layer, `mode ${mode}`);
        if (input.channels % (block * block) !== 0)
          throw unsupported(layer, `${input.channels} channels for block ${block}`);
        const name = out(layer);
        nodes.push(
          node('DepthToSpace', [input.onnxName], [name], layer.name, {
            blocksize: block,
            mode: mode === 0 ? 'CRD' : 'DCR',
          }),
        );
        states.set(blobOf(name), {
          onnxName: name,
          channels: input.channels / (block * block),
          scale: input.scale * block,
          radius: input.radius,
        });
        break;
      }
      default:
        throw new NcnnFormatError(
          `Unsupported ncnn layer type ${layer.type} (layer ${layer.name}); supported: ${SUPPORTED_NCNN_LAYERS.join(', ')}`,
        );
    }
  }
  reader.end();

  const output = states.get(root(outputBlob));
  if (output === undefined) throw new NcnnFormatError(`Expected output blob ${outputBlob} to be computed`);
  return graph.finish(options, {
    output,
    outputScaleFolded: foldOutputScale,
    inputChannels: options.inputChannels,
    params,
  });
}
