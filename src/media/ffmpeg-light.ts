/**
 * ffmpeg runs without the image runtime: a contract's own measuring (an input decoded in its
 * quote) loads with the settings, and media/index.ts would load sharp with them
 * (test/config.light.test.ts). An entry of its own (eslint.config.js), as media/describe.ts is.
 */
export { resolveFfmpeg } from './binaries.js';
export { quietFfmpegArgs, safeFileInputArgs } from './ffmpeg-args.js';
export { ffmpegReason, isProcessError, spawnProcess } from './process.js';
export type { ContainerKind } from './types.js';
