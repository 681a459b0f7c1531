/**
 * The submissions (spec 2.1, 2.2): POST /api/v1/generate, the unified endpoint, and each kind's
 * tool endpoint POST /api/v1/tools/<name> with its own status and echo. A submission is quoted,
 * charged and published by the service; with an Idempotency-Key it keeps one task id for its key.
 */
import type { FastifyInstance } from 'fastify';
import {
  JobError,
  MODEL_IDS,
  allKinds,
  isModelId,
  kindContract,
  kindOfModel,
  oneOf,
  parseJob,
  type Job,
  expectedValue,
} from '../../../jobs/index.js';
import { successEnvelope, toApiError } from '../../errors.js';
import { newTaskId } from '../../ids.js';
import type { Endpoint } from '../../service.js';
import { submissionWebhook } from '../../webhooks/submission.js';
import type { RouteContext } from '../app-deps.js';
import { idempotent } from '../idempotent-route.js';
import { routeSchemas, toolRouteSchema } from '../openapi-schemas.js';

/** The models POST /api/v1/generate takes: those of the kinds on it. */
const UNIFIED_MODELS = MODEL_IDS.filter((m) => kindContract(kindOfModel(m)).onGenerate);

export function registerSubmissions(api: FastifyInstance, { deps, once }: RouteContext): void {
  const { metrics } = deps;
  // A submission's key keeps one task id, and the ledger sequence after which its one debit is looked for.
  const reserve = async (accountId: string) => ({
    taskId: newTaskId(),
    ledgerSeq: (await deps.ledger.last(accountId))?.seq ?? 0,
  });
  const submit = (endpoint: Endpoint, toJob: (body: unknown) => Job, status: number) =>
    idempotent(
      once,
      async (req, reply, reservation) => {
        let model = 'invalid';
        try {
          const job = toJob(req.body);
          model = job.model;
          // The quote is abandoned when the client hangs up before the answer (the worker stops fetching).
          const gone = new AbortController();
          reply.raw.once('close', () => {
            if (!reply.raw.writableFinished) gone.abort();
          });
          const webhook = await submissionWebhook(req.body, req.accountId, deps.webhooks, deps.webhookPolicy);
          const data = await deps.service.submit(
            req.accountId,
            job,
            endpoint,
            req.log,
            gone.signal,
            webhook,
            reservation,
          );
          metrics.submissions.inc({ model, outcome: 'accepted' });
          return { status, body: successEnvelope(data) };
        } catch (err) {
          metrics.submissions.inc({ model, outcome: toApiError(err).code });
          throw err;
        }
      },
      reserve,
    );

  api.post('/api/v1/generate', { schema: routeSchemas.generate }, submit('generate', unifiedJob, 200));
  // Each kind's tool endpoint, with its own status and echo (spec 2.2).
  for (const kind of allKinds()) {
    const tool = kind.tool;
    if (tool !== undefined)
      api.post(
        `/api/v1/tools/${tool.name}`,
        { schema: toolRouteSchema(kind) },
        submit(tool.echo, (b) => tool.parse(b as Record<string, unknown>), tool.status),
      );
  }
}

/**
 * The unified endpoint's body; a kind off it (spec 1.5, 4.1) is pointed to its own endpoint, and the
 * caller chooses neither id nor credits.
 */
function unifiedJob(body: unknown): Job {
  const fields =
    typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>) : undefined;
  if (fields === undefined) return parseJob(body);
  const model = fields['model'];
  const kind = isModelId(model) ? kindContract(kindOfModel(model)) : undefined;
  if (kind !== undefined && !kind.onGenerate) {
    const elsewhere = kind.tool === undefined ? '' : ` (${kind.label}: POST /api/v1/tools/${kind.tool.name})`;
    throw new JobError('UNKNOWN_MODEL', `${expectedValue('model', oneOf(UNIFIED_MODELS), model)}${elsewhere}`);
  }
  return parseJob({ model: fields['model'], input: fields['input'] });
}
