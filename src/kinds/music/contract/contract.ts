/**
 * Music generation (`vendor-v5-generate-music`, spec 1.5, 2.3, 4.4): its descriptor and everything
 * the contract decides for it. The backends are in src/kinds/music/pipeline/, bound in src/kinds/music/runtime.ts.
 */
import { z } from 'zod';
import { optionalBoolean, optionalEnum, optionalText, requiredText } from '../../../jobs/fields.js';
import type { Fields, KindDescriptor } from '../../../jobs/kind-contract.js';
import { text as openapiText } from '../../../jobs/openapi-parts.js';
import { parseQuote, refuse, samePrice } from '../../../jobs/quote-recheck.js';
import {
  MUSIC_AUDIO_URL_LIFETIME_DAYS,
  MUSIC_LYRICS_MAX_CHARS,
  MUSIC_NEGATIVE_TAGS_MAX_CHARS,
  MUSIC_PROMPT_MAX_CHARS,
  MUSIC_STYLE_MAX_CHARS,
  MUSIC_TITLE_MAX_CHARS,
  VOCAL_GENDERS,
  type MusicInput,
  type MusicJob,
  type MusicQuoteInput,
  type MusicTypes,
  type QuotedMusicJob,
} from './types.js';
import { MUSIC_CREDITS, priceMusic } from './price.js';
import { envelope, text } from '../../../jobs/wire-parts.js';

export const MUSIC_MODEL = 'vendor-v5-generate-music';

/** The id a completed music task reports instead of the id it was submitted with (spec 2.3). */
export const MUSIC_REPORTED_MODEL = 'vendor/generate-music';

const MINUTE = 60_000;

function parse(input: Fields): MusicJob {
  return { model: MUSIC_MODEL, input: musicInput(input) };
}

function musicInput(input: Fields): MusicInput {
  // These two decide which of the spec's rules apply, so they are read before any of them.
  const customMode = optionalBoolean(input, 'custom_mode', false, 'INVALID_JOB');
  const instrumental = optionalBoolean(input, 'instrumental', false, 'INVALID_JOB');

  if (!customMode) {
    const prompt = requiredText(input, 'prompt', 'MISSING_PROMPT', MUSIC_PROMPT_MAX_CHARS, 'PROMPT_TOO_LONG');
    return { custom_mode: false, prompt, instrumental };
  }

  const style = requiredText(input, 'style', 'MISSING_STYLE', MUSIC_STYLE_MAX_CHARS, 'STYLE_TOO_LONG');
  const title = requiredText(input, 'title', 'MISSING_TITLE', MUSIC_TITLE_MAX_CHARS, 'TITLE_TOO_LONG');
  const lyrics = instrumental
    ? optionalText(input, 'lyrics', MUSIC_LYRICS_MAX_CHARS, 'LYRICS_TOO_LONG')
    : requiredText(input, 'lyrics', 'MISSING_LYRICS', MUSIC_LYRICS_MAX_CHARS, 'LYRICS_TOO_LONG');
  const vocal_gender = optionalEnum(input, 'vocal_gender', VOCAL_GENDERS, undefined, 'INVALID_VOCAL_GENDER');
  const negative_tags = optionalText(input, 'negative_tags', MUSIC_NEGATIVE_TAGS_MAX_CHARS, 'INVALID_JOB');

  return {
    custom_mode: true,
    title,
    style,
    ...(lyrics === undefined ? {} : { lyrics }),
    instrumental,
    ...(vocal_gender === undefined ? {} : { vocal_gender }),
    ...(negative_tags === undefined ? {} : { negative_tags }),
  };
}

const musicSimpleInput = z.object({
  custom_mode: z.literal(false).optional(),
  prompt: text.max(MUSIC_PROMPT_MAX_CHARS),
  instrumental: z.boolean().optional(),
});

const musicCustomFields = {
  custom_mode: z.literal(true),
  title: text.max(MUSIC_TITLE_MAX_CHARS),
  style: text.max(MUSIC_STYLE_MAX_CHARS),
  vocal_gender: z.enum(VOCAL_GENDERS).optional(),
  negative_tags: z.string().optional(),
};

export const musicJobSchema = z
  .object({
    ...envelope,
    model: z.literal(MUSIC_MODEL),
    input: z.union([
      musicSimpleInput,
      z.object({
        ...musicCustomFields,
        lyrics: text.max(MUSIC_LYRICS_MAX_CHARS),
        instrumental: z.literal(false).optional(),
      }),
      z.object({
        ...musicCustomFields,
        lyrics: z.string().max(MUSIC_LYRICS_MAX_CHARS).optional(),
        instrumental: z.literal(true),
      }),
    ]),
  })
  .strict();

export const musicQuoteSchema = z.object({
  model: z.literal(MUSIC_MODEL),
  creditsUsed: z.number(),
  input: z.union([
    z.object({ custom_mode: z.literal(false), prompt: z.string(), instrumental: z.boolean() }),
    z.object({ custom_mode: z.literal(true), title: z.string(), style: z.string(), instrumental: z.boolean() }),
  ]),
});

