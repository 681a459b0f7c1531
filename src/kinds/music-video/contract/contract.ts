/**
 * `vendor-music-video` (docs/music-video.md): its descriptor and everything the contract decides
 * for it: the parser that turns an untrusted `input` into a MusicVideoInput, its wire and OpenAPI
 * schemas, quote, re-check, result and failure. The render is in src/kinds/music-video/pipeline/, bound in
 * src/kinds/music-video/runtime.ts.
 *
 * The parser checks the fields in the order of the table in docs/music-video.md (audio_url,
 * image_url, title, style, aspect_ratio); the first failing check wins. Each field has its own
 * small zod schema for that reason: one object schema would report every issue at once, unranked.
 */
import { z } from 'zod';
import { JobError, type ErrorCode } from '../../../errors.js';
import type { Fields, KindDescriptor } from '../../../jobs/kind-contract.js';
import { charCount, expectedText, expectedValue, oneOf } from '../../../jobs/messages.js';
import { text as openapiText, url as openapiUrl } from '../../../jobs/openapi-parts.js';
import { parseQuote, refuse, sameDurationPrice, sameEcho } from '../../../jobs/quote-recheck.js';
import { envelope, url } from '../../../jobs/wire-parts.js';
import { quoteMusicVideo } from './measure.js';
import {
  DEFAULT_MUSIC_VIDEO_ASPECT_RATIO,
  DEFAULT_MUSIC_VIDEO_STYLE,
  MUSIC_VIDEO_ASPECT_RATIOS,
  MUSIC_VIDEO_MODEL,
  MUSIC_VIDEO_RESULT_URL_LIFETIME_DAYS,
  MUSIC_VIDEO_STYLES,
  MUSIC_VIDEO_TITLE_MAX_CHARS,
  type MusicVideoInput,
  type MusicVideoJob,
  type MusicVideoTypes,
} from './types.js';
import { MUSIC_VIDEO_MINIMUM_CREDITS, priceMusicVideo } from './price.js';

const MINUTE = 60_000;
/** The processing failure code. */
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
  [
    'PROBE_FAILED',
    'audio not MP3, WAV, AAC, OGG, M4A or FLAC by its content, or damaged; cover not JPEG, PNG or WebP, or damaged',
  ],
  ['AUDIO_TOO_LONG', 'audio over 8 minutes, as measured by decoding it'],
  ['MUSIC_VIDEO_FAILED', 'rendering failed'],
] as const satisfies readonly (readonly [ErrorCode, string])[];

const titleSchema = z.string().refine((s) => charCount(s) <= MUSIC_VIDEO_TITLE_MAX_CHARS, {
  message: `at most ${MUSIC_VIDEO_TITLE_MAX_CHARS} characters`,
});

/** The parsed input's shape (the parser is what validates). */
export const musicVideoInputSchema = z.object({
  audio_url: z.string().min(1),
  image_url: z.string().min(1),
  title: titleSchema.optional(),
  style: z.enum(MUSIC_VIDEO_STYLES).default(DEFAULT_MUSIC_VIDEO_STYLE),
  aspect_ratio: z.enum(MUSIC_VIDEO_ASPECT_RATIOS).default(DEFAULT_MUSIC_VIDEO_ASPECT_RATIO),
});

const objectSchema = z.record(z.string(), z.unknown());
const nonBlank = z.string().refine((s) => s.trim() !== '');

/** Parses the `input` of a music video job; throws the JobError of the first failing check. */
export function parseMusicVideoInput(raw: unknown): MusicVideoInput {
  // An absent input is an empty one: MISSING_AUDIO_URL names what is missing.
  const value = raw === undefined || raw === null ? {} : raw;
  if (!objectSchema.safeParse(value).success)
    throw new JobError('INVALID_JOB', expectedValue('input', 'an object', value));
  const fields = value as Fields;
  const audio_url = requiredUrl(fields, 'audio_url', 'MISSING_AUDIO_URL');
  const image_url = requiredUrl(fields, 'image_url', 'MISSING_IMAGE_URL');
  const title = optionalTitle(fields);
  const style = optionalChoice(fields, 'style', MUSIC_VIDEO_STYLES, DEFAULT_MUSIC_VIDEO_STYLE, 'INVALID_STYLE');
  const aspect_ratio = optionalChoice(
    fields,
    'aspect_ratio',
    MUSIC_VIDEO_ASPECT_RATIOS,
    DEFAULT_MUSIC_VIDEO_ASPECT_RATIO,
    'INVALID_ASPECT_RATIO',
  );
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
    throw new JobError(
      'TITLE_TOO_LONG',
      expectedText('title', `at most ${MUSIC_VIDEO_TITLE_MAX_CHARS} characters`, `${charCount(value)} characters`),
    );
  }
  return value;
}

function optionalChoice<const T extends string>(
  fields: Fields,
  key: string,
  values: readonly [T, ...T[]],
  fallback: T,
  invalid: ErrorCode,
): T {
  const value = read(fields, key);
  if (value === undefined) return fallback;
  const parsed = z.enum(values).safeParse(value);
  if (!parsed.success) throw new JobError(invalid, expectedValue(key, oneOf(values), value));
  return parsed.data as T;
}

