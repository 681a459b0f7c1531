/**
 * The float16 variant of a float32 graph, for the GPU providers: every float initializer becomes
 * float16 except the ones an operator needs in float32 (Resize's roi and scales), the graph input
 * is cast to float16 on entry and the output back to float32 on exit, so the caller's tensors and
 * the manifest's contract do not change. The Real-ESRGAN weights come from ncnn files stored in
 * float16, so their values survive the round trip exactly; only activations lose precision.
 *
 * Deterministic: the same graph in gives the same bytes out (the manifests pin them by sha256).
 */
import onnxProto from 'onnx-proto';
import type { SuperResolutionManifest } from '../manifest.js';
import { sha256Hex } from './convert.js';
import { decodeModel, encodeModel, floatTensorValues, node, type OnnxModel, type OnnxTensor } from './onnx-builder.js';

const { DataType } = onnxProto.onnx.TensorProto;

/** Inputs (by position) that stay float32 whatever the data's type: Resize's roi and scales. */
const FLOAT32_INPUTS: Readonly<Record<string, readonly number[]>> = { Resize: [1, 2] };

/** One float's bits, reused by every call (this runs once per weight: millions of times). */
const SCRATCH_F32 = new Float32Array(1);
const SCRATCH_U32 = new Uint32Array(SCRATCH_F32.buffer);

/** IEEE 754 binary16 bits of a number, rounded to nearest even (overflow to infinity, subnormals kept). */
export function float16Bits(value: number): number {
  SCRATCH_F32[0] = value;
  const x = SCRATCH_U32[0] as number;
  const sign = (x >>> 16) & 0x8000;
  const exponent = (x >>> 23) & 0xff;
  let mantissa = x & 0x7fffff;
  if (exponent === 0xff) return sign | 0x7c00 | (mantissa !== 0 ? 0x200 : 0); // NaN, infinity
  let e = exponent - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    // Subnormal: shift the implicit 1 in, then round to nearest even.
    mantissa |= 0x800000;
    const shift = 14 - e;
    const half = 1 << (shift - 1);
    const rest = mantissa & ((1 << shift) - 1);
    let bits = mantissa >>> shift;
    if (rest > half || (rest === half && (bits & 1) === 1)) bits += 1;
    return sign | bits;
  }
  let bits = (e << 10) | (mantissa >>> 13);
  const rest = mantissa & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && (bits & 1) === 1)) bits += 1; // may carry into the exponent: still right
  e = bits >>> 10;
  return sign | (e >= 0x1f ? 0x7c00 : bits);
}

function toFloat16Tensor(tensor: OnnxTensor): OnnxTensor {
  const values = floatTensorValues(tensor);
  const raw = new Uint8Array(values.length * 2);
  const view = new DataView(raw.buffer);
  for (let i = 0; i < values.length; i += 1) view.setUint16(i * 2, float16Bits(values[i] as number), true);
  return { name: tensor.name ?? null, dims: tensor.dims ?? [], dataType: DataType.FLOAT16, rawData: raw };
}

function setElemType<T extends onnxProto.onnx.IValueInfoProto>(info: T, elemType: number): T {
  return { ...info, type: { ...info.type, tensorType: { ...info.type?.tensorType, elemType } } };
}

/** The float16 variant of a single-input, single-output float32 graph (see the module comment). */
export function toHalfPrecision(model: OnnxModel): OnnxModel {
  const graph = model.graph;
  const inputName = graph?.input?.[0]?.name;
  const outputName = graph?.output?.[0]?.name;
  if (
    graph === null ||
    graph === undefined ||
    graph.input?.length !== 1 ||
    graph.output?.length !== 1 ||
    !inputName ||
    !outputName
  ) {
    throw new RangeError('Expected a graph with one input and one output to convert to float16');
  }
  const keepFloat32 = new Set<string>();
  for (const n of graph.node ?? []) {
    for (const index of FLOAT32_INPUTS[n.opType ?? ''] ?? []) {
      const name = n.input?.[index];
      if (name) keepFloat32.add(name);
    }
  }
  const input16 = `${inputName}_float16`;
  const output16 = `${outputName}_float16`;
  const renamed = (graph.node ?? []).map((n) => ({
    ...n,
    input: (n.input ?? []).map((name) => (name === inputName ? input16 : name === outputName ? output16 : name)),
    output: (n.output ?? []).map((name) => (name === outputName ? output16 : name)),
  }));
  return {
    ...model,
    graph: {
      ...graph,
      node: [
        node('Cast', [inputName], [input16], 'input_to_float16', { to: DataType.FLOAT16 }),
        ...renamed,
        node('Cast', [output16], [outputName], 'output_to_float32', { to: DataType.FLOAT }),
      ],
      initializer: (graph.initializer ?? []).map((t) =>
        t.dataType === DataType.FLOAT && !keepFloat32.has(t.name ?? '') ? toFloat16Tensor(t) : t,
      ),
      valueInfo: (graph.valueInfo ?? []).map((v) =>
        v.type?.tensorType?.elemType === DataType.FLOAT ? setElemType(v, DataType.FLOAT16) : v,
      ),
    },
  };
}

/** The float16 variant's file from the float32 file's bytes. */
export function halfPrecisionBytes(float32: Uint8Array): Uint8Array {
  return encodeModel(toHalfPrecision(decodeModel(float32)));
}

/** The name of a network's float16 variant. */
export function halfPrecisionName(name: string): string {
  return `${name}-fp16`;
}

/**
 * The manifest of `base`'s float16 variant with the variant's bytes: the same network (scale,
 * tensors, tile, cost), its own file and checksum, made from `base` by the registry on first use.
 */
export function buildHalfPrecisionManifest(base: SuperResolutionManifest, bytes: Uint8Array): SuperResolutionManifest {
  const { halfPrecision: _variant, converter: _converter, ...rest } = base;
  const name = halfPrecisionName(base.name);
  return {
    ...rest,
    name,
    description: `${base.description}; float16 weights and activations (float32 input and output), for the CUDA and TensorRT providers`,
    file: `${name}.onnx`,
    sha256: sha256Hex(bytes),
    bytes: bytes.byteLength,
    source: { kind: 'float16', of: base.name },
  };
}
