/** The media layer's public surface: probing, safe fetching, ffmpeg helpers. */
export { checkAddress, parseCidrs, type AddressPolicy, type AddressVerdict } from './address-policy.js';
export { findOnPath, resolveFfmpeg, resolveFfprobe, type BinaryOptions } from './binaries.js';
export { createMediaDeps, type MediaDeps, type MediaDepsOptions } from './deps.js';
export * from './settings.js';
export { localize, type FetchOptions, type LocalizeOptions } from './fetch.js';
export {
  backoffDelay,
  callJson,
  displayUrl,
  errorDetail,
  ProviderError,
  retryAfterMs,
  TransientProviderError,
  waitUntil,
  withRetry,
  type CallOptions,
  type RetryOptions,
} from './provider-http.js';
export { dnsResolver, publicResolver, systemResolver, type ResolvedAddress, type Resolver } from './resolvers.js';
export {
  MEDIA_DEMUXERS,
  SAFE_PROTOCOLS,
  demuxerFor,
  ffprobeArgs,
  fileInput,
  quietFfmpegArgs,
  rgbPipeInputArgs,
  rgbPipeOutputArgs,
  safeFileInputArgs,
  safeInputArgs,
  type MediaDemuxer,
  type SafeInputOptions,
} from './ffmpeg-args.js';
export { checkDolbyVision, dolbyVisionFromSideData, type DolbyVision } from './dolby-vision.js';
export { crc32, embedMetadata, readImageLayout, type EmbeddedMetadata, type ImageLayout } from './image-container.js';
export {
  iccColourSpace,
  iccDescription,
  imageColourPlan,
  type ColourHeader,
  type ImageColourPlan,
} from './image-colour.js';
export { cleanExif, exifTiff, summariseExif, type ExifCleaning, type ExifSummary } from './image-metadata.js';
export { DEFAULT_MAX_IMAGE_PIXELS, DEFAULT_MAX_IMAGE_SIDE, probeImage, type ProbeImageOptions } from './probe-image.js';
export {
  DEFAULT_PROBE_TIMEOUT_MS,
  normaliseRotation,
  parseFfprobeOutput,
  parseFraction,
  probeMedia,
  type ProbeMediaOptions,
} from './probe-media.js';
export {
  ProcessError,
  isProcessError,
  runProcess,
  spawnProcess,
  ffmpegReason,
  type PathNames,
  type ProcessFailure,
  type ProcessOptions,
  type ProcessResult,
  type RunProcessOptions,
  type SpawnProcessOptions,
  type StreamingProcess,
} from './process.js';
export {
  describeUnsupportedImage,
  describeUnsupportedImageFile,
  isImageFormat,
  sniffBuffer,
  sniffFile,
  type SniffedFormat,
} from './sniff.js';
export {
  AUDIO_TOLERANCE_SECONDS,
  FRAME_TOLERANCE,
  allowedAudioSeconds,
  allowedFrames,
  measureStream,
  type Packet,
  type StreamMeasurement,
} from './stream-measure.js';
export { checkDecodes } from './decode-check.js';
export { SHA256_HEX, fileDigest, type FileDigest } from './file-digest.js';
export type {
  AudioStreamInfo,
  ContainerKind,
  ImageFormat,
  ImageInfo,
  LocalInput,
  MediaInfo,
  Rational,
  VideoStreamInfo,
} from './types.js';
export {
  FOREIGN_LEFTOVER_MAX_AGE_MS,
  JOB_DIR_PREFIX,
  jobDirSweep,
  modelTempSweep,
  ownedTempDir,
  safeDirPrefix,
  sweepLeftovers,
  withJobDir,
  type JobDirOptions,
  type LeftoverReport,
  type LeftoverSweep,
} from './workdir.js';
export {
  currentOwner,
  ownedTempName,
  ownerState,
  ownerToken,
  parseOwnerToken,
  type OwnerState,
  type ProcessOwner,
} from './owner.js';
export { isPartialName, partialOwner, partialPathFor, writeFileAtomic, writeThenRename } from './partial-file.js';
