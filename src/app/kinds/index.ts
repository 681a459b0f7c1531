/**
 * The registry of the kinds' runtime halves: one line per kind, typed `{ [K in JobKind]: KindRuntime<K> }`
 * so that a kind of the contract's registry without a runtime does not compile.
 */
import type { Config } from '../../config.js';
import { JOB_KINDS, type HardwareProfile, type JobKind, type KindPolicies } from '../../jobs/index.js';
import type { ModelGenerator } from '../../inference/index.js';
import type { Logger } from '../../logger.js';
import type { MusicBackend } from '../../music/index.js';
import type { KindRuntime } from '../kind-runtime.js';
import { imageUpscaleRuntime } from './image-upscale.js';
import { lipsyncPolicy, lipsyncRuntime } from './lipsync.js';
import { musicRuntime, openMusicBackends } from './music.js';
import { musicVideoRuntime } from './music-video.js';
import { videoUpscaleRuntime } from './video-upscale.js';

export const RUNTIMES: { readonly [K in JobKind]: KindRuntime<K> } = {
  image: imageUpscaleRuntime,
  video: videoUpscaleRuntime,
  lipsync: lipsyncRuntime,
  music: musicRuntime,
  'music-video': musicVideoRuntime,
};

/** What the kinds keep open between jobs (one line per kind that keeps anything), on the engine. */
export interface KindStates {
  /** The configured backends, in the operator's order (MEDIA_WORKER_MUSIC_BACKENDS). */
  music: MusicBackend[];
}

/** Opens what the kinds keep open, once per process (createEngine). */
export function openKindStates(config: Config, logger: Logger): KindStates {
  return { music: openMusicBackends(config, logger) };
}

/** Each kind's own part of the quote policy (one line per kind that has one), from the settings and the host's hardware. */
export function kindPolicies(config: Config, hardware: HardwareProfile): KindPolicies {
  return { lipsync: lipsyncPolicy(config, hardware) };
}

/** The networks the kinds build themselves, by generator name (RegistryOptions.generators). */
export function modelGenerators(): Record<string, ModelGenerator> {
  return Object.fromEntries(JOB_KINDS.flatMap((kind) => Object.entries(RUNTIMES[kind].modelGenerators ?? {})));
}
