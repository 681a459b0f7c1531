/**
 * The contract of `vendor-music-video` (docs/music-video.md): its fields, limits and error codes,
 * and the parser that turns an untrusted `input` object into a MusicVideoInput.
 *
 * The parser checks the fields in the order of the table in docs/music-video.md (audio_url,
 * image_url, title, style, aspect_ratio); the first failing check wins, as in jobs/schemas.ts. Each
 * field has its own small zod schema for that reason: one object schema would report every issue
 * at once, unranked. Pure: no I/O, nothing of ffmpeg, so the gateway can import it.
 */
import { z } from 'zod';
import { JobError, type ErrorCode } from '../errors.js';
import { charCount, expectedText, expectedValue, oneOf } from '../jobs/index.js';
import type { ContainerKind, ImageFormat } from '../media/index.js';

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
/** The processing failure code, for the contract's failure mapping (jobs/failures.ts KIND_FAILURE_CODE). */
export const MUSIC_VIDEO_FAILURE_CODE = 'MUSIC_VIDEO_FAILED' satisfies ErrorCode;

/** Every code this kind answers with, in the order a request meets them, and why (docs/music-video.md). */
export const MUSIC_VIDEO_ERROR_CODES = [
  ['INVALID_JOB', 'input is not an object'],
  ['MISSING_AUDIO_URL', 'audio_url absent, empty or not a string'],
  ['MISSING_IMAGE_URL', 'image_url absent, empty or not a string'],
  ['INVALID_TITLE', 'title is not a string'],
  ['TITLE_TOO_LONG', 'title over 80 characters'],
  ['INVALID_STYLE', 'style not waveform, spectrum or still'],
  ['INVALID_ASPECT_RATIO', 'aspect_ratio not 16:9, 1:1 or 9:16'],
  ['INSUFFICIENT_CREDITS', 'balance too low'],
  ['INVALID_URL', 'a URL that is not https (or not a URL)'],
  ['FETCH_FAILED', 'an input could not be fetched'],
  ['INPUT_TOO_LARGE', 'an input over the size limit of its kind'],
  ['PROBE_FAILED', 'audio not MP3, WAV, AAC, OGG, M4A or FLAC by its content, or damaged; cover not JPEG, PNG or WebP, or damaged'],
  ['AUDIO_TOO_LONG', 'audio over 8 minutes, as measured by decoding it'],
  ['MUSIC_VIDEO_FAILED', 'rendering failed'],
] as const satisfies readonly (readonly [ErrorCode, string])[];

export interface MusicVideoInput {
  audio_url: string;
  image_url: string;
  title?: string;
  style: MusicVideoStyle;
  aspect_ratio: MusicVideoAspectRatio;
}

const titleSchema = z
  .string()
  .refine((s) => charCount(s) <= MUSIC_VIDEO_TITLE_MAX_CHARS, { message: `at most ${MUSIC_VIDEO_TITLE_MAX_CHARS} characters` });

/** The parsed input's shape, for the wire and the generated documents (the parser is what validates). */
export const musicVideoInputSchema = z.object({
  audio_url: z.string().min(1),
  image_url: z.string().min(1),
  title: titleSchema.optional(),
  style: z.enum(MUSIC_VIDEO_STYLES).default(DEFAULT_MUSIC_VIDEO_STYLE),
  aspect_ratio: z.enum(MUSIC_VIDEO_ASPECT_RATIOS).default(DEFAULT_MUSIC_VIDEO_ASPECT_RATIO),
});

type Fields = Readonly<Record<string, unknown>>;

const objectSchema = z.record(z.string(), z.unknown());
const nonBlank = z.string().refine((s) => s.trim() !== '');

/** Parses the `input` of a music video job; throws the JobError of the first failing check. */
export function parseMusicVideoInput(raw: unknown): MusicVideoInput {
  // An absent input is an empty one: MISSING_AUDIO_URL names what is missing.
  const value = raw === undefined || raw === null ? {} : raw;
  if (!objectSchema.safeParse(value).success) throw new JobError('INVALID_JOB', expectedValue('input', 'an object', value));
  const fields = value as Fields;
  const audio_url = requiredUrl(fields, 'audio_url', 'MISSING_AUDIO_URL');
  const image_url = requiredUrl(fields, 'image_url', 'MISSING_IMAGE_URL');
  const title = optionalTitle(fields);
  const style = optionalChoice(fields, 'style', MUSIC_VIDEO_STYLES, DEFAULT_MUSIC_VIDEO_STYLE, 'INVALID_STYLE');
  const aspect_ratio = optionalChoice(fields, 'aspect_ratio', MUSIC_VIDEO_ASPECT_RATIOS, DEFAULT_MUSIC_VIDEO_ASPECT_RATIO, 'INVALID_ASPECT_RATIO');
  return { audio_url, image_url, ...(title === undefined ? {} : { title }), style, aspect_ratio };
}

/** Own properties only, null as absent (the rules of jobs/schemas.ts). */
function read(fields: Fields, key: string): unknown {
  const value = Object.hasOwn(fields, key) ? fields[key] : undefined;
  return value === null ? undefined : value;
}

function requiredUrl(fields: Fields, key: string, missing: ErrorCode): string {
  const value = read(fields, key);
  if (!nonBlank.safeParse(value).success) throw new JobError(missing, expectedValue(key, 'a non-empty string', value));
  return value as string;
}

/** Absent, null or whitespace-only: no title drawn. */
function optionalTitle(fields: Fields): string | undefined {
  const value = read(fields, 'title');
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw new JobError('INVALID_TITLE', expectedValue('title', 'a string', value));
  if (value.trim() === '') return undefined;
  if (!titleSchema.safeParse(value).success) {
    throw new JobError('TITLE_TOO_LONG', expectedText('title', `at most ${MUSIC_VIDEO_TITLE_MAX_CHARS} characters`, `${charCount(value)} characters`));
  }
  return value;
}

function optionalChoice<const T extends string>(fields: Fields, key: string, values: readonly [T, ...T[]], fallback: T, invalid: ErrorCode): T {
  const value = read(fields, key);
  if (value === undefined) return fallback;
  const parsed = z.enum(values).safeParse(value);
  if (!parsed.success) throw new JobError(invalid, expectedValue(key, oneOf(values), value));
  return parsed.data as T;
}
