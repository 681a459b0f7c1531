/**
 * The int8 variant of a float32 graph, for CPU hosts: ONNX Runtime's QDQ format, written here
 * rather than by its Python tool so that `models prepare` makes it from the verified float32 file
 * alone. Each convolution that is quantized reads its input through QuantizeLinear/DequantizeLinear
 * (uint8, asymmetric, the calibrated range), its weights through DequantizeLinear (int8, symmetric,
 * per output channel), its bias as int32 at the product of both scales, and its output goes through
 * a Q/DQ pair too: the pattern ONNX Runtime fuses into one int8 convolution (QLinearConv). The
 * ranges come from a calibration file committed beside the manifest (scripts/calibrate-int8.ts),
 * so the conversion itself needs no inference and is deterministic: the same graph and ranges give
 * the same bytes (the manifest pins them by sha256). Convolutions named in `keepFloat` stay float32.
 */
import onnxProto from 'onnx-proto';
import { z } from 'zod';
import {
  decodeModel,
  encodeModel,
  floatTensor,
  floatTensorValues,
  node,
  type OnnxModel,
  type OnnxNode,
  type OnnxTensor,
} from './onnx-builder.js';

const { DataType } = onnxProto.onnx.TensorProto;

const modelName = z.string().regex(/^[a-z0-9][a-z0-9.-]*$/);

/** What a calibration run measured, and which convolutions it leaves in float32. */
export const int8CalibrationSchema = z.object({
  schemaVersion: z.literal(1),
  /** The float32 network the ranges were measured on, and its file's sha256. */
  of: modelName,
  ofSha256: z.string().regex(/^[0-9a-f]{64}$/),
  /** How each range was taken from the activations (e.g. `minmax`, `percentile 99.999`). */
  method: z.string().min(1),
  /** The images and frames the activations were measured on. */
  inputs: z.array(z.string().min(1)).min(1),
  /** Convolution nodes left in float32 (the most sensitive ones, chosen by the calibration). */
  keepFloat: z.array(z.string().min(1)),
  /** Tensor name to [low, high], for the input and output of every quantized convolution. */
  ranges: z.record(
    z.string().min(1),
    z.tuple([z.number(), z.number()]).refine(([low, high]) => low <= high, 'Expected low <= high'),
  ),
  /**
   * Per quantized convolution, per output channel: the mean by which the int8 graph's output
   * exceeded the float32 graph's on the calibration crops, taken off the bias (empirical bias
   * correction: quantization error that does not average out is mostly a per-channel shift).
   */
  biasCorrection: z.record(z.string().min(1), z.array(z.number())).optional(),
  /**
   * Cross-layer equalization, applied to the float32 graph before anything else: per convolution,
   * a positive factor per output channel that multiplies that channel (weights and bias) and divides
   * the matching input channel of the convolution that reads it through a PReLU (PReLU(s x) =
   * s PReLU(x) for s > 0), so the function is unchanged while the channels' activation ranges, which
   * one per-tensor uint8 scale must cover, come closer together. The ranges are the equalized graph's.
   */
  equalization: z.record(z.string().min(1), z.array(z.number().positive())).optional(),
});
export type Int8Calibration = z.infer<typeof int8CalibrationSchema>;

/** Round half to even, as ONNX's QuantizeLinear does. */
export function roundHalfEven(value: number): number {
  const floor = Math.floor(value);
  const rest = value - floor;
  if (rest > 0.5) return floor + 1;
  if (rest < 0.5) return floor;
  return floor % 2 === 0 ? floor : floor + 1;
}

/** uint8 scale and zero point of an activation range; the range always holds 0 (exact zero padding). */
export function activationQuantization(low: number, high: number): { scale: number; zeroPoint: number } {
  const min = Math.min(low, 0);
  const max = Math.max(high, 0);
  if (max === min) return { scale: 1, zeroPoint: 0 };
  const scale = Math.fround((max - min) / 255);
  const zeroPoint = Math.min(255, Math.max(0, roundHalfEven(-min / scale)));
  return { scale, zeroPoint };
}

