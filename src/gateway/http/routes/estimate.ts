/**
 * POST /api/v1/estimate (docs/contract.md, "Estimates"): the body of any submission, priced by the
 * same quote and the same checks as a submission, charging nothing. Which job a body is here; what
 * the answer shows is the service's (estimateView, ../../api-views.ts).
 */
import type { FastifyInstance } from 'fastify';
import { toolsByMarker, parseJob, type Job } from '../../../jobs/index.js';
import { successEnvelope } from '../../errors.js';
import { submissionWebhook } from '../../webhooks/submission.js';
import type { RouteContext } from '../app-deps.js';
import { routeSchemas } from '../openapi-schemas.js';

export function registerEstimate(api: FastifyInstance, { deps }: RouteContext): void {
  api.post('/api/v1/estimate', { schema: routeSchemas.estimate }, async (req, reply) => {
    const job = estimateJob(req.body);
    // A webhook_url the submission would refuse is refused here too.
    await submissionWebhook(req.body, req.accountId, deps.webhooks, deps.webhookPolicy);
    // As for a submission: the quote is abandoned when the client hangs up.
    const gone = new AbortController();
    reply.raw.once('close', () => {
      if (!reply.raw.writableFinished) gone.abort();
    });
    return successEnvelope(await deps.service.estimate(req.accountId, job, gone.signal));
  });
}

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