export const musicVideoJobSchema = z
  .object({
    ...envelope,
    model: z.literal(MUSIC_VIDEO_MODEL),
    input: z.object({
      audio_url: url,
      image_url: url,
      title: titleSchema.optional(),
      style: z.enum(MUSIC_VIDEO_STYLES).optional().describe(`Default "${DEFAULT_MUSIC_VIDEO_STYLE}"`),
      aspect_ratio: z
        .enum(MUSIC_VIDEO_ASPECT_RATIOS)
        .optional()
        .describe(`Default "${DEFAULT_MUSIC_VIDEO_ASPECT_RATIO}"`),
    }),
  })
  .strict();

export const musicVideoQuoteSchema = z.object({
  model: z.literal(MUSIC_VIDEO_MODEL),
  creditsUsed: z.number(),
  input: z.object({
    audio_url: z.string(),
    image_url: z.string(),
    title: z.string().optional(),
    style: z.enum(MUSIC_VIDEO_STYLES),
    aspect_ratio: z.enum(MUSIC_VIDEO_ASPECT_RATIOS),
    detected_duration: z.string().describe('The decoded audio duration: seconds, then "s": "12.4s"'),
    billed_seconds: z.number(),
    credits_per_second: z.number(),
  }),
});

export const musicVideoResultSchema = z.object({
  url: z.string(),
  type: z.literal('video'),
  duration: z.number().describe("Seconds: the measured audio's"),
  width: z.number(),
  height: z.number(),
});

const musicVideoInput = {
  title: 'MusicVideoInput',
  type: 'object',
  properties: {
    audio_url: openapiUrl(
      "public URL of the song: MP3, WAV, AAC, OGG, M4A or FLAC, at most 8 minutes (a generated song's audio_url works as it is)",
    ),
    image_url: openapiUrl("public URL of the cover: JPEG, PNG or WebP (a generated song's image_url works as it is)"),
    title: openapiText(MUSIC_VIDEO_TITLE_MAX_CHARS, 'drawn on the video under the cover'),
    style: {
      type: 'string',
      enum: [...MUSIC_VIDEO_STYLES],
      default: DEFAULT_MUSIC_VIDEO_STYLE,
      description: 'the visualiser: a waveform, a spectrum, or none',
    },
    aspect_ratio: {
      type: 'string',
      enum: [...MUSIC_VIDEO_ASPECT_RATIOS],
      default: DEFAULT_MUSIC_VIDEO_ASPECT_RATIO,
      description: '1920x1080, 1080x1080 or 1080x1920',
    },
  },
  required: ['audio_url', 'image_url'],
};

export const musicVideoKind: KindDescriptor<MusicVideoTypes> = {
  kind: 'music-video',
  label: 'music video',
  models: [MUSIC_VIDEO_MODEL],
  onGenerate: true,
  parse: (input): MusicVideoJob => ({ model: MUSIC_VIDEO_MODEL, input: parseMusicVideoInput(input) }),
  minimumCredits: () => MUSIC_VIDEO_MINIMUM_CREDITS,
  quote: (job, deps, signal) =>
    quoteMusicVideo(job, deps, {
      ...(signal === undefined ? {} : { signal }),
      ...(deps.ffmpegPath === undefined ? {} : { ffmpegPath: deps.ffmpegPath }),
    }),
  recheck(job, reply) {
    const q = parseQuote(musicVideoQuoteSchema, reply);
    if (typeof q === 'string') return refuse(q);
    const { input } = job;
    const same = sameEcho(
      [q.input.audio_url, input.audio_url, 'audio_url'],
      [q.input.image_url, input.image_url, 'image_url'],
      [q.input.title, input.title, 'title'],
      [q.input.style, input.style, 'style'],
      [q.input.aspect_ratio, input.aspect_ratio, 'aspect_ratio'],
    );
    if (same !== null) return refuse(same);
    return sameDurationPrice(q.input, q.creditsUsed, priceMusicVideo);
  },
  schemas: {
    job: musicVideoJobSchema,
    quote: musicVideoQuoteSchema,
    result: musicVideoResultSchema,
    resultTitle: `Result of a completed ${MUSIC_VIDEO_MODEL} task`,
  },
  resultUrls: (result) => [result.url],
  resultLifetimeDays: MUSIC_VIDEO_RESULT_URL_LIFETIME_DAYS,
  failure: { code: MUSIC_VIDEO_FAILURE_CODE, opening: 'Rendering the music video failed' },
  // No network, no GPU: one render at a time on a host that passes its readiness.
  settings: { concurrency: 1, watchdogMs: 30 * MINUTE, maxQueueAgeMs: 120 * MINUTE, pendingLifetimeMs: 120 * MINUTE },
  openapi: {
    unified: { name: 'GenerateMusicVideo', input: musicVideoInput },
    result: {
      title: 'MusicVideoResult',
      type: 'object',
      properties: {
        url: { type: 'string' },
        type: { type: 'string', enum: ['video'] },
        duration: { type: 'number' },
        width: { type: 'integer', enum: [1920, 1080] },
        height: { type: 'integer', enum: [1080, 1920] },
      },
      // No `frames`, which the video upscale's has: the two shapes exclude each other.
      required: ['url', 'type', 'duration', 'width', 'height'],
      additionalProperties: false,
    },
  },
};