/** int8 weights, symmetric per output channel (axis 0) in [-127, 127], and their scales. */
export function quantizeWeights(weights: Float32Array, channels: number): { values: Int8Array; scales: Float32Array } {
  const per = weights.length / channels;
  if (!Number.isInteger(per))
    throw new RangeError(`Expected ${weights.length} weights to split into ${channels} channels`);
  const values = new Int8Array(weights.length);
  const scales = new Float32Array(channels);
  for (let c = 0; c < channels; c += 1) {
    let peak = 0;
    for (let i = c * per; i < (c + 1) * per; i += 1) peak = Math.max(peak, Math.abs(weights[i] as number));
    const scale = peak === 0 ? 1 : Math.fround(peak / 127);
    scales[c] = scale;
    for (let i = c * per; i < (c + 1) * per; i += 1) {
      values[i] = Math.min(127, Math.max(-127, roundHalfEven((weights[i] as number) / scale)));
    }
  }
  return { values, scales };
}

function rawTensor(
  name: string,
  dims: readonly number[],
  dataType: number,
  bytesPer: number,
  write: (view: DataView, i: number) => void,
  length: number,
): OnnxTensor {
  const raw = new Uint8Array(length * bytesPer);
  const view = new DataView(raw.buffer);
  for (let i = 0; i < length; i += 1) write(view, i);
  return { name, dims: [...dims], dataType, rawData: raw };
}

const int8Tensor = (name: string, dims: readonly number[], data: Int8Array): OnnxTensor =>
  rawTensor(name, dims, DataType.INT8, 1, (v, i) => v.setInt8(i, data[i] as number), data.length);
const uint8Tensor = (name: string, dims: readonly number[], data: Uint8Array): OnnxTensor =>
  rawTensor(name, dims, DataType.UINT8, 1, (v, i) => v.setUint8(i, data[i] as number), data.length);
const int32Tensor = (name: string, dims: readonly number[], data: Int32Array): OnnxTensor =>
  rawTensor(name, dims, DataType.INT32, 4, (v, i) => v.setInt32(i * 4, data[i] as number, true), data.length);

/** The convolutions a calibration quantizes: every Conv with initializer weights not kept in float32. */
export function quantizableConvs(model: OnnxModel, keepFloat: readonly string[] = []): OnnxNode[] {
  const initializers = new Set((model.graph?.initializer ?? []).map((t) => t.name));
  const kept = new Set(keepFloat);
  return (model.graph?.node ?? []).filter(
    (n) =>
      n.opType === 'Conv' &&
      !kept.has(n.name ?? '') &&
      initializers.has(n.input?.[1] ?? '') &&
      (n.input?.[2] === undefined || initializers.has(n.input[2] ?? '')),
  );
}

/** The activation tensors whose ranges the int8 graph needs: each quantized convolution's input and output. */
export function calibratedTensors(model: OnnxModel, keepFloat: readonly string[] = []): string[] {
  const names = new Set<string>();
  for (const conv of quantizableConvs(model, keepFloat)) {
    names.add(conv.input?.[0] ?? '');
    names.add(conv.output?.[0] ?? '');
  }
  return [...names];
}

/** A float32 initializer with each value replaced by `f(value, index)`. */
function mapFloats(tensor: OnnxTensor, f: (value: number, index: number) => number): OnnxTensor {
  const values = floatTensorValues(tensor).map(f);
  return floatTensor(tensor.name ?? '', (tensor.dims ?? []).map(Number), values);
}

/**
 * The same function with the channels of each named convolution scaled (the calibration's
 * `equalization`): that convolution's output channel c times s[c], the next convolution's input
 * channel c divided by it. The path between them must be one PReLU read by nothing else.
 */
