/**
 * ACE-Step 1.5's REST API (its docs/en/API.md): POST /release_task submits, POST /query_result
 * answers `status` 0 (queued or running), 1 (succeeded) or 2 (failed) with `result` a JSON string
 * of one entry per song whose `file` is a `/v1/audio?path=...` URL; GET /health. Every answer is
 * wrapped as { data, code, error, timestamp, extra }. Schemas and the pure request mapping.
 */
import { z } from 'zod';
import type { MusicRequest } from '../types.js';

export const ACESTEP_MIN_SECONDS = 10;
export const ACESTEP_MAX_SECONDS = 600;

export function wrapped<T extends z.ZodType>(data: T) {
  return z.object({ data: data.nullish(), code: z.number().int(), error: z.string().nullish() });
}

export const releaseAnswer = wrapped(
  z.object({ task_id: z.string().min(1), status: z.string().nullish(), queue_position: z.number().nullish() }),
);

export const queryAnswer = wrapped(
  z.array(
    z.object({
      task_id: z.string(),
      status: z.number().int(),
      result: z.string().nullish(),
      progress_text: z.string().nullish(),
    }),
  ),
);

export const healthAnswer = wrapped(z.object({ status: z.string() }));

export const resultEntry = z.object({
  /** `/v1/audio?path=...`; "" while running, after a failure, or when no audio was written. */
  file: z.string(),
  /** Set on entries of unfinished or failed tasks. */
  error: z.string().nullish(),
  progress: z.number().nullish(),
  stage: z.string().nullish(),
  status: z.number().int().nullish(),
  prompt: z.string().nullish(),
  lyrics: z.string().nullish(),
  metas: z.object({ duration: z.number().nullish(), genres: z.string().nullish() }).passthrough().nullish(),
});
export const resultList = z.array(resultEntry);
export type AceStepResult = z.infer<typeof resultEntry>;

/** ACE-Step's convention for a song without vocals. */
export const INSTRUMENTAL_LYRICS = '[Instrumental]';

export interface ReleaseBody {
  prompt?: string;
  lyrics?: string;
  sample_query?: string;
  thinking: boolean;
  audio_duration: number;
  batch_size: number;
  audio_format: 'mp3';
  use_random_seed: false;
  seed: number;
  lm_negative_prompt?: string;
}

/**
 * Simple mode with vocals: `sample_query` (ACE-Step writes caption and lyrics). Instrumental:
 * the description as caption with `[Instrumental]` lyrics. Custom: style as caption, the lyrics.
 * ACE-Step has no vocal-gender control: the gender goes into the caption as "male/female vocals".
 * Negative tags go to the LM's negative prompt (`lm_negative_prompt`).
 */
export function releaseBody(request: MusicRequest): ReleaseBody {
  const seconds = Math.min(ACESTEP_MAX_SECONDS, Math.max(ACESTEP_MIN_SECONDS, request.seconds));
  const common = {
    thinking: true,
    audio_duration: seconds,
    batch_size: request.songs,
    audio_format: 'mp3' as const,
    use_random_seed: false as const,
    seed: request.seed % 2 ** 31,
    ...(request.negativeTags.length > 0 ? { lm_negative_prompt: request.negativeTags.join(', ') } : {}),
  };
  if (request.instrumental) return { ...common, prompt: request.description, lyrics: INSTRUMENTAL_LYRICS };
  if (request.mode === 'simple') return { ...common, sample_query: request.description };
  const gender = request.vocalGender === undefined ? '' : `, ${request.vocalGender === 'm' ? 'male' : 'female'} vocals`;
  return { ...common, prompt: `${request.style ?? request.description}${gender}`, lyrics: request.lyrics ?? '' };
}
