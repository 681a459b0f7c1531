/**
 * The job contract: what a job is, which codes reject it, what it costs. Import from here; the
 * files behind this list may be reorganised.
 */
export { ERROR_STATUS, JobError, ProcessingError, isExplainedFailure, isJobError, type ErrorCode, type JobErrorOptions } from '../errors.js';
export { KIND_FAILURE_CODE, asJobError, deadlineError, pipelineFailure, type StopReason } from './failures.js';
export type { Fields, Job, JobKind, JobOf, KindContract, KindSettingDefaults, KindTool, KindTypeMap, KindedJob, ModelOf, Quote, QuoteOf, QuoteVerdict, QuotedJob, QuotedOf, ResultOf, TaskResult } from './kind-contract.js';
export { JOB_KINDS, KINDS, allKinds, byKind, kindContract, modelsClaimedTwice, type AnyKindContract, type ModelEntry } from './kinds/index.js';
export { MEDIA_TYPES, isJobOfKind, isModelId, kindOfModel, kindedJob, modelEntry, modelsOfKind, reportedModel, MODEL_IDS, type ModelId } from './models.js';
export { IMAGE_UPSCALE_MODEL, imageQuoteSchema, imageResultSchema } from './kinds/image-upscale.js';
export { VIDEO_UPSCALE_MODEL, videoQuoteSchema, videoResultSchema } from './kinds/video-upscale.js';
export { lipsyncBilledSeconds, lipsyncQuoteSchema, lipsyncResultSchema } from './kinds/lipsync.js';
export { DEFAULT_LIPSYNC_MODEL, LIPSYNC_MODEL_IDS, isLipsyncModelId, type LipsyncModelId } from './kinds/lipsync-models.js';
export { MUSIC_MODEL, MUSIC_REPORTED_MODEL, musicQuoteSchema, musicResultSchema } from './kinds/music.js';
export {
  DEFAULT_SYNC_MODE,
  DEFAULT_UPSCALE_FACTOR,
  SYNC_MODES,
  UPSCALE_FACTORS,
  VOCAL_GENDERS,
  type ImageUpscaleInput,
  type ImageUpscaleJob,
  type LipsyncInput,
  type LipsyncJob,
  type MusicCustomInput,
  type MusicInput,
  type MusicJob,
  type MusicSimpleInput,
  type SyncMode,
  type JobProgress,
  type ProgressReporter,
  type UpscaleFactor,
  type VideoUpscaleInput,
  type VideoUpscaleJob,
  type VocalGender,
} from './types.js';
export { TOOL_NAMES, normaliseToolBody, parseJob, toolsByMarker, type ToolName } from './schemas.js';
export type { ImageResult, LipsyncResult, MusicResult, Song, VideoResult } from './results.js';
export { JOB_ENVELOPE_FIELDS, TASK_ID_REGEX, checkJobEnvelope, errorReplySchema, jobMessageSchema, quoteReplySchema, resultSchema } from './wire-schemas.js';
export {
  IMAGE_MAX_OUTPUT_MEGAPIXELS,
  IMAGE_MAX_OUTPUT_SIDE_PX,
  IMAGE_UPSCALE_FORMATS,
  LIPSYNC_AUDIO_CONTAINERS,
  LIPSYNC_MAX_PROCESSING_SECONDS,
  LIPSYNC_MAX_VIDEO_SECONDS,
  LIPSYNC_RESULT_URL_LIFETIME_DAYS,
  LIPSYNC_VIDEO_CONTAINERS,
  MUSIC_AUDIO_URL_LIFETIME_DAYS,
  MUSIC_LYRICS_MAX_CHARS,
  MUSIC_PROMPT_MAX_CHARS,
  MUSIC_SONGS_PER_GENERATION,
  MUSIC_STYLE_MAX_CHARS,
  MUSIC_NEGATIVE_TAGS_MAX_CHARS,
  MUSIC_TITLE_MAX_CHARS,
  VIDEO_UPSCALE_CONTAINERS,
  VIDEO_UPSCALE_MAX_SECONDS,
} from './limits.js';
export {
  IMAGE_TIERS,
  LIPSYNC_RATES,
  MUSIC_CREDITS,
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
  LipsyncQuote,
  LipsyncQuoteInput,
  MeasuredStreams,
  MusicQuote,
  MusicQuoteInput,
  QuoteDeps,
  QuoteEstimate,
  QuotePolicy,
  QuotedImageJob,
  QuotedLipsyncJob,
  QuotedMusicJob,
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
  checkLipsyncOutput,
  checkVideoInputSize,
  checkVideoOutputSize,
  type WorkLimits,
} from './work-limits.js';
export {
  estimateImageUpscale,
  estimateLipsync,
  estimateVideoUpscale,
  frameCount,
  lipsyncOutputSeconds,
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
