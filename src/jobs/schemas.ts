/**
 * Validation at the edge: turns an untrusted JSON value into a `Job`, or throws the JobError the
 * spec's section 7 names for the first problem found. The envelope (id, credits, model) is read
 * here; the input by the model's kind (its descriptor's `parse`, src/jobs/kinds/), field by field in
 * the documented validation order (docs/contract.md, "Validation order"): the first failing check
 * wins. The field readers are in fields.ts.
 */
import { z } from 'zod';
import { JobError } from '../errors.js';
import { asObject, read } from './fields.js';
import type { Fields } from './kind-contract.js';
import { allKinds, parseInput, type Job, type JobKind, type KindTool } from './kinds.js';
import { expectedValue, oneOf } from './messages.js';
import { MODEL_IDS, isModelId, modelEntry, type ModelId } from './models.js';

const taskId = z.string().regex(/^[A-Za-z0-9_-]{1,128}$/);
const credits = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);

/** The spec's dedicated tool endpoints (`/api/v1/tools/<name>`), whose bodies are flat: the kinds' tools, in the registry's order. */
export const TOOL_NAMES: readonly string[] = allKinds().flatMap((kind) =>
  kind.tool === undefined ? [] : [kind.tool.name],
);
export type ToolName = string;

/**
 * Parses the unified job shape `{ id?, model, input, credits? }`: the body of the spec's
 * `POST /api/v1/generate`, extended to every model so that one shape carries every job.
 */
export function parseJob(raw: unknown): Job {
  const fields = asObject('job', raw);
  const id = optionalId(fields);
  const credits = optionalCredits(fields);
  const model = readModel(fields);
  // An absent input is an empty one, so that the model's own MISSING_* code names what is missing.
  const rawInput = read(fields, 'input');
  const input = rawInput === undefined ? {} : asObject('input', rawInput);
  return withEnvelope(parseInput(modelEntry(model), input), id, credits);
}

/**
 * The tools in the order an estimate's body (which names no model) is matched against their
 * markers: a tool whose body holds another tool's marker first, then the registry's order.
 */
export function toolsByMarker(): KindTool<JobKind>[] {
  const tools = allKinds().flatMap((kind): KindTool<JobKind>[] => (kind.tool === undefined ? [] : [kind.tool]));
  const holdsAnother = (tool: KindTool<JobKind>): boolean =>
    tools.some(
      (other) => other !== tool && Object.hasOwn((tool.body as { properties?: object }).properties ?? {}, other.marker),
    );
  return [...tools.filter(holdsAnother), ...tools.filter((tool) => !holdsAnother(tool))];
}

/**
 * Normalises the flat body of a spec tool endpoint (`/api/v1/tools/<tool>`) to the unified job, by
 * the kind whose tool it is (each reads its body in the spec's table order).
 */
export function normaliseToolBody(tool: ToolName, body: unknown): Job {
  const kind = allKinds().find((k) => k.tool?.name === tool);
  // Reached only from untyped callers (a CLI argument).
  if (kind?.tool === undefined)
    throw new JobError('INVALID_JOB', expectedValue('tool', oneOf(TOOL_NAMES), tool as unknown));
  return kind.tool.parse(body as Fields);
}

function withEnvelope(job: Job, id: string | undefined, credits: number | undefined): Job {
  return {
    ...(id === undefined ? {} : { id }),
    ...job,
    ...(credits === undefined ? {} : { credits }),
  };
}

// The envelope's fields.

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
