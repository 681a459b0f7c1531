/**
 * ONNX Runtime and what runs on it: execution providers, sessions (on the calling thread or a worker
 * thread), model manifests and the registry that fetches, converts and verifies model files, the
 * super-resolution loader and its per-use choice, tiling with seamless blending, and what a graph
 * costs. Converters to ONNX live in convert/ (entered through convert/index.ts).
 */
export * from './blend.js';
export * from './colour-anchor.js';
export * from './edge-pad.js';
export * from './execution-providers.js';
export * from './graph-cost.js';
export * from './licence.js';
export * from './manifest.js';
export * from './model-registry.js';
export * from './npm-tarball.js';
export * from './precision.js';
export * from './precision-probe.js';
export * from './provider-probe.js';
export * from './session.js';
export * from './session-thread.js';
export * from './thread-cache.js';
export * from './sr-choice.js';
export * from './sr-models.js';
export * from './tile-budget.js';
export * from './tile-plan.js';
export * from './tiling.js';
export * from './convert/index.js';
export * from './adopt/index.js';