/** The convolution that reads `conv` through one PReLU, where nothing else (no node, no graph output) reads either. */
function equalizationPartner(model: OnnxModel, conv: OnnxNode): OnnxNode | undefined {
  const graph = model.graph ?? {};
  const outputs = new Set((graph.output ?? []).map((o) => o.name ?? ''));
  const readers = (tensor: string) =>
    outputs.has(tensor) ? [] : (graph.node ?? []).filter((n) => (n.input ?? []).includes(tensor));
  const prelu = readers(conv.output?.[0] ?? '');
  const next = prelu.length === 1 && prelu[0]?.opType === 'PRelu' ? readers(prelu[0].output?.[0] ?? '') : [];
  return next.length === 1 && next[0]?.opType === 'Conv' && next[0].input?.[0] === prelu[0]?.output?.[0]
    ? next[0]
    : undefined;
}

/** The convolutions equalizeChannels can scale. */
export function equalizableConvs(model: OnnxModel): string[] {
  return (model.graph?.node ?? [])
    .filter((n) => n.opType === 'Conv' && equalizationPartner(model, n) !== undefined)
    .map((n) => n.name ?? '');
}

export function equalizeChannels(model: OnnxModel, scales: Readonly<Record<string, readonly number[]>>): OnnxModel {
  const graph = model.graph ?? {};
  const nodes = graph.node ?? [];
  const replaced = new Map<string, OnnxTensor>();
  const initializer = (name: string): OnnxTensor => {
    const tensor = replaced.get(name) ?? (graph.initializer ?? []).find((t) => t.name === name);
    if (tensor === undefined) throw new RangeError(`Expected an initializer named ${name} to equalize`);
    return tensor;
  };
  for (const [convName, factors] of Object.entries(scales)) {
    const conv = nodes.find((n) => n.name === convName && n.opType === 'Conv');
    const next = conv === undefined ? undefined : equalizationPartner(model, conv);
    if (conv === undefined || next === undefined) {
      throw new RangeError(
        `Expected ${convName} to be a convolution read by one PReLU that one convolution reads, to equalize its channels`,
      );
    }
    const [, w = '', b] = conv.input ?? [];
    const weight = initializer(w);
    const [channels = 0, ...rest] = (weight.dims ?? []).map(Number);
    if (factors.length !== channels)
      throw new RangeError(`Expected ${channels} equalization factors for ${convName} but received ${factors.length}`);
    const per = rest.reduce((a, d) => a * d, 1);
    replaced.set(
      w,
      mapFloats(weight, (v, i) => v * (factors[Math.floor(i / per)] as number)),
    );
    if (b !== undefined && b !== '')
      replaced.set(
        b,
        mapFloats(initializer(b), (v, i) => v * (factors[i] as number)),
      );
    const nextWeight = next.input?.[1] ?? '';
    const nextDims = (initializer(nextWeight).dims ?? []).map(Number);
    const kernel = (nextDims[2] ?? 1) * (nextDims[3] ?? 1);
    const inputs = nextDims[1] ?? 0;
    if (inputs !== channels)
      throw new RangeError(`Expected ${next.name} to read ${channels} channels but it reads ${inputs}`);
    replaced.set(
      nextWeight,
      mapFloats(initializer(nextWeight), (v, i) => v / (factors[Math.floor(i / kernel) % inputs] as number)),
    );
  }
  return {
    ...model,
    graph: { ...graph, initializer: (graph.initializer ?? []).map((t) => replaced.get(t.name ?? '') ?? t) },
  };
}

