/**
 * One conversion: an installed UpscalerJS TF.js model in, ONNX bytes and their sha256 out.
 * The bytes depend only on the source package's files and CONVERTER_VERSION, so a checksum
 * recorded in a manifest verifies a file converted on any other machine.
 */
import { createHash } from 'node:crypto';
import path from 'node:path';
import type { ConvertedGraph, ConverterOptions } from './graph-walk.js';
import { encodeModel } from './onnx-builder.js';
import { kerasToOnnx } from './keras-to-onnx.js';
import { loadTfjsLayersModel } from './tfjs-layers-model.js';
import { ModelSourceError, packageRoot, UPSCALERJS_LICENCE, type TfjsSource } from './upscalerjs.js';

/** Bump whenever the emitted bytes change for the same source (the manifests' checksums follow). */
export const CONVERTER_VERSION = '1.1.0';
export const CONVERTER_NAME = 'media-worker tfjs-layers-to-onnx';
export const ONNX_OPSET = 17;
export const INPUT_NAME = 'input';
export const OUTPUT_NAME = 'output';
/** Every converted graph takes and returns this range, whatever the network was trained on. */
export const GRAPH_RANGE = [0, 255] as const;
/** How every converted graph's doc string ends: what its input and output are. */
export const GRAPH_IO_DOC = `Input ${INPUT_NAME} float32 [N,3,H,W] RGB 0-255; output ${OUTPUT_NAME} float32 [N,3,H*s,W*s] RGB 0-255, not clamped.`;

/** A converted graph as the bytes to write, their checksum, and what the converter measured. */
export interface EncodedGraph {
  name: string;
  bytes: Uint8Array;
  sha256: string;
  scale: number;
  params: number;
  receptiveFieldRadius: number;
}

export interface ConversionResult extends EncodedGraph {
  inputChannels: number;
  outputChannels: number;
  source: TfjsSource;
  converterVersion: string;
  opset: number;
}

export function sha256Hex(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/**
 * The options every conversion starts from: tensor names, opset, and the scales that make a
 * network trained on `nativeRange` take and return GRAPH_RANGE; undefined for a range no
 * conversion supports (only [0, 1] and [0, 255] are).
 */
export function graphConventions(
  nativeRange: readonly [number, number],
): Pick<ConverterOptions, 'inputName' | 'outputName' | 'inputScale' | 'outputScale' | 'opset'> | undefined {
  const [low, high] = nativeRange;
  if (low !== 0 || (high !== 1 && high !== 255)) return undefined;
  const rangeFactor = GRAPH_RANGE[1] / high;
  return {
    inputName: INPUT_NAME,
    outputName: OUTPUT_NAME,
    inputScale: 1 / rangeFactor,
    outputScale: rangeFactor,
    opset: ONNX_OPSET,
  };
}

/** The bytes of `converted`, hashed, with what its converter measured. */
export function encodeConverted(name: string, converted: ConvertedGraph): EncodedGraph {
  const bytes = encodeModel(converted.model);
  return {
    name,
    bytes,
    sha256: sha256Hex(bytes),
    scale: converted.scale,
    params: converted.params,
    receptiveFieldRadius: converted.receptiveFieldRadius,
  };
}

export interface ConvertOptions {
  /** Where to resolve the npm package from (a file URL or path); defaults to this module. */
  resolveFrom?: string;
}

export async function convertTfjsSource(
  name: string,
  source: TfjsSource,
  options: ConvertOptions = {},
): Promise<ConversionResult> {
  const installed = await packageRoot(source.package, options.resolveFrom);
  if (installed.version !== source.version) {
    throw new ModelSourceError(
      `Expected ${source.package} ${source.version} for model ${name} but ${installed.version} is installed (${installed.root})`,
    );
  }
  const modelJson = path.resolve(installed.root, source.path);
  if (!modelJson.startsWith(installed.root + path.sep)) {
    throw new ModelSourceError(`Expected a model path inside ${source.package} but received ${source.path}`);
  }
  const tfjs = await loadTfjsLayersModel(modelJson);
  const [low, high] = source.nativeRange;
  const conventions = graphConventions(source.nativeRange);
  if (conventions === undefined) {
    throw new ModelSourceError(
      `Expected a native range of [0, 1] or [0, 255] for model ${name} but received [${low}, ${high}]`,
    );
  }
  const converted = kerasToOnnx(tfjs, {
    ...conventions,
    graphName: name,
    producerName: CONVERTER_NAME,
    producerVersion: CONVERTER_VERSION,
    docString: `${name}: ${source.package}@${source.version} ${source.path} converted from TF.js. ${GRAPH_IO_DOC}`,
    metadata: [
      ['name', name],
      ['source_package', source.package],
      ['source_version', source.version],
      ['source_path', source.path],
      ['source_native_range', `${low},${high}`],
      ['licence', `${UPSCALERJS_LICENCE.spdx} (${UPSCALERJS_LICENCE.upstream})`],
    ],
  });
  return {
    ...encodeConverted(name, converted),
    inputChannels: converted.inputChannels,
    outputChannels: converted.outputChannels,
    source,
    converterVersion: CONVERTER_VERSION,
    opset: ONNX_OPSET,
  };
}

// Models are written next to the target and renamed, so a reader (or a crash) never sees half a
// model, and two processes converting at once each leave a whole file.
export { writeFileAtomic } from '../../media/index.js';
