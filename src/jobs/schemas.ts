/**
 * Validation at the edge: turns an untrusted JSON value into a `Job`, or throws the JobError the
 * spec's section 7 names for the first problem found.
 *
 * The statements below run in the documented validation order (docs/contract.md, "Validation
 * order"): the order of the calls in each builder IS the order of the checks, and the first failing
 * check wins. That is why each field is checked by its own small zod schema instead of one object
 * schema: zod collects every issue at once and does not rank them the way the spec's tables do.
 */
import { z } from 'zod';
import { HDR_MODES } from '../video/settings.js';
import { JobError, type ErrorCode } from '../errors.js';
import { charCount, expectedText, expectedValue, oneOf } from './messages.js';
import {
  DEFAULT_LIPSYNC_MODEL,
  IMAGE_UPSCALE_MODEL,
  LIPSYNC_MODEL_IDS,
  MODEL_IDS,
  MUSIC_MODEL,
  VIDEO_UPSCALE_MODEL,
  isLipsyncModelId,
  isModelId,
  type LipsyncModelId,
  type ModelId,
} from './models.js';
import {
  MUSIC_LYRICS_MAX_CHARS,
  MUSIC_PROMPT_MAX_CHARS,
  MUSIC_STYLE_MAX_CHARS,
  MUSIC_NEGATIVE_TAGS_MAX_CHARS,
  MUSIC_TITLE_MAX_CHARS,
} from './limits.js';
import {
  DEFAULT_SYNC_MODE,
  DEFAULT_UPSCALE_FACTOR,
  SYNC_MODES,
  TOOL_NAMES,
  UPSCALE_FACTORS,
  VOCAL_GENDERS,
  type ImageUpscaleJob,
  type Job,
  type LipsyncJob,
  type MusicInput,
  type MusicJob,
  type ToolName,
  type VideoUpscaleJob,
} from './types.js';

/** A JSON object as it arrived; values are still untrusted. */
type Fields = Readonly<Record<string, unknown>>;

const objectSchema = z.record(z.string(), z.unknown());
const nonBlankString = z.string().refine((s) => s.trim() !== '');
const anyString = z.string();
const anyBoolean = z.boolean();
const taskId = z.string().regex(/^[A-Za-z0-9_-]{1,128}$/);
const credits = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);

const NON_EMPTY_STRING = 'a non-empty string';

/**
 * Parses the unified job shape `{ id?, model, input, credits? }`: the body of the spec's
 * `POST /api/v1/generate`, extended to the lip-sync models so that one shape carries every job.
 */
export function parseJob(raw: unknown): Job {
  const fields = asObject('job', raw);
  const id = optionalId(fields);
  const credits = optionalCredits(fields);
  const model = readModel(fields);
  // An absent input is an empty one, so that the model's own MISSING_* code names what is missing.
  const rawInput = read(fields, 'input');
  const input = rawInput === undefined ? {} : asObject('input', rawInput);
  return withEnvelope(buildJob(model, input), id, credits);
}

/**
 * Normalises the flat body of a spec tool endpoint (`/api/v1/tools/<tool>`) to the unified job.
 * The upscale tools imply their model; lipsync takes an optional `model` (default vendor-lipsync-2)
 * whose check sits in the spec's table order, after sync_mode.
 */
export function normaliseToolBody(tool: ToolName, body: unknown): Job {
  switch (tool) {
    case 'upscale-image':
      return imageUpscaleJob(asObject('body', body));
    case 'upscale-video':
      return videoUpscaleJob(asObject('body', body));
    case 'lipsync':
      return lipsyncJob(asObject('body', body), (fields) =>
        optionalEnum(fields, 'model', LIPSYNC_MODEL_IDS, DEFAULT_LIPSYNC_MODEL, 'INVALID_MODEL'),
      );
    default:
      // Reached only from untyped callers (a CLI argument); the type says this cannot happen.
      throw new JobError('INVALID_JOB', expectedValue('tool', oneOf(TOOL_NAMES), tool as unknown));
  }
}

function buildJob(model: ModelId, input: Fields): Job {
  if (model === IMAGE_UPSCALE_MODEL) return imageUpscaleJob(input);
  if (model === VIDEO_UPSCALE_MODEL) return videoUpscaleJob(input);
  if (model === MUSIC_MODEL) return musicJob(input);
  if (isLipsyncModelId(model)) return lipsyncJob(input, () => model);
  // MODEL_IDS and the branches above are kept in step by the tests; this is a programming error.
  throw new JobError('INTERNAL_ERROR', `No job builder for model ${model}`);
}

function imageUpscaleJob(input: Fields): ImageUpscaleJob {
  const image_url = requiredText(input, 'image_url', 'MISSING_IMAGE_URL');
  const upscale_factor = optionalEnum(input, 'upscale_factor', UPSCALE_FACTORS, DEFAULT_UPSCALE_FACTOR, 'INVALID_UPSCALE_FACTOR');
  return { model: IMAGE_UPSCALE_MODEL, input: { image_url, upscale_factor } };
}

