/**
 * POST /api/v1/estimate (docs/contract.md, "Estimates"): the body of any submission, priced by the
 * same quote and the same checks as a submission, charging nothing. Pure: which job a body is, and
 * what the answer shows.
 */
import { normaliseToolBody, parseJob, type Job } from '../jobs/index.js';

/**
 * A body with `input` is the unified shape `{model, input}`, for every model (lip-sync included:
 * an estimate submits nothing). Without `input` it is a tool endpoint's body, told apart by its
 * URL fields: `audio_url` is lip-sync's, else `image_url` the image upscale's, else `video_url` the
 * video upscale's. Anything else is parsed as the unified shape, for its error.
 */
export function estimateJob(body: unknown): Job {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return parseJob(body);
  const fields = body as Record<string, unknown>;
  if (Object.hasOwn(fields, 'input')) return parseJob({ model: fields['model'], input: fields['input'] });
  if (Object.hasOwn(fields, 'audio_url')) return normaliseToolBody('lipsync', body);
  if (Object.hasOwn(fields, 'image_url')) return normaliseToolBody('upscale-image', body);
  if (Object.hasOwn(fields, 'video_url')) return normaliseToolBody('upscale-video', body);
  return parseJob(body);
}

export interface EstimatedQuote {
  creditsUsed: number;
  duration?: number | undefined;
  input: Record<string, unknown>;
}

/** What a submission would cost, with what the tool endpoints echo, and whether the balance covers it now. */
export function estimateView(job: Job, quoted: EstimatedQuote, balance: number): Record<string, unknown> {
  return {
    model: job.model,
    creditsUsed: quoted.creditsUsed,
    ...(quoted.duration === undefined ? {} : { duration: quoted.duration }),
    input: quoted.input,
    balance,
    sufficient: balance >= quoted.creditsUsed,
  };
}
