/**
 * The registry of job kinds: one line per kind. Typed `{ [K in JobKind]: KindContract<K> }`, so a
 * kind of KindTypeMap (kind-contract.ts) missing here, or a descriptor that disagrees with its
 * kind's types, does not compile. Everything that lists kinds or model ids derives from it (models.ts,
 * the wire unions, discovery, docs/schemas/, the OpenAPI document); the order here is the order of
 * those lists. No discovery by walking files, no registration by import side effect.
 */
import type { Fields, JobKind, JobOf, KindContract, KindedJob, ModelOf } from '../kind-contract.js';
import { imageUpscaleKind } from './image-upscale/contract.js';
import { lipsyncKind } from './lipsync/contract.js';
import { musicKind } from './music/contract.js';
import { musicVideoKind } from './music-video/contract.js';
import { videoUpscaleKind } from './video-upscale/contract.js';

export const KINDS: { readonly [K in JobKind]: KindContract<K> } = {
  image: imageUpscaleKind,
  video: videoUpscaleKind,
  lipsync: lipsyncKind,
  music: musicKind,
  'music-video': musicVideoKind,
};

/** The kinds in the registry's order. */
export const JOB_KINDS = Object.keys(KINDS) as JobKind[];

/** A kind's descriptor, typed by its kind (the correlated-union pattern: no cast at the call). */
export function kindContract<K extends JobKind>(kind: K): KindContract<K> {
  return KINDS[kind];
}

/** Any kind's descriptor: a union, narrowed by its `kind`. */
export type AnyKindContract = { [K in JobKind]: KindContract<K> }[JobKind];

/** Every kind's descriptor, in the registry's order. */
export function allKinds(): AnyKindContract[] {
  return JOB_KINDS.map((kind) => KINDS[kind]);
}

/** One value per kind, read off each descriptor (failure codes, setting defaults, ...). */
export function byKind<T>(pick: (contract: AnyKindContract) => T): Record<JobKind, T> {
  return Object.fromEntries(JOB_KINDS.map((kind) => [kind, pick(KINDS[kind])])) as Record<JobKind, T>;
}

/** A model id with its kind: the one correlated pair every dispatch starts from. */
export type ModelEntry = { [K in JobKind]: { kind: K; model: ModelOf<K> } }[JobKind];

/**
 * Model ids claimed by more than one kind, with the kinds claiming each: a model id names one kind,
 * or dispatch by model would pick one silently (test/jobs/registry.test.ts refuses any).
 */
export function modelsClaimedTwice(kinds: readonly { kind: string; models: readonly string[] }[]): Record<string, string[]> {
  const claims = new Map<string, string[]>();
  for (const { kind, models } of kinds) for (const model of models) claims.set(model, [...(claims.get(model) ?? []), kind]);
  return Object.fromEntries([...claims].filter(([, by]) => by.length > 1));
}

export const MODEL_ENTRIES: readonly ModelEntry[] = JOB_KINDS.flatMap((kind) => KINDS[kind].models.map((model) => ({ kind, model }) as ModelEntry));

/** A model's input parsed by its kind (the envelope is the caller's). */
export function parseInput<K extends JobKind>(entry: { kind: K; model: ModelOf<K> }, input: Fields): JobOf<K> {
  return KINDS[entry.kind].parse(input, entry.model);
}

export type { KindedJob };

// Each kind's public surface, one block per kind: its types, model ids and limits (its types.ts), and
// what its pipeline, command line and the wire schemas import from its room. The jobs barrel passes
// them on, so that registering a kind touches this file and the type map only.
export { IMAGE_UPSCALE_MODEL, imageQuoteSchema, imageResultSchema } from './image-upscale/contract.js';
export { VIDEO_UPSCALE_MODEL, videoQuoteSchema, videoResultSchema } from './video-upscale/contract.js';
export * from './lipsync/types.js';
export { lipsyncBilledSeconds, lipsyncQuoteSchema, lipsyncResultSchema } from './lipsync/contract.js';
export {
  DEFAULT_LIPSYNC_MAX_OUTPUT_PERCENT,
  LIPSYNC_FRAME_SECONDS,
  checkLipsyncOutput,
  estimateLipsync,
  lipsyncOutputSeconds,
  lipsyncSecondsPerFrame,
  type LipsyncCostRequest,
} from './lipsync/cost.js';
export * from './music/types.js';
export { MUSIC_MODEL, MUSIC_REPORTED_MODEL, musicQuoteSchema, musicResultSchema } from './music/contract.js';
export * from './music-video/types.js';
export { MUSIC_VIDEO_ERROR_CODES, MUSIC_VIDEO_FAILURE_CODE, musicVideoInputSchema, musicVideoQuoteSchema, musicVideoResultSchema, parseMusicVideoInput } from './music-video/contract.js';
export { DEFAULT_AUDIO_DECODE_TIMEOUT_MS, audioInputArgs, audioMeasureArgs, measureAudioSeconds, quoteMusicVideo, type AudioToMeasure, type MeasureOptions } from './music-video/measure.js';
