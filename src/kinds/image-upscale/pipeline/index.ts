/** The image upscale pipeline (image-pipeline.ts), with the fill under transparent pixels it needs (transparent-fill.ts). */
export * from './image-pipeline.js';
export { DILATE_RINGS, fillTransparent } from './transparent-fill.js';
