/**
 * The inference layer's settings, for src/config.ts: which super-resolution network serves each use
 * and which execution providers to try. Pure modules only: reading the settings loads no ONNX Runtime.
 */
export {
  DEFAULT_SR_MODEL_CHOICES,
  SR_FACTORS,
  SR_USES,
  chooseSrModel,
  parseSrModelChoices,
  type SrFactor,
  type SrModelChoices,
  type SrUse,
} from './sr-choice.js';
export { EXECUTION_PROVIDER_NAMES, parseExecutionProviders } from './execution-providers.js';
export { PRECISION_SETTINGS, type PrecisionSetting } from './precision.js';
