/**
 * Lip-sync's types, model ids and limits: its job, its quote and its result (spec 2.2, 2.3, 4.1,
 * section 8). A file of its own without runtime imports: the registry's type map
 * (kinds/index.ts) and its price (price.ts) read it as well as the kind's descriptor (contract.ts).
 * vendor-lipsync-3 appears only in the spec's pricing table; this worker accepts it everywhere
 * (docs/contract.md).
 */
import type { HdrMode } from '../../../video/settings.js';
import type { ContainerKind, LocalInput, MediaInfo } from '../../../media/index.js';
import type { MeasuredStreams, QuoteEstimate, QuotePolicyOf } from '../../../jobs/quote-types.js';
import type { JobBase } from '../../../jobs/types.js';

export const LIPSYNC_MODEL_IDS = ['vendor-lipsync-2', 'vendor-lipsync-2-pro', 'vendor-lipsync-3'] as const;

export type LipsyncModelId = (typeof LIPSYNC_MODEL_IDS)[number];

export const DEFAULT_LIPSYNC_MODEL: LipsyncModelId = 'vendor-lipsync-2';

export function isLipsyncModelId(value: unknown): value is LipsyncModelId {
  return typeof value === 'string' && (LIPSYNC_MODEL_IDS as readonly string[]).includes(value);
}

export const LIPSYNC_MAX_VIDEO_SECONDS = 30;
export const LIPSYNC_MAX_PROCESSING_SECONDS = 4 * 60;
export const LIPSYNC_RESULT_URL_LIFETIME_DAYS = 7;

export const LIPSYNC_VIDEO_CONTAINERS: readonly ContainerKind[] = ['mp4', 'mov', 'webm', 'm4v', 'gif'];
export const LIPSYNC_AUDIO_CONTAINERS: readonly ContainerKind[] = ['mp3', 'wav', 'aac', 'ogg', 'm4a'];

/**
 * Lip-sync's own part of the quote policy (QuotePolicy.kinds): its work limit from the settings
 * (MEDIA_WORKER_LIPSYNC_MAX_OUTPUT_PERCENT) and its cost per output frame on the worker's hardware
 * class and cores (cost.ts).
 */
export interface LipsyncPolicy {
  /** Output seconds per second the job's credits cover, in per cent (200: twice). */
  maxOutputPercent: number;
  /** Seconds per output frame besides decode and encode (detection, network, paste). */
  secondsPerFrame: number;
}

/** The quote policy as lip-sync's descriptor reads it: the shared rules and its own part. */
export type LipsyncQuotePolicy = QuotePolicyOf<'lipsync'> & { kinds: { lipsync: LipsyncPolicy } };

export const SYNC_MODES = ['cut_off', 'loop', 'bounce', 'silence', 'remap'] as const;
export type SyncMode = (typeof SYNC_MODES)[number];
export const DEFAULT_SYNC_MODE: SyncMode = 'cut_off';

export interface LipsyncInput {
  video_url: string;
  audio_url: string;
  sync_mode: SyncMode;
  active_speaker: boolean;
  /** HDR input kept as HDR or tone-mapped to SDR; absent: the worker's default. */
  hdr?: HdrMode;
}

export interface LipsyncJob extends JobBase {
  model: LipsyncModelId;
  input: LipsyncInput;
}

export interface LipsyncQuoteInput {
  video_url: string;
  audio_url: string;
  sync_mode: SyncMode;
  active_speaker: boolean;
  model: LipsyncModelId;
  billed_seconds: number;
  credits_per_second: number;
}

export interface LipsyncQuote extends QuoteEstimate {
  model: LipsyncModelId;
  creditsUsed: number;
  /** Measured video duration in seconds, rounded to milliseconds (spec 2.2 `duration`). */
  duration: number;
  input: LipsyncQuoteInput;
  /** What the video and the audio file were measured as. */
  measured: { video: MeasuredStreams; audio: MeasuredStreams };
}

export interface QuotedLipsyncJob {
  kind: 'lipsync';
  job: LipsyncJob;
  quote: LipsyncQuote;
  inputs: { image?: undefined; video: LocalInput; audio: LocalInput };
  probes: { image?: undefined; video: MediaInfo; audio: MediaInfo };
}

/** Spec 2.3's lip-sync result. */
export interface LipsyncResult {
  url: string;
  type: 'video';
  duration: number;
}

/** What lip-sync's descriptor is typed by (KindDescriptor). */
export interface LipsyncTypes {
  kind: 'lipsync';
  job: LipsyncJob;
  quote: LipsyncQuote;
  quoted: QuotedLipsyncJob;
  result: LipsyncResult;
}