export const musicResultSchema = z.object({
  songs: z.array(
    z.object({
      audio_url: z.string(),
      image_url: z.string(),
      duration: z.number(),
      title: z.string(),
      tags: z.string(),
      prompt: z.string(),
    }),
  ),
});

/** Nothing to fetch: the price is fixed. */
async function quote(job: MusicJob): Promise<QuotedMusicJob> {
  const { input } = job;
  const echo: MusicQuoteInput = input.custom_mode
    ? { custom_mode: true, title: input.title, style: input.style, instrumental: input.instrumental }
    : { custom_mode: false, prompt: input.prompt, instrumental: input.instrumental };
  return {
    kind: 'music',
    job,
    quote: { model: job.model, creditsUsed: priceMusic().creditsUsed, input: echo },
    inputs: {},
    probes: {},
  };
}

const musicSimple = {
  title: 'MusicSimpleInput',
  type: 'object',
  properties: {
    custom_mode: { type: 'boolean', enum: [false], default: false },
    prompt: openapiText(MUSIC_PROMPT_MAX_CHARS, 'what the song is about'),
    instrumental: { type: 'boolean', default: false },
  },
  required: ['prompt'],
};

// Custom mode: lyrics unless instrumental, said by the schema (two shapes told apart by
// `instrumental`) so that validators and generated clients enforce it, as parseJob does.
const musicCustomOpenApiFields = {
  custom_mode: { type: 'boolean', enum: [true] },
  title: openapiText(MUSIC_TITLE_MAX_CHARS, 'song title'),
  style: openapiText(MUSIC_STYLE_MAX_CHARS, 'style tags'),
  vocal_gender: { type: 'string', enum: [...VOCAL_GENDERS] },
  negative_tags: openapiText(MUSIC_NEGATIVE_TAGS_MAX_CHARS, "styles to avoid (limit chosen by this API: the style's)"),
};

const musicCustomSong = {
  title: 'MusicCustomInput',
  description: 'Custom mode with vocals: lyrics required (MISSING_LYRICS)',
  type: 'object',
  properties: {
    ...musicCustomOpenApiFields,
    lyrics: openapiText(MUSIC_LYRICS_MAX_CHARS, 'the lyrics sung'),
    // No default: a generated client would make it required (openapi-typescript reads defaults so).
    instrumental: { type: 'boolean', enum: [false] },
  },
  required: ['custom_mode', 'title', 'style', 'lyrics'],
};

const musicCustomInstrumental = {
  title: 'MusicCustomInstrumentalInput',
  description: 'Custom mode without vocals: lyrics optional',
  type: 'object',
  properties: {
    ...musicCustomOpenApiFields,
    lyrics: openapiText(MUSIC_LYRICS_MAX_CHARS, 'optional for an instrumental'),
    instrumental: { type: 'boolean', enum: [true] },
  },
  required: ['custom_mode', 'title', 'style', 'instrumental'],
};

export const musicKind: KindDescriptor<MusicTypes> = {
  kind: 'music',
  label: 'music',
  models: [MUSIC_MODEL],
  reportedModel: MUSIC_REPORTED_MODEL,
  mediaType: 'music',
  onGenerate: true,
  parse,
  minimumCredits: () => MUSIC_CREDITS,
  quote,
  recheck(_job, reply) {
    const q = parseQuote(musicQuoteSchema, reply);
    if (typeof q === 'string') return refuse(q);
    return samePrice(q.input, [q.creditsUsed, priceMusic().creditsUsed, 'creditsUsed']);
  },
  schemas: {
    job: musicJobSchema,
    quote: musicQuoteSchema,
    result: musicResultSchema,
    resultTitle: 'Result of a completed music task',
  },
  resultUrls: (result) => result.songs.flatMap((song) => [song.audio_url, song.image_url]),
  resultLifetimeDays: MUSIC_AUDIO_URL_LIFETIME_DAYS,
  failure: { code: 'GENERATION_FAILED', opening: 'Processing failed' },
  // Off unless a host is given a backend (MEDIA_WORKER_MUSIC_BACKENDS).
  settings: { concurrency: 0, watchdogMs: 10 * MINUTE, maxQueueAgeMs: 60 * MINUTE, pendingLifetimeMs: 60 * MINUTE },
  openapi: {
    // The spec's own model of the unified endpoint (spec 1.5): listed first.
    unified: {
      name: 'GenerateMusic',
      input: { oneOf: [musicSimple, musicCustomSong, musicCustomInstrumental] },
      first: true,
    },
    result: {
      title: 'MusicResult',
      type: 'object',
      properties: {
        songs: {
          type: 'array',
          minItems: 2,
          maxItems: 2,
          items: {
            type: 'object',
            properties: {
              audio_url: { type: 'string' },
              image_url: { type: 'string' },
              duration: { type: 'number' },
              title: { type: 'string' },
              tags: { type: 'string' },
              prompt: { type: 'string' },
            },
            required: ['audio_url', 'image_url', 'duration', 'title', 'tags', 'prompt'],
          },
        },
      },
      required: ['songs'],
    },
  },
};
