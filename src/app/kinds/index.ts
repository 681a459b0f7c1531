/**
 * The registry of the kinds' runtime halves: one line per kind, typed `{ [K in JobKind]: KindRuntime<K> }`
 * so that a kind of the contract's registry without a runtime does not compile.
 */
import type { JobKind } from '../../jobs/index.js';
import type { KindRuntime } from '../kind-runtime.js';
import { imageUpscaleRuntime } from './image-upscale.js';
import { lipsyncRuntime } from './lipsync.js';
import { musicRuntime } from './music.js';
import { videoUpscaleRuntime } from './video-upscale.js';

export const RUNTIMES: { readonly [K in JobKind]: KindRuntime<K> } = {
  image: imageUpscaleRuntime,
  video: videoUpscaleRuntime,
  lipsync: lipsyncRuntime,
  music: musicRuntime,
};
