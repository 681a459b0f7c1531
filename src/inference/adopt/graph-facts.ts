/**
 * What an ONNX file says about itself, read from the protobuf alone (no runtime): its image input
 * and output, their element types and axes, the opset, the parameter count and the operators. The
 * checks a super-resolution network must pass before anything runs are here too, each refusal one
 * line that names what is wrong. Pure.
 */
import onnxProto from 'onnx-proto';
import { decodeModel } from '../convert/onnx-builder.js';

/** A network the registry cannot take, and why, in one line. */
export class AdoptError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'AdoptError';
  }
}

/** ONNX TensorProto.DataType names of the element types an exported network may declare. */
const ELEMENT_TYPES: Readonly<Record<number, string>> = {
  1: 'float32',
  2: 'uint8',
  3: 'int8',
  6: 'int32',
  7: 'int64',
  10: 'float16',
  11: 'float64',
  16: 'bfloat16',
};

/** One axis: a fixed length, or a free one with the exporter's name for it. */
export type Axis = { fixed: number } | { free: string };

export interface TensorFacts {
  name: string;
  elementType: string;
  axes: Axis[];
}

export interface GraphFacts {
  input: TensorFacts;
  output: TensorFacts;
  opset: number;
  params: number;
  /** Operator counts, most used first. */
  operators: Array<[string, number]>;
  /** Initializers stored in float16 (weights of a half-precision graph). */
  float16Weights: boolean;
}

type ValueInfo = onnxProto.onnx.IValueInfoProto;

function tensorFacts(info: ValueInfo): TensorFacts {
  const tensor = info.type?.tensorType;
  const elementType = ELEMENT_TYPES[tensor?.elemType ?? 0] ?? `type ${tensor?.elemType ?? 'unknown'}`;
  const axes: Axis[] = (tensor?.shape?.dim ?? []).map((d) => {
    const length = d.dimValue === undefined || d.dimValue === null ? 0 : Number(d.dimValue);
    return length > 0 ? { fixed: length } : { free: d.dimParam ?? '?' };
  });
  return { name: info.name ?? '', elementType, axes };
}

export function describeAxes(axes: readonly Axis[]): string {
  return `[${axes.map((a) => ('fixed' in a ? String(a.fixed) : a.free || '?')).join(', ')}]`;
}

/** Reads the graph; a file that is not an ONNX model is refused. */
export function readGraphFacts(bytes: Uint8Array): GraphFacts {
  let model: onnxProto.onnx.ModelProto;
  try {
    model = decodeModel(bytes);
  } catch (cause) {
    throw new AdoptError(
      `not an ONNX model: its bytes do not decode as one (${cause instanceof Error ? cause.message : String(cause)})`,
      { cause },
    );
  }
  const graph = model.graph;
  if (graph === null || graph === undefined || (graph.node ?? []).length === 0) {
    throw new AdoptError('not an ONNX model: it has no graph of operators');
  }
  const initializers = new Set((graph.initializer ?? []).map((t) => t.name ?? ''));
  // Older exporters list the weights among the inputs too.
  const inputs = (graph.input ?? []).filter((i) => !initializers.has(i.name ?? ''));
  const outputs = graph.output ?? [];
  if (inputs.length !== 1 || outputs.length !== 1) {
    throw new AdoptError(
      `not a super-resolution network: it has ${inputs.length} inputs and ${outputs.length} outputs (${inputs.map((i) => i.name).join(', ')} -> ${outputs.map((o) => o.name).join(', ')}) where one image in and one image out are expected`,
    );
  }
  const counts = new Map<string, number>();
  for (const node of graph.node ?? []) counts.set(node.opType ?? '?', (counts.get(node.opType ?? '?') ?? 0) + 1);
  const opset = (model.opsetImport ?? []).find(
    (o) => o.domain === '' || o.domain === 'ai.onnx' || o.domain === null || o.domain === undefined,
  );
  return {
    input: tensorFacts(inputs[0]!),
    output: tensorFacts(outputs[0]!),
    opset: opset?.version === undefined || opset.version === null ? 0 : Number(opset.version),
    params: (graph.initializer ?? []).reduce(
      (sum, t) => sum + (t.dims ?? []).reduce((n: number, d) => n * Number(d), 1),
      0,
    ),
    operators: [...counts.entries()].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])),
    float16Weights: (graph.initializer ?? []).some((t) => t.dataType === 10),
  };
}

/**
 * The checks a graph must pass to run as the tiling engine runs networks: one float32 NCHW image of
 * 3 channels in and out, height and width free (tiles and images of any size). Throws AdoptError.
 */
export function checkImageGraph(facts: GraphFacts): void {
  for (const [role, t] of [
    ['input', facts.input],
    ['output', facts.output],
  ] as const) {
    if (t.elementType === 'float16') {
      throw new AdoptError(
        `float16 ${role} ${t.name}: the tiling engine feeds and reads float32; adopt the float32 graph (a graph with float16 weights inside and float32 input and output, like models/*-fp16.onnx, is accepted)`,
      );
    }
    if (t.elementType !== 'float32')
      throw new AdoptError(
        `not a super-resolution network for this engine: its ${role} ${t.name} is ${t.elementType}, where float32 is expected`,
      );
    if (t.axes.length !== 4) {
      throw new AdoptError(
        `not a super-resolution network: its ${role} ${t.name} has shape ${describeAxes(t.axes)}, where an NCHW image [batch, 3, height, width] is expected`,
      );
    }
    const channels = t.axes[1]!;
    if ('fixed' in channels && channels.fixed !== 3) {
      throw new AdoptError(
        `not an RGB super-resolution network: its ${role} ${t.name} has ${channels.fixed} channels (shape ${describeAxes(t.axes)}), where 3 are expected`,
      );
    }
  }
  const [, , h, w] = facts.input.axes;
  if ((h !== undefined && 'fixed' in h) || (w !== undefined && 'fixed' in w)) {
    throw new AdoptError(
      `fixed input size: input ${facts.input.name} has shape ${describeAxes(facts.input.axes)}; tiles and images come in every size, so export it with free height and width (torch.onnx.export dynamic_axes, or onnxruntime's make_dynamic_shape tool)`,
    );
  }
}

/** The graph's operators in a few words, for the manifest's architecture line. */
export function describeOperators(facts: GraphFacts): string {
  const shown = facts.operators.slice(0, 6).map(([op, n]) => `${n} ${op}`);
  const more = facts.operators.length > 6 ? `, ${facts.operators.length - 6} other kinds` : '';
  return `adopted ONNX graph (${shown.join(', ')}${more})`;
}
