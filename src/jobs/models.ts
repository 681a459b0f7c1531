/**
 * The spec's model identifiers and what each one is. Every other module asks this one which kind
 * of job a model id names, so a new model is added in one place.
 */

export const MODEL_IDS = [
  'vendor-image-upscale',
  'vendor-video-upscale',
  'vendor-lipsync-2',
  'vendor-lipsync-2-pro',
  'vendor-lipsync-3',
  'vendor-v5-generate-music',
] as const;

export type ModelId = (typeof MODEL_IDS)[number];

/**
 * Lip-sync models in the spec's order. vendor-lipsync-3 appears only in the spec's pricing table;
 * this worker accepts it everywhere (docs/contract.md).
 */
export const LIPSYNC_MODEL_IDS = ['vendor-lipsync-2', 'vendor-lipsync-2-pro', 'vendor-lipsync-3'] as const;

export type LipsyncModelId = (typeof LIPSYNC_MODEL_IDS)[number];

export const DEFAULT_LIPSYNC_MODEL: LipsyncModelId = 'vendor-lipsync-2';

export const IMAGE_UPSCALE_MODEL = 'vendor-image-upscale';
export const VIDEO_UPSCALE_MODEL = 'vendor-video-upscale';
export const MUSIC_MODEL = 'vendor-v5-generate-music';

/** The id a completed music task reports instead of the id it was submitted with (spec 2.3). */
export const MUSIC_REPORTED_MODEL = 'vendor/generate-music';

export type JobKind = 'image' | 'video' | 'lipsync' | 'music';

export const JOB_KINDS = ['image', 'video', 'lipsync', 'music'] as const satisfies readonly JobKind[];

const KIND_OF_MODEL: Readonly<Record<ModelId, JobKind>> = {
  'vendor-image-upscale': 'image',
  'vendor-video-upscale': 'video',
  'vendor-lipsync-2': 'lipsync',
  'vendor-lipsync-2-pro': 'lipsync',
  'vendor-lipsync-3': 'lipsync',
  'vendor-v5-generate-music': 'music',
};

export function isModelId(value: unknown): value is ModelId {
  return typeof value === 'string' && (MODEL_IDS as readonly string[]).includes(value);
}

export function isLipsyncModelId(value: unknown): value is LipsyncModelId {
  return typeof value === 'string' && (LIPSYNC_MODEL_IDS as readonly string[]).includes(value);
}

export function kindOfModel(model: ModelId): JobKind {
  return KIND_OF_MODEL[model];
}

/**
 * The model id a completed task reports (spec 2.3): music reports `vendor/generate-music`, every
 * other model reports itself. Pending tasks and quotes always carry the submitted id.
 */
export function reportedModel(model: ModelId): string {
  return model === MUSIC_MODEL ? MUSIC_REPORTED_MODEL : model;
}
