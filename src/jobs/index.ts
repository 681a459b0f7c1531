/**
 * The job contract: what a job is, which codes reject it, what it costs. Import from here; the
 * files behind this list may be reorganised.
 */
export { ERROR_STATUS, JobError, ProcessingError, isExplainedFailure, isJobError, type ErrorCode, type JobErrorOptions } from '../errors.js';
export { KIND_FAILURE_CODE, asJobError, deadlineError, pipelineFailure, type StopReason } from './failures.js';
export type { Fields, Job, JobKind, JobOf, KindContract, KindPolicies, KindSettingDefaults, KindTool, KindTypeMap, KindedJob, ModelOf, Quote, QuoteOf, QuoteVerdict, QuotedJob, QuotedOf, ResultOf, TaskResult } from './kind-contract.js';
export { JOB_KINDS, KINDS, allKinds, byKind, kindContract, modelsClaimedTwice, type AnyKindContract, type ModelEntry } from './kinds/index.js';
export { MEDIA_TYPES, isJobOfKind, isModelId, kindOfModel, kindedJob, modelEntry, modelsOfKind, reportedModel, MODEL_IDS, type ModelId } from './models.js';
export { IMAGE_UPSCALE_MODEL, imageQuoteSchema, imageResultSchema } from './kinds/image-upscale/contract.js';
export { VIDEO_UPSCALE_MODEL, videoQuoteSchema, videoResultSchema } from './kinds/video-upscale/contract.js';
export { lipsyncBilledSeconds, lipsyncQuoteSchema, lipsyncResultSchema } from './kinds/lipsync/contract.js';
export { MUSIC_MODEL, MUSIC_REPORTED_MODEL, musicQuoteSchema, musicResultSchema } from './kinds/music/contract.js';
// Each kind's own types, model ids and limits, from its room.
export * from './kinds/lipsync/types.js';
export * from './kinds/music/types.js';
export * from './kinds/music-video/types.js';
export { MUSIC_VIDEO_ERROR_CODES, MUSIC_VIDEO_FAILURE_CODE, musicVideoInputSchema, musicVideoQuoteSchema, musicVideoResultSchema, parseMusicVideoInput } from './kinds/music-video/contract.js';
export { DEFAULT_AUDIO_DECODE_TIMEOUT_MS, audioInputArgs, audioMeasureArgs, measureAudioSeconds, quoteMusicVideo, type AudioToMeasure, type MeasureOptions } from './kinds/music-video/measure.js';
export {
  DEFAULT_UPSCALE_FACTOR,
  UPSCALE_FACTORS,
  type ImageUpscaleInput,
  type ImageUpscaleJob,
  type JobProgress,
  type ProgressReporter,
  type UpscaleFactor,
  type VideoUpscaleInput,
  type VideoUpscaleJob,
} from './types.js';
export { TOOL_NAMES, normaliseToolBody, parseJob, toolsByMarker, type ToolName } from './schemas.js';
export type { ImageResult, VideoResult } from './results.js';
export { JOB_ENVELOPE_FIELDS, TASK_ID_REGEX, checkJobEnvelope, errorReplySchema, jobMessageSchema, quoteReplySchema, resultSchema } from './wire-schemas.js';
export {
  IMAGE_MAX_OUTPUT_MEGAPIXELS,
  IMAGE_MAX_OUTPUT_SIDE_PX,
  IMAGE_UPSCALE_FORMATS,
  VIDEO_UPSCALE_CONTAINERS,
  VIDEO_UPSCALE_MAX_SECONDS,
} from './limits.js';
export {
  IMAGE_TIERS,
  LIPSYNC_RATES,
  MUSIC_CREDITS,
  MUSIC_VIDEO_CREDITS_PER_SECOND,
  MUSIC_VIDEO_MINIMUM_CREDITS,
  checkMusicVideoAudioLength,
  priceMusicVideo,
  type MusicVideoPrice,
  VIDEO_UPSCALE_CREDITS_PER_SECOND,
  billedSeconds,
  durationMilliseconds,
  priceImageUpscale,
  priceLipsync,
  priceMusic,
  priceVideoUpscale,
  roundedSeconds,
  type DurationPrice,
  type ImageTier,
  type ImageUpscalePrice,
  type LipsyncPrice,
  type LipsyncRate,
  type MusicPrice,
  type OutputTier,
  type VideoUpscalePrice,
} from './pricing.js';
export { checkQuote, errorBody, formatDuration, formatQuoteError, measuredStreams, minimumCredits, quoteJob } from './quote.js';
export type {
  ErrorBody,
  ImageQuote,
  ImageQuoteInput,
  InputKind,
  MeasuredStreams,
  QuoteDeps,
  QuoteEstimate,
  QuotePolicy,
  QuotedImageJob,
  QuotedVideoJob,
  VideoQuote,
  VideoQuoteInput,
} from './quote-types.js';
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
  DEFAULT_LIPSYNC_MAX_OUTPUT_PERCENT,
  LIPSYNC_FRAME_SECONDS,
  checkLipsyncOutput,
  estimateLipsync,
  lipsyncOutputSeconds,
  lipsyncSecondsPerFrame,
  type LipsyncCostRequest,
} from './kinds/lipsync/cost.js';
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
