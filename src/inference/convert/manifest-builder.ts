/**
 * Builds the manifest of a converted UpscalerJS model: the facts come from the conversion, the
 * tile defaults from the table below.
 */
import { MANIFEST_SCHEMA_VERSION, type SuperResolutionManifest, type TileDefaults } from '../manifest.js';
import { CONVERTER_NAME, GRAPH_RANGE, INPUT_NAME, OUTPUT_NAME, type ConversionResult } from './convert.js';
import { UPSCALERJS_LICENCE, UPSCALERJS_VARIANTS, type UpscalerScale, type UpscalerVariant } from './upscalerjs.js';

/**
 * Starting points for the CPU (the tiling engine may tune them). Tile sizes keep the largest
 * intermediate tensor of one tile near 100-150 MB. Overlaps equal the receptive field radius
 * where that is affordable (slim 10, medium 18: tiling is then exact); thick's radius is 154
 * pixels, far more than its influence that matters, so it gets 32.
 */
export const UPSCALERJS_TILE_DEFAULTS: Record<UpscalerVariant, Record<UpscalerScale, TileDefaults>> = {
  slim: {
    2: { size: 256, overlap: 10, batch: 1 },
    3: { size: 224, overlap: 10, batch: 1 },
    4: { size: 192, overlap: 10, batch: 1 },
    8: { size: 96, overlap: 10, batch: 1 },
  },
  medium: {
    2: { size: 192, overlap: 18, batch: 1 },
    3: { size: 176, overlap: 18, batch: 1 },
    4: { size: 160, overlap: 18, batch: 1 },
    8: { size: 96, overlap: 18, batch: 1 },
  },
  thick: {
    2: { size: 128, overlap: 32, batch: 1 },
    3: { size: 128, overlap: 32, batch: 1 },
    4: { size: 128, overlap: 32, batch: 1 },
    8: { size: 96, overlap: 32, batch: 1 },
  },
};

export function buildUpscalerManifest(
  result: ConversionResult,
  variant: UpscalerVariant,
  scale: UpscalerScale,
): SuperResolutionManifest {
  const spec = UPSCALERJS_VARIANTS[variant];
  if (result.scale !== scale) {
    throw new RangeError(`Expected the converted ${result.name} to upscale x${scale} but it upscales x${result.scale}`);
  }
  const image = (name: string): SuperResolutionManifest['input'] => ({
    name,
    dtype: 'float32',
    layout: 'NCHW',
    channels: 'RGB',
    range: [GRAPH_RANGE[0], GRAPH_RANGE[1]],
  });
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
    input: image(INPUT_NAME),
    output: image(OUTPUT_NAME),
    receptiveFieldRadius: result.receptiveFieldRadius,
    tile: { ...UPSCALERJS_TILE_DEFAULTS[variant][scale] },
  };
}
