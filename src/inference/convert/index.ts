/** Conversion of the UpscalerJS TF.js models to ONNX: the public surface of this folder. */
export {
  convertTfjsSource,
  sha256Hex,
  writeFileAtomic,
  CONVERTER_NAME,
  CONVERTER_VERSION,
  GRAPH_RANGE,
  INPUT_NAME,
  ONNX_OPSET,
  OUTPUT_NAME,
  type ConversionResult,
  type ConvertOptions,
} from './convert.js';
export { buildUpscalerManifest, UPSCALERJS_TILE_DEFAULTS } from './manifest-builder.js';
export { kerasToOnnx, type KerasToOnnxOptions } from './keras-to-onnx.js';
export type { ConvertedGraph } from './graph-walk.js';
export {
  loadTfjsLayersModel,
  parseTfjsLayersModel,
  TfjsModelFormatError,
  type TfjsLayersModel,
} from './tfjs-layers-model.js';
export {
  installedSource,
  modelName,
  ModelSourceError,
  packageRoot,
  parseModelName,
  UPSCALERJS_LICENCE,
  UPSCALERJS_SCALES,
  UPSCALERJS_VARIANTS,
  type TfjsSource,
  type UpscalerScale,
  type UpscalerVariant,
} from './upscalerjs.js';
export * from './onnx-builder.js';
export {
  buildHalfPrecisionManifest,
  float16Bits,
  halfPrecisionBytes,
  halfPrecisionName,
  toHalfPrecision,
} from './half-precision.js';
export { REALESRGAN_NETWORKS, buildRealEsrganManifest, convertNcnnFiles } from './realesrgan.js';
export {
  activationQuantization,
  calibratedTensors,
  equalizableConvs,
  equalizeChannels,
  int8Bytes,
  int8CalibrationFile,
  int8CalibrationSchema,
  int8Name,
  quantizableConvs,
  quantizeWeights,
  roundHalfEven,
  toInt8,
  type Int8Calibration,
} from './int8.js';
