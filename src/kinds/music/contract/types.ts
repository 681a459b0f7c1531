/**
 * Music's types and limits: its job, its quote and its result (spec 1.5, 2.3, 4.4, section 8). A
 * file of its own without runtime imports: the registry's type map (kinds/index.ts) reads it as
 * well as the kind's descriptor (contract.ts).
 */
import type { JobBase } from '../../../jobs/types.js';

export const MUSIC_SONGS_PER_GENERATION = 2;
export const MUSIC_PROMPT_MAX_CHARS = 500;
export const MUSIC_LYRICS_MAX_CHARS = 5000;
export const MUSIC_STYLE_MAX_CHARS = 1000;
export const MUSIC_TITLE_MAX_CHARS = 80;
/** Not in the spec (docs/contract.md): the style's limit, so no field of a job is unbounded. */
export const MUSIC_NEGATIVE_TAGS_MAX_CHARS = 1000;
export const MUSIC_AUDIO_URL_LIFETIME_DAYS = 14;

export const VOCAL_GENDERS = ['m', 'f'] as const;
export type VocalGender = (typeof VOCAL_GENDERS)[number];

export interface MusicSimpleInput {
  custom_mode: false;
  prompt: string;
  instrumental: boolean;
}

export interface MusicCustomInput {
  custom_mode: true;
  title: string;
  style: string;
  /** Absent only when instrumental is true. */
  lyrics?: string;
  instrumental: boolean;
  vocal_gender?: VocalGender;
  negative_tags?: string;
}

export type MusicInput = MusicSimpleInput | MusicCustomInput;

export interface MusicJob extends JobBase {
  model: 'vendor-v5-generate-music';
  input: MusicInput;
}

export type MusicQuoteInput =
  | { custom_mode: false; prompt: string; instrumental: boolean }
  | { custom_mode: true; title: string; style: string; instrumental: boolean };

export interface MusicQuote {
  model: MusicJob['model'];
  creditsUsed: number;
  input: MusicQuoteInput;
}

export interface QuotedMusicJob {
  kind: 'music';
  job: MusicJob;
  quote: MusicQuote;
  inputs: { image?: undefined; video?: undefined; audio?: undefined };
  probes: { image?: undefined; video?: undefined; audio?: undefined };
}

/** One finished song: the spec 2.3 `songs[]` entry. */
export interface Song {
  audio_url: string;
  image_url: string;
  duration: number;
  title: string;
  tags: string;
  prompt: string;
}

/** Spec 2.3's music result: exactly two songs. */
export interface MusicResult {
  songs: Song[];
}

/** What music's descriptor is typed by (KindDescriptor). */
export interface MusicTypes {
  kind: 'music';
  job: MusicJob;
  quote: MusicQuote;
  quoted: QuotedMusicJob;
  result: MusicResult;
}
