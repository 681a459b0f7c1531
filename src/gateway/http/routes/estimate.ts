/**
 * POST /api/v1/estimate (docs/contract.md, "Estimates"): the body of any submission, priced by the
 * same quote and the same checks as a submission, charging nothing. Pure: which job a body is, and
 * what the answer shows.
 */
import { toolsByMarker, parseJob, type Job } from '../../../jobs/index.js';

/**
 * A body with `input` is the unified shape `{model, input}`, for every model (those off /generate included:
 * an estimate submits nothing). Without `input` it is a tool endpoint's body, told apart by the
 * field that marks each tool's body (its `marker`; a tool whose body holds another's marker is
 * asked first: audio_url before the video upscale's video_url). Anything else is parsed
 * as the unified shape, for its error.
 */
export function estimateJob(body: unknown): Job {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return parseJob(body);
  const fields = body as Record<string, unknown>;
  if (Object.hasOwn(fields, 'input')) return parseJob({ model: fields['model'], input: fields['input'] });
  const tool = toolsByMarker().find((t) => Object.hasOwn(fields, t.marker));
  return tool === undefined ? parseJob(body) : tool.parse(fields);
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
