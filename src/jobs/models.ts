/**
 * The spec's model identifiers and what each one is, derived from the registry of kinds
 * (kinds/index.ts). Every other module asks this one which kind of job a model id names, so a new
 * model is added in its kind's descriptor alone.
 */
import {
  KINDS,
  MODEL_ENTRIES,
  allKinds,
  type Job,
  type JobKind,
  type JobOf,
  type KindedJob,
  type ModelEntry,
  type ModelOf,
} from './kinds.js';

export type ModelId = ModelOf<JobKind>;

export const MODEL_IDS: readonly ModelId[] = MODEL_ENTRIES.map((entry) => entry.model);

const ENTRY_OF_MODEL: ReadonlyMap<string, ModelEntry> = new Map(MODEL_ENTRIES.map((entry) => [entry.model, entry]));

export function isModelId(value: unknown): value is ModelId {
  return typeof value === 'string' && ENTRY_OF_MODEL.has(value);
}

/** A model id with its kind, for dispatch (see `kindContract`). */
export function modelEntry(model: ModelId): ModelEntry {
  return ENTRY_OF_MODEL.get(model)!;
}

export function kindOfModel(model: ModelId): JobKind {
  return modelEntry(model).kind;
}

/**
 * A parsed job with its kind beside it. The parse boundary: a Job's model names its kind, which
 * the type of the union cannot say; past this point dispatch by kind needs no cast.
 */
export function kindedJob(job: Job): KindedJob {
  return { kind: kindOfModel(job.model), job } as KindedJob;
}

/** Whether a job is of a kind, narrowing it. */
export function isJobOfKind<K extends JobKind>(job: Job, kind: K): job is JobOf<K> {
  return kindOfModel(job.model) === kind;
}

/**
 * The model id a completed task reports (spec 2.3): the kind's `reportedModel` where it has one
 * (spec 2.3), else the submitted id. Pending tasks and quotes always
 * carry the submitted id.
 */
export function reportedModel(model: ModelId): string {
  return KINDS[kindOfModel(model)].reportedModel ?? model;
}

/** The kinds' `mediaType`s (spec 2.3), for the schemas of events and task records. */
export const MEDIA_TYPES = allKinds().flatMap((kind) => (kind.mediaType === undefined ? [] : [kind.mediaType])) as [
  string,
  ...string[],
];

/** The models of a kind (discovery's list). */
export function modelsOfKind(kind: JobKind): ModelId[] {
  return [...KINDS[kind].models];
}
