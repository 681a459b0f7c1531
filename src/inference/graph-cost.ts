/**
 * Multiply-adds of a fully convolutional image graph per input pixel, counted from the ONNX graph
 * itself: each Conv costs outChannels x inChannels/group x kh x kw per position of its output, and
 * a tensor's positions per input pixel follow from the resampling nodes before it (DepthToSpace and
 * Resize scale the grid up, SpaceToDepth down). The figure prices jobs (cost model) and turns
 * measured speed into achieved FLOP/s (benchmarks); everything but Conv and Gemm-free pointwise
 * work is ignored, as it is a rounding error next to the convolutions of these networks.
 */
import onnxProto from 'onnx-proto';
import { decodeModel } from './convert/onnx-builder.js';

type Graph = onnxProto.onnx.IGraphProto;

function intAttribute(node: onnxProto.onnx.INodeProto, name: string, fallback: number): number {
  const found = node.attribute?.find((a) => a.name === name);
  if (found === undefined) return fallback;
  // Kernel attributes like strides are lists; square strides are all these graphs use.
  if (found.ints && found.ints.length > 0) return Number(found.ints[0]);
  return found.i === undefined || found.i === null ? fallback : Number(found.i);
}

function scaleOfResize(node: onnxProto.onnx.INodeProto, graph: Graph): number {
  const scalesName = node.input?.[2];
  const init = graph.initializer?.find((t) => t.name === scalesName);
  if (init === undefined) throw new Error(`Expected constant scales on Resize node ${node.name ?? ''}`);
  const values =
    init.floatData && init.floatData.length > 0
      ? Array.from(init.floatData)
      : Array.from(new Float32Array(Uint8Array.from(init.rawData ?? []).buffer));
  const h = values[2];
  const w = values[3];
  if (h === undefined || w === undefined || h !== w)
    throw new Error(`Expected equal H and W scales on Resize node ${node.name ?? ''}`);
  return h;
}

/** Multiply-adds per input pixel of the graph's first input. */
export function macsPerInputPixel(graph: Graph): number {
  const initializers = new Map((graph.initializer ?? []).map((t) => [t.name ?? '', t]));
  const scale = new Map<string, number>();
  for (const input of graph.input ?? []) if (!initializers.has(input.name ?? '')) scale.set(input.name ?? '', 1);
  let macs = 0;
  for (const node of graph.node ?? []) {
    const inputs = (node.input ?? []).filter((name) => scale.has(name));
    const at = inputs.length > 0 ? Math.max(...inputs.map((name) => scale.get(name) as number)) : 1;
    let out = at;
    switch (node.opType) {
      case 'Conv': {
        const weights = initializers.get(node.input?.[1] ?? '');
        const dims = (weights?.dims ?? []).map(Number);
        if (dims.length !== 4) throw new Error(`Expected a constant 4-D kernel on Conv node ${node.name ?? ''}`);
        const [o, i, kh, kw] = dims as [number, number, number, number];
        const stride = intAttribute(node, 'strides', 1);
        out = at / (stride * stride);
        macs += o * i * kh * kw * out;
        break;
      }
      case 'DepthToSpace': {
        const b = intAttribute(node, 'blocksize', 1);
        out = at * b * b;
        break;
      }
      case 'SpaceToDepth': {
        const b = intAttribute(node, 'blocksize', 1);
        out = at / (b * b);
        break;
      }
      case 'Resize': {
        const s = scaleOfResize(node, graph);
        out = at * s * s;
        break;
      }
      default:
        break;
    }
    for (const name of node.output ?? []) scale.set(name, out);
  }
  return Math.round(macs);
}

export function macsPerInputPixelOfModel(bytes: Uint8Array): number {
  const graph = decodeModel(bytes).graph;
  if (graph === null || graph === undefined) throw new Error('Expected an ONNX model with a graph');
  return macsPerInputPixel(graph);
}
