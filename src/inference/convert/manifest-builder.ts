/**
 * Builds the manifest of a converted UpscalerJS model: the facts come from the conversion, the
 * tile defaults from the table below.
 */
import { macsPerInputPixelOfModel } from '../graph-cost.js';
import { MANIFEST_SCHEMA_VERSION, type SuperResolutionManifest, type TileDefaults } from '../manifest.js';
import { CONVERTER_NAME, GRAPH_RANGE, INPUT_NAME, OUTPUT_NAME, type ConversionResult } from './convert.js';
import { UPSCALERJS_LICENCE, UPSCALERJS_VARIANTS, type UpscalerScale, type UpscalerVariant } from './upscalerjs.js';

/**
 * Defaults from the tiling benchmark (docs/benchmarks.md, "Tiling"). Overlaps are the measured
 * context each network needs for a tiled result byte-identical to the untiled one (slim 10, medium
 * 14; thick's 154-pixel receptive field matters only to float rounding: 16 keeps it within 1/255).
 * Tiles are large because every tile recomputes its overlap: the share of repeated work is about
 * ((tile + 2 overlap) / tile)^2, 8 % at 512 px with overlap 10 but 30-60 % at 192 px. Since the
 * converter folds the upsampling into the last convolution, the largest tensor of a tile stays at
 * input resolution, so these sizes need well under 2 GB; a tile that does not fit is retried smaller.
 */
export const UPSCALERJS_TILE_DEFAULTS: Record<UpscalerVariant, Record<UpscalerScale, TileDefaults>> = {
  slim: {
    2: { size: 768, overlap: 10, batch: 1 },
    3: { size: 640, overlap: 10, batch: 1 },
    4: { size: 512, overlap: 10, batch: 1 },
    8: { size: 384, overlap: 10, batch: 1 },
  },
  medium: {
    2: { size: 512, overlap: 14, batch: 1 },
    3: { size: 512, overlap: 14, batch: 1 },
    4: { size: 512, overlap: 14, batch: 1 },
    8: { size: 256, overlap: 14, batch: 1 },
  },
  thick: {
    2: { size: 512, overlap: 16, batch: 1 },
    3: { size: 512, overlap: 16, batch: 1 },
    4: { size: 512, overlap: 16, batch: 1 },
    8: { size: 256, overlap: 16, batch: 1 },
  },
};

/** The tensor contract every converted graph has: float32 NCHW RGB in the graph range. */
export function graphImageTensor(name: string): SuperResolutionManifest['input'] {
  return { name, dtype: 'float32', layout: 'NCHW', channels: 'RGB', range: [GRAPH_RANGE[0], GRAPH_RANGE[1]] };
}

export function buildUpscalerManifest(
  result: ConversionResult,
  variant: UpscalerVariant,
  scale: UpscalerScale,
): SuperResolutionManifest {
  const spec = UPSCALERJS_VARIANTS[variant];
  if (result.scale !== scale) {
    throw new RangeError(`Expected the converted ${result.name} to upscale x${scale} but it upscales x${result.scale}`);
  }
  return {
    schemaVersion: MANIFEST_SCHEMA_VERSION,
    name: result.name,
    task: 'super-resolution',
    description: `ESRGAN ${variant} (${spec.architecture}) x${scale} super-resolution from UpscalerJS, trained on DIV2K`,
    file: `${result.name}.onnx`,
    sha256: result.sha256,
    bytes: result.bytes.byteLength,
    format: 'onnx',
    opset: result.opset,
    params: result.params,
    licence: { ...UPSCALERJS_LICENCE },
    source: {
      kind: 'upscalerjs-tfjs',
      package: result.source.package,
      version: result.source.version,
      path: result.source.path,
      nativeRange: [result.source.nativeRange[0], result.source.nativeRange[1]],
    },
    converter: { name: CONVERTER_NAME, version: result.converterVersion },
    scale,
    architecture: spec.architecture,
    input: graphImageTensor(INPUT_NAME),
    output: graphImageTensor(OUTPUT_NAME),
    receptiveFieldRadius: result.receptiveFieldRadius,
    macsPerInputPixel: macsPerInputPixelOfModel(result.bytes),
    tile: { ...UPSCALERJS_TILE_DEFAULTS[variant][scale] },
  };
}
