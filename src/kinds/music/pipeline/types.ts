/**
 * The music module's two shapes: one request every backend receives (made from the validated job
 * by request.ts), and the raw songs every backend returns, which the shared finishing stage
 * (finish.ts) turns into the spec's result. A backend never writes MP3s, covers or URLs itself.
 */
import type { Logger } from 'pino';

export interface MusicRequest {
  mode: 'simple' | 'custom';
  /** What the music should be: the simple prompt, or the custom style. */
  description: string;
  /** Custom mode only (simple mode's title is derived after generation). */
  title?: string;
  /** Custom mode's style text. */
  style?: string;
  /** Lyrics to sing (custom, not instrumental), section tags included. */
  lyrics?: string;
  instrumental: boolean;
  vocalGender?: 'm' | 'f';
  /** Lower-case styles to exclude. */
  negativeTags: string[];
  /** Songs wanted: always the spec's 2. */
  songs: number;
  /** Length asked of each song, in seconds (the backend clamps to its capability). */
  seconds: number;
  /** Seeds sampling; derived from the task id so a redelivered job makes the same songs. */
  seed: number;
}

export interface MusicCapabilities {
  vocals: boolean;
  /** Sings given lyrics. */
  lyrics: boolean;
  /** Writes lyrics itself from a description (simple mode with vocals). */
  writesLyrics: boolean;
  /** Longest song it makes. */
  maxSeconds: number;
}

/** Audio a backend made: samples in memory, or a file in the job directory (downloaded). */
export type RawAudio =
  | { kind: 'pcm'; sampleRate: number; channels: number; /** Interleaved, -1..1. */ samples: Float32Array }
  | { kind: 'file'; path: string };

export interface RawSong {
  audio: RawAudio;
  /** What the backend says; the finishing stage decides the final values. */
  title?: string;
  tags?: string;
  /** Lyrics it sang (ACE-Step and Suno write them in simple mode). */
  lyrics?: string;
  /** A cover image file in the job directory. */
  imagePath?: string;
}

export interface MusicProgress {
  stage: string;
  done?: number;
  total?: number;
  unit?: string;
}

export interface GenerateContext {
  /** The job's temporary directory: downloads and intermediate files go here. */
  dir: string;
  signal: AbortSignal;
  logger: Logger;
  onProgress(progress: MusicProgress): void;
}

/** Ready, or why not (what is missing), for /readyz and for the job's GENERATION_FAILED message. */
export type Readiness = { ready: true } | { ready: false; reason: string };

export interface MusicBackend {
  readonly name: string;
  readonly capabilities: MusicCapabilities;
  /** Cheap check (files present, server answering); never generates. */
  readiness(signal?: AbortSignal): Promise<Readiness>;
  generate(request: MusicRequest, ctx: GenerateContext): Promise<RawSong[]>;
  /** Frees sessions (shutdown). */
  release?(): Promise<void>;
}

/** Spec 2.3's song and music result: the contract's (jobs/results.ts). */
export type { MusicResult, Song } from '../../../jobs/index.js';
