/**
 * Thin helpers over the `onnx-proto` protobuf classes: just enough to describe a float32
 * feed-forward graph and encode it. Everything here is deterministic: the same calls in the same
 * order encode to the same bytes (no timestamps, no map iteration over unordered keys).
 */
import onnxProto from 'onnx-proto';

const { onnx } = onnxProto;

export type OnnxModel = onnxProto.onnx.IModelProto;
export type OnnxNode = onnxProto.onnx.INodeProto;
export type OnnxTensor = onnxProto.onnx.ITensorProto;
export type OnnxValueInfo = onnxProto.onnx.IValueInfoProto;
export type OnnxAttribute = onnxProto.onnx.IAttributeProto;

/** ONNX IR version 8 is the newest the bundled protobuf schema describes (ONNX 1.10 to 1.12). */
export const IR_VERSION = 8;

/** A float attribute (alpha, epsilon): plain numbers are integer attributes. */
export interface FloatAttribute {
  float: number;
}

export type AttributeValue = number | number[] | string | FloatAttribute;

/** A dimension is either fixed (a number) or symbolic (a name shared by equal dimensions). */
export type Dim = number | string;

function attribute(name: string, value: AttributeValue): OnnxAttribute {
  const T = onnx.AttributeProto.AttributeType;
  if (typeof value === 'string') {
    return { name, type: T.STRING, s: new TextEncoder().encode(value) };
  }
  if (Array.isArray(value)) {
    return { name, type: T.INTS, ints: value };
  }
  if (typeof value === 'object') {
    return { name, type: T.FLOAT, f: value.float };
  }
  if (!Number.isInteger(value)) {
    throw new RangeError(`Expected integer for attribute ${name} but received ${value}`);
  }
  return { name, type: T.INT, i: value };
}

export function node(
  opType: string,
  inputs: readonly string[],
  outputs: readonly string[],
  name: string,
  attributes: Readonly<Record<string, AttributeValue>> = {},
): OnnxNode {
  return {
    opType,
    name,
    input: [...inputs],
    output: [...outputs],
    // Sorted so that the encoding never depends on how the caller built the object.
    attribute: Object.keys(attributes)
      .sort()
      .map((key) => attribute(key, attributes[key] as AttributeValue)),
  };
}

/**
 * A float32 initializer stored as little-endian raw bytes, as the ONNX spec requires regardless
 * of the host's byte order.
 */
export function floatTensor(name: string, dims: readonly number[], data: Float32Array): OnnxTensor {
  const expected = dims.reduce((a, b) => a * b, 1);
  if (data.length !== expected) {
    throw new RangeError(
      `Expected ${expected} values for tensor ${name} of shape [${dims.join(', ')}] but received ${data.length}`,
    );
  }
  const raw = new Uint8Array(data.length * 4);
  const view = new DataView(raw.buffer);
  for (let i = 0; i < data.length; i += 1) view.setFloat32(i * 4, data[i] as number, true);
  return { name, dims: [...dims], dataType: onnx.TensorProto.DataType.FLOAT, rawData: raw };
}

/** The values of a float32 initializer, stored as raw little-endian bytes or as `floatData`. */
export function floatTensorValues(tensor: OnnxTensor): Float32Array {
  if (tensor.dataType !== onnx.TensorProto.DataType.FLOAT)
    throw new RangeError(`Expected a float32 initializer but ${tensor.name} is of type ${tensor.dataType}`);
  if (tensor.rawData && tensor.rawData.length > 0) {
    const raw = tensor.rawData;
    const view = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
    return Float32Array.from({ length: raw.byteLength / 4 }, (_, i) => view.getFloat32(i * 4, true));
  }
  return Float32Array.from(tensor.floatData ?? []);
}

export function floatValueInfo(name: string, dims: readonly Dim[]): OnnxValueInfo {
  return {
    name,
    type: {
      tensorType: {
        elemType: onnx.TensorProto.DataType.FLOAT,
        shape: {
          dim: dims.map((d) => (typeof d === 'number' ? { dimValue: d } : { dimParam: d })),
        },
      },
    },
  };
}

export interface ModelParts {
  graphName: string;
  nodes: OnnxNode[];
  initializers: OnnxTensor[];
  inputs: OnnxValueInfo[];
  outputs: OnnxValueInfo[];
  opset: number;
  producerName: string;
  producerVersion: string;
  docString: string;
  /** Written in the given order; keep it stable. */
  metadata: ReadonlyArray<readonly [string, string]>;
}

export function buildModel(parts: ModelParts): OnnxModel {
  return {
    irVersion: IR_VERSION,
    opsetImport: [{ domain: '', version: parts.opset }],
    producerName: parts.producerName,
    producerVersion: parts.producerVersion,
    docString: parts.docString,
    metadataProps: parts.metadata.map(([key, value]) => ({ key, value })),
    graph: {
      name: parts.graphName,
      node: parts.nodes,
      initializer: parts.initializers,
      input: parts.inputs,
      output: parts.outputs,
    },
  };
}

export function encodeModel(model: OnnxModel): Uint8Array {
  return onnx.ModelProto.encode(model).finish();
}

export function decodeModel(bytes: Uint8Array): onnxProto.onnx.ModelProto {
  return onnx.ModelProto.decode(bytes);
}
