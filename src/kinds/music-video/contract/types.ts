/**
 * The music video's types and limits (docs/music-video.md): its job, quote, quoted job and result,
 * its model id, choices and limits. No runtime imports: the registry's type map (kinds/index.ts)
 * reads it as well as the kind's descriptor (contract.ts), its price (price.ts) and its pipeline
 * (src/kinds/music-video/pipeline/).
 */
import type { ImageFormat, ContainerKind, ImageInfo, LocalInput, MediaInfo } from '../../../media/index.js';
import type { DurationPrice } from '../../../jobs/pricing.js';
import type { JobBase } from '../../../jobs/types.js';

export const MUSIC_VIDEO_MODEL = 'vendor-music-video';

export const MUSIC_VIDEO_STYLES = ['waveform', 'spectrum', 'still'] as const;
export type MusicVideoStyle = (typeof MUSIC_VIDEO_STYLES)[number];
export const DEFAULT_MUSIC_VIDEO_STYLE: MusicVideoStyle = 'waveform';

export const MUSIC_VIDEO_ASPECT_RATIOS = ['16:9', '1:1', '9:16'] as const;
export type MusicVideoAspectRatio = (typeof MUSIC_VIDEO_ASPECT_RATIOS)[number];
export const DEFAULT_MUSIC_VIDEO_ASPECT_RATIO: MusicVideoAspectRatio = '16:9';

/** The output size of each aspect ratio. */
export const MUSIC_VIDEO_SIZES: Readonly<Record<MusicVideoAspectRatio, { width: number; height: number }>> = {
  '16:9': { width: 1920, height: 1080 },
  '1:1': { width: 1080, height: 1080 },
  '9:16': { width: 1080, height: 1920 },
};

export const MUSIC_VIDEO_FPS = 30;
/** 8 minutes: longer audio is AUDIO_TOO_LONG. */
export const MUSIC_VIDEO_MAX_AUDIO_SECONDS = 480;
/** The music kind's title limit: a generated song's title fits as it is. */
export const MUSIC_VIDEO_TITLE_MAX_CHARS = 80;
/** Audio containers accepted, decided from the content (FLAC is read by its own demuxer). */
export const MUSIC_VIDEO_AUDIO_CONTAINERS: readonly ContainerKind[] = ['mp3', 'wav', 'aac', 'ogg', 'm4a', 'flac'];
export const MUSIC_VIDEO_IMAGE_FORMATS: readonly ImageFormat[] = ['jpeg', 'png', 'webp'];
/** The result URL lives as long as music's audio URL (spec section 8: 14 days). */
export const MUSIC_VIDEO_RESULT_URL_LIFETIME_DAYS = 14;

export interface MusicVideoInput {
  audio_url: string;
  image_url: string;
  title?: string;
  style: MusicVideoStyle;
  aspect_ratio: MusicVideoAspectRatio;
}

export interface MusicVideoJob extends JobBase {
  model: typeof MUSIC_VIDEO_MODEL;
  input: MusicVideoInput;
}

/** The quote's echo of the input (spec 2.2's naming, as the video upscale's). */
export interface MusicVideoQuoteInput extends MusicVideoInput {
  /** The decoded duration, `12.4s`. */
  detected_duration: string;
  billed_seconds: number;
  credits_per_second: number;
}

export interface MusicVideoQuote {
  model: typeof MUSIC_VIDEO_MODEL;
  creditsUsed: number;
  input: MusicVideoQuoteInput;
}

/** Its price (price.ts): the decoded audio's seconds at the rate, at least the minimum. */
export interface MusicVideoPrice extends DurationPrice {
  minimumCredits: number;
}

/** A priced job with its local files and what was measured in them, handed on to the render. */
export interface QuotedMusicVideoJob {
  kind: 'music-video';
  job: MusicVideoJob;
  quote: MusicVideoQuote;
  /** Its price from the decoded audio duration (what is billed is what is rendered). */
  price: MusicVideoPrice;
  /** The audio stream's sample rate: the rate its samples were counted at. */
  audioSampleRate: number;
  inputs: { audio: LocalInput; image: LocalInput; video?: undefined };
  probes: { audio: MediaInfo; image: ImageInfo; video?: undefined };
}

/** A finished music video: one MP4. */
export interface MusicVideoResult {
  url: string;
  type: 'video';
  /** Seconds: the measured audio's. */
  duration: number;
  width: number;
  height: number;
}

/** What the music video's descriptor is typed by (KindDescriptor). */
export interface MusicVideoTypes {
  kind: 'music-video';
  job: MusicVideoJob;
  quote: MusicVideoQuote;
  quoted: QuotedMusicVideoJob;
  result: MusicVideoResult;
}