/** The QDQ int8 graph of a float32 graph with the calibration's ranges (see the module comment). */
export function toInt8(float32: OnnxModel, calibration: Int8Calibration): OnnxModel {
  const model = calibration.equalization === undefined ? float32 : equalizeChannels(float32, calibration.equalization);
  const graph = model.graph;
  if (graph === null || graph === undefined) throw new RangeError('Expected a model with a graph to quantize');
  const opset = Number((model.opsetImport ?? []).find((o) => (o.domain ?? '') === '')?.version ?? 0);
  // Per-channel DequantizeLinear (the weights) needs opset 13.
  if (opset < 13) throw new RangeError(`Expected a graph of opset 13 or later to quantize but it is of opset ${opset}`);
  const convs = quantizableConvs(model, calibration.keepFloat);
  const unknownKept = calibration.keepFloat.filter(
    (name) => !(graph.node ?? []).some((n) => n.name === name && n.opType === 'Conv'),
  );
  if (unknownKept.length > 0)
    throw new RangeError(`Expected convolution names in keepFloat but the graph has no ${unknownKept.join(', ')}`);
  const initializers = new Map((graph.initializer ?? []).map((t) => [t.name ?? '', t]));
  const taken = new Set<string>([
    ...initializers.keys(),
    ...(graph.node ?? []).flatMap((n) => [...(n.input ?? []), ...(n.output ?? [])]),
  ]);
  const fresh = (name: string): string => {
    if (taken.has(name)) throw new RangeError(`Expected no tensor named ${name} in the graph before quantizing it`);
    taken.add(name);
    return name;
  };

  const added: OnnxTensor[] = [];
  const weightNodes: OnnxNode[] = [];
  /** Activation tensor -> its dequantized twin, and the Q/DQ nodes to insert after its producer. */
  const dequantized = new Map<string, string>();
  const pairsAfter = new Map<string, OnnxNode[]>();
  const activationScale = new Map<string, number>();
  const quantizeActivation = (tensor: string): string => {
    const existing = dequantized.get(tensor);
    if (existing !== undefined) return existing;
    const range = calibration.ranges[tensor];
    if (range === undefined)
      throw new RangeError(
        `Expected a calibrated range for tensor ${tensor} but the calibration of ${calibration.of} has none`,
      );
    const { scale, zeroPoint } = activationQuantization(range[0], range[1]);
    const scaleName = fresh(`${tensor}.qscale`);
    const zeroName = fresh(`${tensor}.qzero`);
    const q = fresh(`${tensor}.q`);
    const dq = fresh(`${tensor}.dq`);
    added.push(floatTensor(scaleName, [], Float32Array.of(scale)), uint8Tensor(zeroName, [], Uint8Array.of(zeroPoint)));
    pairsAfter.set(tensor, [
      node('QuantizeLinear', [tensor, scaleName, zeroName], [q], `${tensor}.quantize`),
      node('DequantizeLinear', [q, scaleName, zeroName], [dq], `${tensor}.dequantize`),
    ]);
    dequantized.set(tensor, dq);
    activationScale.set(tensor, scale);
    return dq;
  };

  const replacedInitializers = new Set<string>();
  const convInputs = new Map<OnnxNode, string[]>();
  const produced = new Set([
    ...(graph.input ?? []).map((i) => i.name ?? ''),
    ...(graph.node ?? []).flatMap((n) => n.output ?? []),
  ]);
  for (const conv of convs) {
    const [x = '', w = '', b] = conv.input ?? [];
    if (!produced.has(x))
      throw new RangeError(
        `Expected ${conv.name}'s input ${x} to come from a node or the graph's input to quantize it`,
      );
    const y = conv.output?.[0] ?? '';
    const xdq = quantizeActivation(x);
    // The output's Q/DQ pair too: without it ONNX Runtime runs no int8 kernel (x4fast: 1.1x slower than float32, not 2x faster).
    quantizeActivation(y);
    const weight = initializers.get(w) as OnnxTensor;
    const dims = (weight.dims ?? []).map(Number);
    const channels = dims[0] ?? 0;
    const { values, scales } = quantizeWeights(floatTensorValues(weight), channels);
    const wq = fresh(`${w}.q`);
    const wScale = fresh(`${w}.qscale`);
    const wZero = fresh(`${w}.qzero`);
    const wdq = fresh(`${w}.dq`);
    added.push(
      int8Tensor(wq, dims, values),
      floatTensor(wScale, [channels], scales),
      int8Tensor(wZero, [channels], new Int8Array(channels)),
    );
    weightNodes.push(node('DequantizeLinear', [wq, wScale, wZero], [wdq], `${w}.dequantize`, { axis: 0 }));
    replacedInitializers.add(w);
    const inputs = [xdq, wdq];
    if (b !== undefined && b !== '') {
      const correction = calibration.biasCorrection?.[conv.name ?? ''];
      if (correction !== undefined && correction.length !== channels)
        throw new RangeError(
          `Expected ${channels} bias corrections for ${conv.name} but received ${correction.length}`,
        );
      const bias = floatTensorValues(initializers.get(b) as OnnxTensor).map((v, i) => v - (correction?.[i] ?? 0));
      const xScale = activationScale.get(x) as number;
      const bScales = Float32Array.from(scales, (s) => Math.fround(xScale * s));
      const bValues = Int32Array.from(bias, (v, i) => {
        const q = roundHalfEven(v / (bScales[i] as number));
        // Int32Array would wrap silently: a bias this large against its scales is a calibration to redo.
        if (Math.abs(q) > 2 ** 31 - 1)
          throw new RangeError(`Expected ${b}[${i}] to fit int32 at its scale but it is ${q}`);
        return q;
      });
      const bq = fresh(`${b}.q`);
      const bScale = fresh(`${b}.qscale`);
      const bZero = fresh(`${b}.qzero`);
      const bdq = fresh(`${b}.dq`);
      added.push(
        int32Tensor(bq, [channels], bValues),
        floatTensor(bScale, [channels], bScales),
        int32Tensor(bZero, [channels], new Int32Array(channels)),
      );
      weightNodes.push(node('DequantizeLinear', [bq, bScale, bZero], [bdq], `${b}.dequantize`, { axis: 0 }));
      replacedInitializers.add(b);
      inputs.push(bdq);
    }
    convInputs.set(conv, inputs);
  }

  const graphOutputs = new Set((graph.output ?? []).map((o) => o.name ?? ''));
  const readsDequantized = (n: OnnxNode): OnnxNode => {
    const own = convInputs.get(n);
    if (own !== undefined) return { ...n, input: own };
    return { ...n, input: (n.input ?? []).map((name) => dequantized.get(name) ?? name) };
  };
  const nodes: OnnxNode[] = [...weightNodes];
  for (const tensor of (graph.input ?? []).map((i) => i.name ?? '')) nodes.push(...(pairsAfter.get(tensor) ?? []));
  for (const n of graph.node ?? []) {
    nodes.push(readsDequantized(n));
    for (const out of n.output ?? []) nodes.push(...(pairsAfter.get(out) ?? []));
  }
  for (const name of graphOutputs) {
    if (dequantized.has(name))
      throw new RangeError(`Expected no graph output (${name}) among the quantized convolutions' tensors`);
  }
  const stillRead = new Set(nodes.flatMap((n) => n.input ?? []));
  return {
    ...model,
    metadataProps: [
      ...(model.metadataProps ?? []),
      {
        key: 'int8',
        value: `QDQ from ${calibration.of} sha256:${calibration.ofSha256}; ${calibration.method}; ${convs.length} convolutions int8, ${calibration.keepFloat.length} float32`,
      },
    ],
    graph: {
      ...graph,
      node: nodes,
      initializer: [
        ...(graph.initializer ?? []).filter(
          (t) => !replacedInitializers.has(t.name ?? '') || stillRead.has(t.name ?? ''),
        ),
        ...added,
      ],
    },
  };
}

/** The int8 variant's file from the float32 file's bytes and the calibration. */
export function int8Bytes(float32: Uint8Array, calibration: Int8Calibration): Uint8Array {
  return encodeModel(toInt8(decodeModel(float32), calibration));
}

/** The name of a network's int8 variant, and of its calibration file (under the manifests' folder, not among them). */
export function int8Name(name: string): string {
  return `${name}-int8`;
}
export function int8CalibrationFile(name: string): string {
  return `calibration/${int8Name(name)}.json`;
}
