/**
 * The contract's messages as zod object schemas, from which the language-neutral JSON Schemas under
 * docs/schemas/ are generated (scripts/export-schemas.ts): the job (a job message's body and a quote
 * request), the quote reply, and each kind's result.
 *
 * Validation itself stays in schemas.ts, which checks field by field in the spec's order so that
 * the first problem names the right code; these schemas describe the same shapes with the same
 * constants (model ids, enumerations, length limits). Tests keep the two in step: the TypeScript
 * types of quotes and results must equal what these schemas infer, and parseJob must accept
 * exactly the jobs the job schema accepts.
 */
import { z } from 'zod';
import { HDR_MODES } from '../video/settings.js';
import { JobError } from '../errors.js';
import { expectedText } from './messages.js';
import { MUSIC_LYRICS_MAX_CHARS, MUSIC_PROMPT_MAX_CHARS, MUSIC_STYLE_MAX_CHARS, MUSIC_TITLE_MAX_CHARS } from './limits.js';
import { IMAGE_UPSCALE_MODEL, LIPSYNC_MODEL_IDS, MUSIC_MODEL, VIDEO_UPSCALE_MODEL } from './models.js';
import { SYNC_MODES, UPSCALE_FACTORS, VOCAL_GENDERS } from './types.js';

/** A task id: a subject token and a path segment. */
export const TASK_ID_REGEX = /^[A-Za-z0-9_-]{1,128}$/;

/** The fields a job message carries besides `model` and `input`; any other is refused (INVALID_JOB). */
export const JOB_ENVELOPE_FIELDS = ['id', 'model', 'input', 'credits', 'createdAt'] as const;

const text = z.string().regex(/\S/, { message: 'not blank' });
const url = text.describe('A public https URL (checked when fetched: INVALID_URL, FETCH_FAILED)');
const upscaleFactor = z.enum(UPSCALE_FACTORS).describe('Default "2"');

const envelope = {
  id: z.string().regex(TASK_ID_REGEX).optional().describe('Task id; the Nats-Msg-Id header wins and must agree'),
  credits: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER).optional().describe('What the control plane deducted: echoed as creditsRefunded on failure'),
  createdAt: z.string().optional().describe('ISO 8601 submission time, echoed in the event (else when the stream stored the job)'),
};

const imageJobSchema = z
  .object({
    ...envelope,
    model: z.literal(IMAGE_UPSCALE_MODEL),
    input: z.object({ image_url: url, upscale_factor: upscaleFactor.optional() }),
  })
  .strict();

/** The video pipelines' HDR choice (video upscale and lip-sync alike). */
const hdr = z.enum(HDR_MODES).optional().describe('HDR (PQ, HLG) input kept as 10-bit HDR ("keep") or tone-mapped to SDR ("sdr"); default: the worker\'s setting');

const videoJobSchema = z
  .object({
    ...envelope,
    model: z.literal(VIDEO_UPSCALE_MODEL),
    input: z.object({
      video_url: url,
      upscale_factor: upscaleFactor.optional(),
      hdr,
    }),
  })
  .strict();

const lipsyncJobSchema = z
  .object({
    ...envelope,
    model: z.enum(LIPSYNC_MODEL_IDS),
    input: z.object({
      video_url: url,
      audio_url: url,
      sync_mode: z.enum(SYNC_MODES).optional().describe('Default "cut_off"'),
      active_speaker: z.boolean().optional(),
      hdr,
    }),
  })
  .strict();

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

const musicJobSchema = z
  .object({
    ...envelope,
    model: z.literal(MUSIC_MODEL),
    input: z.union([
      musicSimpleInput,
      z.object({ ...musicCustomFields, lyrics: text.max(MUSIC_LYRICS_MAX_CHARS), instrumental: z.literal(false).optional() }),
      z.object({ ...musicCustomFields, lyrics: z.string().max(MUSIC_LYRICS_MAX_CHARS).optional(), instrumental: z.literal(true) }),
    ]),
  })
  .strict();

/** A job message's body (`media.jobs.<kind>.<model>`) and a quote request (`media.quote`). */
export const jobMessageSchema = z.union([imageJobSchema, videoJobSchema, lipsyncJobSchema, musicJobSchema]);

// Quotes (the reply of `media.quote`, as `media-worker quote` prints them).

const estimate = {
  estimated_frames: z.number().optional(),
  estimated_seconds: z.number().optional(),
  hardware_class: z.string().optional(),
};

