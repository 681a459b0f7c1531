/**
 * The contract's messages as zod object schemas, from which the language-neutral JSON Schemas under
 * docs/schemas/ are generated (scripts/export-schemas.ts): the job (a job message's body and a quote
 * request) and the quote reply, as unions of every kind's schemas (their descriptors', in the
 * registry's order), and the refusal.
 *
 * Validation itself is each kind's `parse`, which checks field by field in the spec's order so that
 * the first problem names the right code; these schemas describe the same shapes with the same
 * constants (model ids, enumerations, length limits). Tests keep the two in step: the TypeScript
 * types of quotes and results must equal what these schemas infer, and parseJob must accept
 * exactly the jobs the job schema accepts.
 */
import { z } from 'zod';
import { JobError } from '../errors.js';
import { allKinds } from './kinds.js';
import { expectedText } from './messages.js';

export { TASK_ID_REGEX } from './wire-parts.js';

/** The fields a job message carries besides `model` and `input`; any other is refused (INVALID_JOB). */
export const JOB_ENVELOPE_FIELDS = ['id', 'model', 'input', 'credits', 'createdAt'] as const;

type Schemas = [z.ZodType, z.ZodType, ...z.ZodType[]];

const each = (pick: (schemas: { job: z.ZodType; quote: z.ZodType; result: z.ZodType }) => z.ZodType): Schemas =>
  allKinds().map((kind) => pick(kind.schemas)) as Schemas;

/** A job message's body (`media.jobs.<kind>.<model>`) and a quote request (`media.quote`). */
export const jobMessageSchema = z.union(each((s) => s.job));

/** The reply of `media.quote`, as `media-worker quote` prints it. */
export const quoteReplySchema = z.union(each((s) => s.quote));

/** The `result` of a completed event: one of the kinds' results, or null. */
export const resultSchema = z.union([...each((s) => s.result), z.null()]);

/** A refusal (quote, cancel): the body beside the framework's Nats-Service-Error headers. */
export const errorReplySchema = z.object({
  error: z.object({ code: z.string(), status: z.number().int(), message: z.string() }),
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
      expectedText(
        'job',
        `only the fields ${JOB_ENVELOPE_FIELDS.join(', ')}`,
        `also ${unknown
          .slice(0, 5)
          .map((k) => JSON.stringify(k.slice(0, 64)))
          .join(', ')}`,
      ),
    );
  }
}
