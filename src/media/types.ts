/**
 * What probing tells the rest of the worker about an input file. The jobs/ layer prices and
 * validates from these values only; media/ produces them from the file's content (never from its
 * name or extension).
 */
import type { DolbyVision } from './dolby-vision.js';

export type ImageFormat = 'jpeg' | 'png' | 'webp';

export interface ImageInfo {
  format: ImageFormat;
  /** Displayed width and height: EXIF orientation already applied (a rotated phone photo reports its upright size). */
  width: number;
  height: number;
  channels: number;
  hasAlpha: boolean;
  /** Bits per sample as stored (8 or 16). */
  bitDepth: number;
  /** EXIF orientation tag 1..8 (1 when absent). */
  orientation: number;
  /** True when an ICC profile is embedded. */
  hasIccProfile: boolean;
}

/** Container kinds decided from content (ffprobe format plus the MP4 brand or Matroska DocType). */
export type ContainerKind =
  'mp4' | 'mov' | 'm4v' | 'mkv' | 'webm' | 'gif' | 'mp3' | 'wav' | 'aac' | 'ogg' | 'm4a' | 'flac';

/** An exact ratio as ffmpeg writes it: a frame rate (30000/1001), a pixel aspect (4/3). */
export interface Rational {
  num: number;
  den: number;
}
export interface VideoStreamInfo {
  codec: string;
  /** Coded width and height (before rotation). */
  width: number;
  height: number;
  /** Rotation in degrees from the display matrix or rotate tag, normalised to 0, 90, 180 or 270. */
  rotation: number;
  /** Average frame rate as a fraction (r_frame_rate when avg is unknown). */
  fps: Rational;
  /** True when ffprobe's r_frame_rate and avg_frame_rate disagree (a hint of variable frame rate). */
  variableFrameRate: boolean;
  /** Variable frame rate only: its highest rate, which it is processed and billed at (stream-measure.ts highestFrameRate). */
  cfrRate?: Rational;
  /** Frames measured: the stream's packets (stream-measure.ts), never a header's count. */
  frameCount?: number;
  /** Seconds the stream's packets span (measured). */
  seconds?: number;
  bitRate?: number;
  pixelFormat?: string;
  /** The stream's Dolby Vision configuration record, when it has one (dolby-vision.ts). */
  dolbyVision?: DolbyVision;
}

export interface AudioStreamInfo {
  codec: string;
  sampleRate: number;
  channels: number;
  /** Seconds the stream's packets span (measured); absent when it has no timed packet. */
  seconds?: number;
}

export interface MediaInfo {
  container: ContainerKind;
  /** ffprobe's format_name, for logs. */
  formatName: string;
  /**
   * Measured duration in seconds from the chosen streams' packets (what the decoders will read),
   * never a container or stream header's claim: the video's span, lengthened only by audio that
   * runs past it by more than its encoder's framing; an audio file's span (stream-measure.ts,
   * `fileSeconds`).
   */
  durationSeconds: number;
  /** The headers' duration (container, else longest stream), when it differs from the measured one by over 1 %. */
  declaredDurationSeconds?: number;
  video?: VideoStreamInfo;
  audio?: AudioStreamInfo;
  bitRate?: number;
}

/** A job input that has been made local: downloaded into the job's temp directory, or a CLI path. */
export interface LocalInput {
  path: string;
  bytes: number;
  /** The URL or path the job named. */
  source: string;
}
