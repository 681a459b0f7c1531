/**
 * The registry of job kinds: one line per kind, and the only module that imports every kind. Its
 * type map (`KindTypeMap`) names each kind's bundle of types (KindTypes, the kind's types.ts), and
 * `KINDS` is typed `{ [K in JobKind]: KindContract<K> }`, so a kind of the map missing here, or a
 * descriptor that disagrees with its kind's types, does not compile. Everything that lists kinds or
 * model ids derives from it (models.ts, the wire unions, discovery, docs/schemas/, the OpenAPI
 * document); the order here is the order of those lists. No discovery by walking files, no
 * registration by import side effect. Nothing below it (kind-contract.ts, quote-types.ts,
 * pricing.ts, the kinds' rooms) imports it back.
 */
import type { Fields, KindDescriptor, ToolDescriptor } from './kind-contract.js';
import type { QuotePolicyOf } from './quote-types.js';
import type { SettingsCheck, SettingsGroup } from '../settings-table.js';
import { IMAGE_UPSCALE_SETTINGS } from '../kinds/image-upscale/settings.js';
import { VIDEO_UPSCALE_SETTINGS } from '../kinds/video-upscale/settings.js';
import { LIPSYNC_RETIRED_SETTINGS, LIPSYNC_SETTINGS, checkLipsyncSettings } from '../kinds/lipsync/settings.js';
import { MUSIC_SETTINGS } from '../kinds/music/settings.js';
import { MUSIC_VIDEO_SETTINGS } from '../kinds/music-video/settings.js';
import { imageUpscaleKind } from '../kinds/image-upscale/contract/contract.js';
import type { ImageUpscaleTypes } from '../kinds/image-upscale/contract/types.js';
import { lipsyncKind } from '../kinds/lipsync/contract/contract.js';
import type { LipsyncPolicy, LipsyncTypes } from '../kinds/lipsync/contract/types.js';
import { musicKind } from '../kinds/music/contract/contract.js';
import type { MusicTypes } from '../kinds/music/contract/types.js';
import { musicVideoKind } from '../kinds/music-video/contract/contract.js';
import type { MusicVideoTypes } from '../kinds/music-video/contract/types.js';
import { videoUpscaleKind } from '../kinds/video-upscale/contract/contract.js';
import type { VideoUpscaleTypes } from '../kinds/video-upscale/contract/types.js';

/** Each kind's types (its job, quote, quoted job and result), one line per kind: the bundle in its room's types.ts. */
export interface KindTypeMap {
  image: ImageUpscaleTypes;
  video: VideoUpscaleTypes;
  lipsync: LipsyncTypes;
  music: MusicTypes;
  'music-video': MusicVideoTypes;
}

/**
 * Each kind's own part of the quote policy (QuotePolicy.kinds), one line per kind that has one: its
 * limits from its settings and its cost figures on the worker's hardware class, built by its runtime
 * half (src/app/kinds/) and read by its descriptor's `quote`.
 */
export interface KindPolicies {
  lipsync: LipsyncPolicy;
}

/**
 * The worker's own rules on top of the spec's: work limits, the cost estimate on this worker's
 * hardware class, and each kind's own part. Built once from the settings (src/app/quote-policy.ts)
 * and shared by the quote service, `run`, `quote` and `serve`, so they all refuse the same jobs.
 * Every descriptor is handed the whole of it and reads its part (QuotePolicyOf).
 */
export interface QuotePolicy extends QuotePolicyOf<JobKind> {
  kinds: KindPolicies;
}

export type JobKind = keyof KindTypeMap;
export type JobOf<K extends JobKind> = KindTypeMap[K]['job'];
export type ModelOf<K extends JobKind> = JobOf<K>['model'];
export type QuoteOf<K extends JobKind> = KindTypeMap[K]['quote'];
export type QuotedOf<K extends JobKind> = KindTypeMap[K]['quoted'];
export type ResultOf<K extends JobKind> = KindTypeMap[K]['result'];

/** The descriptor of kind `K`, handed the whole quote policy. */
export type KindContract<K extends JobKind> = KindDescriptor<KindTypeMap[K], QuotePolicy>;
/** The tool endpoint of kind `K` (a union of every kind's for `KindTool<JobKind>`). */
export type KindTool<K extends JobKind> = ToolDescriptor<JobOf<K>>;

/** The unions of every kind's job, quote, quoted job and result. */
export type Job = JobOf<JobKind>;
export type Quote = QuoteOf<JobKind>;
/**
 * Everything processing needs after a quote, narrowed by `kind`. The absent inputs are spelled
 * `?: undefined` so that `quoted.inputs.video` can be read on the union without narrowing first.
 */
export type QuotedJob = QuotedOf<JobKind>;
export type TaskResult = ResultOf<JobKind>;

/** A job with its kind beside it: what dispatch by kind takes (see `kindedJob`). */
export type KindedJob<K extends JobKind = JobKind> = { [P in K]: { kind: P; job: JobOf<P> } }[K];

