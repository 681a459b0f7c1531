/**
 * The job contract: what a job is, which codes reject it, what it costs. Import from here; the
 * files behind this list may be reorganised.
 */
export {
  ERROR_STATUS,
  JobError,
  ProcessingError,
  isExplainedFailure,
  isJobError,
  type ErrorCode,
  type JobErrorOptions,
} from '../errors.js';
export { KIND_FAILURE_CODE, asJobError, deadlineError, pipelineFailure, type StopReason } from './failures.js';
export type {
  Fields,
  KindDescriptor,
  KindSettingDefaults,
  KindTypes,
  QuoteVerdict,
  ToolDescriptor,
} from './kind-contract.js';
// The registry with its type map (JobKind, Job, KindContract, QuotePolicy, ...), and each kind's public
// surface (its types, its price, and what its pipeline and command line import).
export * from './kinds.js';
export {
  MEDIA_TYPES,
  isJobOfKind,
  isModelId,
  kindOfModel,
  kindedJob,
  modelEntry,
  modelsOfKind,
  reportedModel,
  MODEL_IDS,
  type ModelId,
} from './models.js';
export {
  DEFAULT_UPSCALE_FACTOR,
  UPSCALE_FACTORS,
  type ImageUpscaleInput,
  type ImageUpscaleJob,
  type JobProgress,
  type ProgressStep,
  type ProgressReporter,
  type UpscaleFactor,
  type VideoUpscaleInput,
  type VideoUpscaleJob,
} from './types.js';
export { TOOL_NAMES, normaliseToolBody, parseJob, toolsByMarker, type ToolName } from './schemas.js';
export type { ImageResult, VideoResult } from './results.js';
export {
  JOB_ENVELOPE_FIELDS,
  TASK_ID_REGEX,
  checkJobEnvelope,
  errorReplySchema,
  jobMessageSchema,
  quoteReplySchema,
  resultSchema,
} from './wire-schemas.js';
export {
  IMAGE_MAX_OUTPUT_MEGAPIXELS,
  IMAGE_MAX_OUTPUT_SIDE_PX,
  IMAGE_UPSCALE_FORMATS,
  VIDEO_UPSCALE_CONTAINERS,
  VIDEO_UPSCALE_MAX_SECONDS,
} from './limits.js';
// What every kind's price shares (each kind's own price comes with the registry, above).
export * from './pricing.js';
export {
  checkQuote,
  errorBody,
  formatDuration,
  formatQuoteError,
  measuredStreams,
  minimumCredits,
  quoteJob,
} from './quote.js';
export type { ErrorBody, InputKind, MeasuredStreams, QuoteDeps, QuoteEstimate, QuotePolicyOf } from './quote-types.js';
export { checkAudio, checkFormat, checkVideo } from './input-checks.js';
export {
  DEFAULT_WORK_LIMITS,
  H264_LEVEL_62_MAX_FRAME_PIXELS,
  checkEstimate,
  checkFrameRate,
  checkJobOutputPixels,
  checkVideoInputSize,
  checkVideoOutputSize,
  type WorkLimits,
} from './work-limits.js';
export {
  estimateImageUpscale,
  estimateVideoUpscale,
  frameCount,
  tiledInputPixels,
  type CostEstimate,
  type SrNetworkCost,
} from './cost-model.js';
export {
  HARDWARE_CLASSES,
  HARDWARE_CLASS_NAMES,
  hardwareClassForProviders,
  hardwareProfile,
  type HardwareClass,
  type HardwareClassName,
  type HardwareProfile,
} from './hardware-classes.js';
export { charCount, describeValue, expectedText, expectedValue, oneOf } from './messages.js';
export { HTTPS_URL_PATTERN, submittedTask } from './openapi-parts.js';
