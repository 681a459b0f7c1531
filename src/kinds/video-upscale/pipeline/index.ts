/** The video upscale pipeline (video-pipeline.ts), its tiles batched across frames by video-batcher.ts. */
export * from './video-batcher.js';
export * from './video-pipeline.js';