function videoUpscaleJob(input: Fields): VideoUpscaleJob {
  const video_url = requiredText(input, 'video_url', 'MISSING_VIDEO_URL');
  const upscale_factor = optionalEnum(input, 'upscale_factor', UPSCALE_FACTORS, DEFAULT_UPSCALE_FACTOR, 'INVALID_UPSCALE_FACTOR');
  // Absent: the worker's default (MEDIA_WORKER_VIDEO_HDR) decides (docs/contract.md, "Video fidelity").
  const hdr = optionalEnum(input, 'hdr', HDR_MODES, undefined, 'INVALID_JOB');
  return { model: VIDEO_UPSCALE_MODEL, input: { video_url, upscale_factor, ...(hdr === undefined ? {} : { hdr }) } };
}

function lipsyncJob(input: Fields, pickModel: (fields: Fields) => LipsyncModelId): LipsyncJob {
  const video_url = requiredText(input, 'video_url', 'MISSING_VIDEO_URL');
  const audio_url = requiredText(input, 'audio_url', 'MISSING_AUDIO_URL');
  const sync_mode = optionalEnum(input, 'sync_mode', SYNC_MODES, DEFAULT_SYNC_MODE, 'INVALID_SYNC_MODE');
  const model = pickModel(input);
  const active_speaker = optionalBoolean(input, 'active_speaker', false, 'INVALID_ACTIVE_SPEAKER');
  // The video upscale's field and rule: absent, the worker's default decides.
  const hdr = optionalEnum(input, 'hdr', HDR_MODES, undefined, 'INVALID_JOB');
  return { model, input: { video_url, audio_url, sync_mode, active_speaker, ...(hdr === undefined ? {} : { hdr }) } };
}

function musicJob(input: Fields): MusicJob {
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

function withEnvelope(job: Job, id: string | undefined, credits: number | undefined): Job {
  return {
    ...(id === undefined ? {} : { id }),
    ...job,
    ...(credits === undefined ? {} : { credits }),
  };
}

// ---------------------------------------------------------------------------------------------
// Field readers. Each reads one field, applies the shared rules (null means absent; whitespace-only
// text means absent) and throws the given code with the shared wording.

function read(fields: Fields, key: string): unknown {
  // Own properties only: a body of {"constructor": ...} must not reach Object.prototype.
  const value = Object.hasOwn(fields, key) ? fields[key] : undefined;
  return value === null ? undefined : value;
}

function asObject(subject: string, value: unknown): Fields {
  if (!objectSchema.safeParse(value).success) {
    throw new JobError('INVALID_JOB', expectedValue(subject, 'an object', value));
  }
  // The original, not zod's copy: copying would turn an own "__proto__" key into a prototype.
  return value as Fields;
}

function optionalId(fields: Fields): string | undefined {
  const value = read(fields, 'id');
  if (value === undefined) return undefined;
  if (!taskId.safeParse(value).success) {
    throw new JobError('INVALID_JOB', expectedValue('id', '1 to 128 characters of A-Z, a-z, 0-9, "_" or "-"', value));
  }
  return value as string;
}

function optionalCredits(fields: Fields): number | undefined {
  const value = read(fields, 'credits');
  if (value === undefined) return undefined;
  const parsed = credits.safeParse(value);
  if (!parsed.success) throw new JobError('INVALID_JOB', expectedValue('credits', 'a non-negative integer', value));
  return parsed.data;
}

function readModel(fields: Fields): ModelId {
  const value = read(fields, 'model');
  if (!isModelId(value)) throw new JobError('UNKNOWN_MODEL', expectedValue('model', oneOf(MODEL_IDS), value));
  return value;
}

function requiredText(fields: Fields, key: string, missing: ErrorCode, maxChars?: number, tooLong?: ErrorCode): string {
  const value = read(fields, key);
  const parsed = nonBlankString.safeParse(value);
  if (!parsed.success) throw new JobError(missing, expectedValue(key, NON_EMPTY_STRING, value));
  checkLength(key, parsed.data, maxChars, tooLong);
  return parsed.data;
}

/** An optional text field: absent, null or whitespace-only is dropped; anything but a string is INVALID_JOB. */
function optionalText(fields: Fields, key: string, maxChars?: number, tooLong?: ErrorCode): string | undefined {
  const value = read(fields, key);
  if (value === undefined) return undefined;
  const parsed = anyString.safeParse(value);
  if (!parsed.success) throw new JobError('INVALID_JOB', expectedValue(key, 'a string', value));
  if (parsed.data.trim() === '') return undefined;
  checkLength(key, parsed.data, maxChars, tooLong);
  return parsed.data;
}

function checkLength(key: string, text: string, maxChars: number | undefined, tooLong: ErrorCode | undefined): void {
  if (maxChars === undefined || tooLong === undefined) return;
  const length = charCount(text);
  if (length > maxChars) {
    throw new JobError(tooLong, expectedText(key, `at most ${maxChars} characters`, `${length} characters`));
  }
}

function optionalEnum<const T extends string, F extends T | undefined>(
  fields: Fields,
  key: string,
  values: readonly [T, ...T[]],
  fallback: F,
  invalid: ErrorCode,
): T | F {
  const value = read(fields, key);
  if (value === undefined) return fallback;
  const parsed = z.enum(values).safeParse(value);
  if (!parsed.success) throw new JobError(invalid, expectedValue(key, oneOf(values), value));
  return parsed.data as T;
}

function optionalBoolean(fields: Fields, key: string, fallback: boolean, invalid: ErrorCode): boolean {
  const value = read(fields, key);
  if (value === undefined) return fallback;
  const parsed = anyBoolean.safeParse(value);
  if (!parsed.success) throw new JobError(invalid, expectedValue(key, 'a boolean', value));
  return parsed.data;
}
