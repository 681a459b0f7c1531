/** The upscale pipelines: images (image-pipeline.ts) and videos (video-pipeline.ts, its tiles batched across frames by video-batcher.ts). */
export * from './image-pipeline.js';
export * from './video-batcher.js';
export * from './video-pipeline.js';
export { DILATE_RINGS, fillTransparent } from './transparent-fill.js';
