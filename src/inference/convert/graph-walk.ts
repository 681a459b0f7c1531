/**
 * What the two converters (keras-to-onnx.ts, ncnn-to-onnx.ts) share while they walk a network
 * layer by layer: their options and result, the state kept per tensor, the up-sampling left for
 * its one convolution to absorb (upsample-conv.ts), and the ONNX pieces both emit the same way:
 * the scaled input, a convolution with its weights, a nearest Resize, and the graph's end with its
 * output scale. Each converter keeps what its format decides (layer parsing, messages, node order
 * around a convolution), so the bytes each emits are its own.
 */
import {
  buildModel,
  floatTensor,
  floatValueInfo,
  node,
  type OnnxModel,
  type OnnxNode,
  type OnnxTensor,
} from './onnx-builder.js';
import type { ConvWeights } from './upsample-conv.js';

export interface ConverterOptions {
  inputName: string;
  outputName: string;
  /** The graph input is multiplied by this before the network sees it (1/255 for a 0-1 network fed 0-255). */
  inputScale: number;
  /** The network output is multiplied by this (255 for a 0-1 network that should answer 0-255). */
  outputScale: number;
  opset: number;
  graphName: string;
  producerName: string;
  producerVersion: string;
  docString: string;
  metadata: ReadonlyArray<readonly [string, string]>;
  /**
   * Folds an up-sampling read only by a convolution into that convolution (default true). False
   * gives the literal layer-by-layer graph, the reference the rewrite is tested against.
   */
  foldUpsampling?: boolean;
}

export interface ConvertedGraph {
  model: OnnxModel;
  /** Output size over input size (same on both axes). */
  scale: number;
  inputChannels: number;
  outputChannels: number;
  /** Number of weights (kernels and biases) in the network. */
  params: number;
  /**
   * Upper bound, in input pixels, on how far from an output pixel's own position its inputs can
   * lie: a tile overlap at least this wide makes a tiled run equal the untiled one.
   */
  receptiveFieldRadius: number;
}

/** What is known about a layer's output while walking the graph. */
export interface TensorState {
  onnxName: string;
  channels: number;
  /** Resolution relative to the network input. */
  scale: number;
  /** Reach in input pixels of the receptive field. */
  radius: number;
}

/** An up-sampling left out of the graph because the one convolution reading it absorbs it. */
export interface FoldedUpsample {
  /** The tensor before up-sampling. */
  source: TensorState;
  factor: number;
}

/**
 * What the absorbing convolution reads: the source tensor (its ONNX name, since no up-sampled
 * tensor exists) at the resolution of the up-sampling.
 */
export function upsampledInput(upsample: FoldedUpsample): TensorState {
  return { ...upsample.source, scale: upsample.source.scale * upsample.factor };
}

/** The nodes and initializers of the graph being built, and the pieces both converters emit alike. */
export class GraphParts {
  readonly nodes: OnnxNode[] = [];
  readonly initializers: OnnxTensor[] = [];

  /** A scalar initializer, added once however many nodes read it; returns its name. */
  scalar(name: string, value: number): string {
    if (!this.initializers.some((t) => t.name === name))
      this.initializers.push(floatTensor(name, [], Float32Array.of(value)));
    return name;
  }

  /** The tensor the network reads: the graph input, times the input scale unless the first convolutions carry it. */
  input(options: ConverterOptions, inputScaleFolded: boolean): string {
    if (options.inputScale === 1 || inputScaleFolded) return options.inputName;
    this.nodes.push(
      node('Mul', [options.inputName, this.scalar('input_scale', options.inputScale)], ['input_scaled'], 'input_scale'),
    );
    return 'input_scaled';
  }

  /** Conv node `name` of `input` with its weights (initializers `name.weight`, `name.bias`). */
  conv(name: string, input: string, conv: ConvWeights, output: string): void {
    const inputs = [input, `${name}.weight`];
    this.initializers.push(floatTensor(`${name}.weight`, conv.shape, conv.kernel));
    if (conv.bias !== undefined) {
      this.initializers.push(floatTensor(`${name}.bias`, [conv.shape[0]], conv.bias));
      inputs.push(`${name}.bias`);
    }
    this.nodes.push(
      node('Conv', inputs, [output], name, {
        dilations: [1, 1],
        group: 1,
        kernel_shape: [conv.shape[2], conv.shape[3]],
        pads: [...conv.pads],
        strides: [1, 1],
      }),
    );
  }

  /** Resize node `name`: nearest up-sampling by `factor` on both axes, repeating pixels (asymmetric, floor). */
  nearestResize(name: string, input: string, factor: number, output: string): void {
    this.initializers.push(floatTensor(`${name}.scales`, [4], Float32Array.of(1, 1, factor, factor)));
    this.nodes.push(
      node('Resize', [input, '', `${name}.scales`], [output], name, {
        coordinate_transformation_mode: 'asymmetric',
        mode: 'nearest',
        nearest_mode: 'floor',
      }),
    );
  }

  /**
   * The model: `output` times the output scale (unless the last convolution carries it), renamed
   * to the graph's output name, with what the walk measured.
   */
  finish(
    options: ConverterOptions,
    walk: { output: TensorState; outputScaleFolded: boolean; inputChannels: number; params: number },
  ): ConvertedGraph {
    const { output, inputChannels } = walk;
    let finalName = output.onnxName;
    if (options.outputScale !== 1 && !walk.outputScaleFolded) {
      this.nodes.push(
        node('Mul', [finalName, this.scalar('output_scale', options.outputScale)], ['output_scaled'], 'output_scale'),
      );
      finalName = 'output_scaled';
    }
    const renamed = this.nodes.map((n) => ({
      ...n,
      input: (n.input ?? []).map((t) => (t === finalName ? options.outputName : t)),
      output: (n.output ?? []).map((t) => (t === finalName ? options.outputName : t)),
    }));
    const model = buildModel({
      graphName: options.graphName,
      nodes: renamed,
      initializers: this.initializers,
      inputs: [floatValueInfo(options.inputName, ['batch', inputChannels, 'height', 'width'])],
      outputs: [floatValueInfo(options.outputName, ['batch', output.channels, 'out_height', 'out_width'])],
      opset: options.opset,
      producerName: options.producerName,
      producerVersion: options.producerVersion,
      docString: options.docString,
      metadata: options.metadata,
    });
    return {
      model,
      scale: output.scale,
      inputChannels,
      outputChannels: output.channels,
      params: walk.params,
      receptiveFieldRadius: Math.ceil(output.radius),
    };
  }
}
