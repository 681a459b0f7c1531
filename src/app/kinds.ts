/**
 * The registry of the kinds' runtime halves: one line per kind, typed
 * `{ [K in JobKind]: KindRuntime<K, KindStates> }` so that a kind of the contract's registry without
 * a runtime does not compile. The only module of src/app/ that imports every kind; the corridor
 * (run-job.ts), readiness, hardware and quoting never import it: they are handed KIND_RUNTIMES, the
 * registry as a value (with-kinds.ts and daemon.ts hand it over).
 */
import type { Config } from '../config.js';
import { JOB_KINDS, type HardwareProfile, type JobKind, type KindPolicies } from '../jobs/index.js';
import type { ModelGenerator } from '../inference/index.js';
import type { Logger } from '../logger.js';
import type { FolderModel, KindRuntime, KindRuntimes } from './kind-runtime.js';
import { imageUpscaleRuntime } from '../kinds/image-upscale/runtime.js';
import { lipsyncPolicy, lipsyncRuntime, openLipsyncProvider, type LipsyncStates } from '../kinds/lipsync/runtime.js';
import { musicRuntime, openMusicBackends, type MusicStates } from '../kinds/music/runtime.js';
import { musicVideoRuntime } from '../kinds/music-video/runtime.js';
import { videoUpscaleRuntime } from '../kinds/video-upscale/runtime.js';

/** What the kinds keep open between jobs (one member per kind that keeps anything), on the engine. */
export type KindStates = MusicStates & LipsyncStates;

export const RUNTIMES: { readonly [K in JobKind]: KindRuntime<K, KindStates> } = {
  image: imageUpscaleRuntime,
  video: videoUpscaleRuntime,
  lipsync: lipsyncRuntime,
  music: musicRuntime,
  'music-video': musicVideoRuntime,
};

/** Opens what the kinds keep open, once per process (createEngine). */
export function openKindStates(config: Config, logger: Logger): KindStates {
  return { music: openMusicBackends(config, logger), lipsyncProvider: openLipsyncProvider(config) };
}

/** Each kind's own part of the quote policy (one line per kind that has one), from the settings and the host's hardware. */
export function kindPolicies(config: Config, hardware: HardwareProfile): KindPolicies {
  return { lipsync: lipsyncPolicy(config, hardware) };
}

/** The registry as the value the corridor, readiness, hardware and quoting are handed. */
export const KIND_RUNTIMES: KindRuntimes<KindStates> = {
  byKind: RUNTIMES,
  openStates: openKindStates,
  policies: kindPolicies,
};

/** The networks the kinds keep as folders of their own, as `models list` shows them. */
export async function folderModels(config: Config, filesDir: string): Promise<FolderModel[]> {
  return (await Promise.all(JOB_KINDS.map((kind) => RUNTIMES[kind].folderModels?.(config, filesDir) ?? []))).flat();
}

/** The networks the kinds build themselves, by generator name (RegistryOptions.generators). */
export function modelGenerators(): Record<string, ModelGenerator> {
  return Object.fromEntries(JOB_KINDS.flatMap((kind) => Object.entries(RUNTIMES[kind].modelGenerators ?? {})));
}