export const KINDS: { readonly [K in JobKind]: KindContract<K> & { kind: K } } = {
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
 * or dispatch by model would pick one silently (test/jobs/kinds.test.ts refuses any).
 */
export function modelsClaimedTwice(
  kinds: readonly { kind: string; models: readonly string[] }[],
): Record<string, string[]> {
  const claims = new Map<string, string[]>();
  for (const { kind, models } of kinds)
    for (const model of models) claims.set(model, [...(claims.get(model) ?? []), kind]);
  return Object.fromEntries([...claims].filter(([, by]) => by.length > 1));
}

export const MODEL_ENTRIES: readonly ModelEntry[] = JOB_KINDS.flatMap((kind) =>
  KINDS[kind].models.map((model) => ({ kind, model }) as ModelEntry),
);

/** A model's input parsed by its kind (the envelope is the caller's). */
export function parseInput<K extends JobKind>(entry: { kind: K; model: ModelOf<K> }, input: Fields): JobOf<K> {
  return KINDS[entry.kind].parse(input, entry.model);
}

// Each kind's public surface, one block per kind: its types, model ids and limits (its types.ts), its
// price (its price.ts), and what its pipeline, command line and the wire schemas import from its
// room. The jobs barrel passes them on, so that registering a kind touches this file only.
export * from '../kinds/image-upscale/contract/types.js';
export * from '../kinds/image-upscale/contract/price.js';
export { IMAGE_UPSCALE_MODEL, imageQuoteSchema, imageResultSchema } from '../kinds/image-upscale/contract/contract.js';
export * from '../kinds/video-upscale/contract/types.js';
export * from '../kinds/video-upscale/contract/price.js';
export { VIDEO_UPSCALE_MODEL, videoQuoteSchema, videoResultSchema } from '../kinds/video-upscale/contract/contract.js';
export * from '../kinds/lipsync/contract/types.js';
export * from '../kinds/lipsync/contract/price.js';
export { lipsyncBilledSeconds, lipsyncQuoteSchema, lipsyncResultSchema } from '../kinds/lipsync/contract/contract.js';
export {
  DEFAULT_LIPSYNC_MAX_OUTPUT_PERCENT,
  LIPSYNC_FRAME_SECONDS,
  checkLipsyncOutput,
  estimateLipsync,
  lipsyncOutputSeconds,
  lipsyncSecondsPerFrame,
  type LipsyncCostRequest,
} from '../kinds/lipsync/contract/cost.js';
export * from '../kinds/music/contract/types.js';
export * from '../kinds/music/contract/price.js';
export {
  MUSIC_MODEL,
  MUSIC_REPORTED_MODEL,
  musicQuoteSchema,
  musicResultSchema,
} from '../kinds/music/contract/contract.js';
export * from '../kinds/music-video/contract/types.js';
export * from '../kinds/music-video/contract/price.js';
export {
  MUSIC_VIDEO_ERROR_CODES,
  MUSIC_VIDEO_FAILURE_CODE,
  musicVideoInputSchema,
  musicVideoQuoteSchema,
  musicVideoResultSchema,
  parseMusicVideoInput,
} from '../kinds/music-video/contract/contract.js';
export {
  DEFAULT_AUDIO_DECODE_TIMEOUT_MS,
  audioInputArgs,
  audioMeasureArgs,
  measureAudioSeconds,
  quoteMusicVideo,
  type AudioToMeasure,
  type MeasureOptions,
} from '../kinds/music-video/contract/measure.js';

// Each kind's settings rows (its settings.ts, pure), for src/config.ts to assemble without naming a
// kind: the registry is the one way into a kind's folder from the contract's side.
/** The kinds' settings, one group a kind, in the settings reference's order. */
export const KIND_SETTINGS_GROUPS = [
  { title: 'Image upscale (`src/kinds/image-upscale/settings.ts`)', table: IMAGE_UPSCALE_SETTINGS },
  { title: 'Video upscale (`src/kinds/video-upscale/settings.ts`)', table: VIDEO_UPSCALE_SETTINGS },
  { title: 'Lip-sync (`src/kinds/lipsync/settings.ts`)', table: LIPSYNC_SETTINGS, retired: LIPSYNC_RETIRED_SETTINGS },
  { title: 'Music (`src/kinds/music/settings.ts`)', table: MUSIC_SETTINGS },
  { title: 'Music video (`src/kinds/music-video/settings.ts`)', table: MUSIC_VIDEO_SETTINGS },
] as const satisfies readonly SettingsGroup[];

/** Every kind's rows side by side (a test checks no key repeats). */
export const KIND_SETTINGS = {
  ...IMAGE_UPSCALE_SETTINGS,
  ...VIDEO_UPSCALE_SETTINGS,
  ...LIPSYNC_SETTINGS,
  ...MUSIC_SETTINGS,
  ...MUSIC_VIDEO_SETTINGS,
};

/** The kinds' checks across their own rows (a room's settings that must agree), run when the settings load. */
export const KIND_SETTINGS_CHECKS: readonly SettingsCheck<typeof KIND_SETTINGS>[] = [checkLipsyncSettings];