/** What one file was measured as (docs/contract.md, "The bill is what runs"). */
const measuredStreamsSchema = z
  .object({
    from: z.literal('streams'),
    video: z.object({ seconds: z.number(), frames: z.number().int(), frame_rate: z.string() }).optional(),
    audio: z.object({ seconds: z.number() }).optional(),
    declared_seconds: z.number().optional().describe("The headers' duration, where it differs from the streams' by over 1 %"),
  })
  .describe("Measured from the streams' packets, never from headers");

export const imageQuoteSchema = z.object({
  model: z.literal(IMAGE_UPSCALE_MODEL),
  creditsUsed: z.number(),
  input: z.object({
    image_url: z.string(),
    upscale_factor: z.enum(UPSCALE_FACTORS),
    detected_dimensions: z.string().describe('<width>×<height> (U+00D7), the displayed size'),
    output_tier: z.enum(['24mp', '48mp', '96mp']),
  }),
  ...estimate,
});

export const videoQuoteSchema = z.object({
  model: z.literal(VIDEO_UPSCALE_MODEL),
  creditsUsed: z.number(),
  input: z.object({
    video_url: z.string(),
    upscale_factor: z.enum(UPSCALE_FACTORS),
    detected_duration: z.string().describe('Seconds, then "s": "12.5s"'),
    billed_seconds: z.number(),
    credits_per_second: z.number(),
  }),
  ...estimate,
  measured: z.object({ video: measuredStreamsSchema }),
});

export const lipsyncQuoteSchema = z.object({
  model: z.enum(LIPSYNC_MODEL_IDS),
  creditsUsed: z.number(),
  duration: z.number().describe('Measured video duration in seconds'),
  input: z.object({
    video_url: z.string(),
    audio_url: z.string(),
    sync_mode: z.enum(SYNC_MODES),
    active_speaker: z.boolean(),
    model: z.enum(LIPSYNC_MODEL_IDS),
    billed_seconds: z.number(),
    credits_per_second: z.number(),
  }),
  ...estimate,
  measured: z.object({ video: measuredStreamsSchema, audio: measuredStreamsSchema }),
});

export const musicQuoteSchema = z.object({
  model: z.literal(MUSIC_MODEL),
  creditsUsed: z.number(),
  input: z.union([
    z.object({ custom_mode: z.literal(false), prompt: z.string(), instrumental: z.boolean() }),
    z.object({ custom_mode: z.literal(true), title: z.string(), style: z.string(), instrumental: z.boolean() }),
  ]),
});

export const quoteReplySchema = z.union([imageQuoteSchema, videoQuoteSchema, lipsyncQuoteSchema, musicQuoteSchema]);

/** A refusal (quote, cancel): the body beside the framework's Nats-Service-Error headers. */
export const errorReplySchema = z.object({
  error: z.object({ code: z.string(), status: z.number().int(), message: z.string() }),
});

// Results: the `result` of a completed event, per kind (spec 2.3 for lip-sync and music).

export const imageResultSchema = z.object({
  url: z.string(),
  type: z.literal('image'),
  width: z.number(),
  height: z.number(),
  format: z.string(),
});

export const videoResultSchema = z.object({
  url: z.string(),
  type: z.literal('video'),
  width: z.number(),
  height: z.number(),
  duration: z.number().describe('Seconds'),
  frames: z.number(),
});

export const lipsyncResultSchema = z.object({
  url: z.string(),
  type: z.literal('video'),
  duration: z.number(),
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

/**
 * Job messages and quote requests with a field outside the envelope (`priority`, `deadline`, a
 * typo) are refused rather than silently dropped: the sender would believe it had an effect.
 * Unknown fields inside `input` are ignored, as the spec's HTTP bodies are (docs/protocol.md).
 */
export function checkJobEnvelope(raw: unknown): void {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return; // parseJob names that
  const unknown = Object.keys(raw).filter((key) => !(JOB_ENVELOPE_FIELDS as readonly string[]).includes(key));
  if (unknown.length > 0) {
    throw new JobError(
      'INVALID_JOB',
      expectedText('job', `only the fields ${JOB_ENVELOPE_FIELDS.join(', ')}`, `also ${unknown.slice(0, 5).map((k) => JSON.stringify(k.slice(0, 64))).join(', ')}`),
    );
  }
}
