/**
 * The quote's policy built from the settings: work limits, the hardware class the estimates are
 * for, each kind's own limits and figures (its runtime half builds them: the registry is handed in,
 * KindRuntimes), the processing time limit per kind, and which super-resolution network would serve a job.
 * One function builds it for the quote service, `quote`, `run` and `serve`, so all refuse alike.
 */
import type { Config } from '../config.js';
import { budgetTile, getManifest, ModelRegistryError, chooseSrModel, type SrModelChoices } from '../inference/index.js';
import { tileMemoryBytes, workerCores } from './hardware.js';
import {
  JobError,
  hardwareClassForProviders,
  hardwareProfile,
  byKind,
  type HardwareClassName,
  type QuotePolicy,
  type SrNetworkCost,
  type UpscaleFactor,
  type WorkLimits,
} from '../jobs/index.js';
import type { KindRuntimes, TimeLimitsMs } from './kind-runtime.js';
import { registryOptions } from './layer-options.js';
import { watchdogFromEnv } from '../worker/settings.js';

export type { TimeLimitsMs } from './kind-runtime.js';

/**
 * The network name that serves a job: the caller's explicit model (CLI `--model`), else the one
 * the settings choose for the kind and factor (MEDIA_WORKER_SR_MODELS), as the pipelines do. The
 * one place the cost model asks "which network".
 */
export function srModelForJob(
  choices: SrModelChoices,
  kind: 'image' | 'video',
  factor: UpscaleFactor,
  explicitModel?: string,
): string {
  return explicitModel ?? chooseSrModel(choices, kind, factor);
}

/**
 * The network's cost figures from its manifest (cheap JSON, no weights). A model the caller named
 * that does not exist is the caller's INVALID_MODEL (as in inference/sr-models.ts); a missing default is the
 * operator's problem and stays a plain error.
 */
export async function srNetworkCost(name: string, config: Config, explicit = false): Promise<SrNetworkCost> {
  const manifest = await getManifest(name, registryOptions(config)).catch((err: unknown) => {
    if (explicit && err instanceof ModelRegistryError) throw new JobError('INVALID_MODEL', err.message);
    throw err;
  });
  if (manifest.task !== 'super-resolution') {
    throw new JobError('INVALID_MODEL', `Expected a super-resolution model but ${name} is a ${manifest.task} model`);
  }
  // A reduced-precision graph does the same multiply-adds faster: on a CPU (where its gate's speed was
  // measured) the estimate counts them at that speed; elsewhere at float32's, the cautious side.
  const speed = config.executionProviders[0] === 'cpu' ? (manifest.gate?.speedVsFloat32 ?? 1) : 1;
  const macsPerInputPixel = manifest.macsPerInputPixel / speed;
  return {
    name,
    scale: manifest.scale,
    macsPerInputPixel,
    tile: budgetTile(manifest, tileMemoryBytes(config)),
    overlap: manifest.tile.overlap,
  };
}

/** The daemon's watchdog (WORKER_WATCHDOG_MS, parsed by its own schema) for commands that run without the daemon's settings. */
export function timeLimitsFromEnv(env: NodeJS.ProcessEnv = process.env): TimeLimitsMs {
  return watchdogFromEnv(env);
}

export function workLimits(config: Config): WorkLimits {
  return {
    videoMaxInputSide: config.videoMaxInputSide,
    videoMaxInputPixels: config.videoMaxInputPixels,
    videoMaxOutputSide: config.videoMaxOutputSide,
    videoMaxOutputPixels: config.videoMaxOutputPixels,
    videoMaxFps: config.videoMaxFps,
    videoMaxJobOutputPixels: config.videoMaxJobOutputPixels,
    maxEstimatePercentOfLimit: config.maxEstimatePercent,
  };
}

export function hardwareClassOf(config: Config): HardwareClassName {
  return config.hardwareClass === 'auto' ? hardwareClassForProviders(config.executionProviders) : config.hardwareClass;
}

/** `runtimes`: the kinds' runtime halves, whose `policies` builds each kind's own part. */
export function quotePolicy(
  runtimes: Pick<KindRuntimes, 'policies'>,
  config: Config,
  timeLimitsMs: TimeLimitsMs,
  explicitModel?: string,
): QuotePolicy {
  const seconds = (ms: number): number => ms / 1000;
  const hardware = hardwareProfile(hardwareClassOf(config), workerCores(config));
  return {
    limits: workLimits(config),
    hardware,
    kinds: runtimes.policies(config, hardware),
    timeLimitSeconds: byKind((kind) => seconds(timeLimitsMs[kind.kind])),
    srNetwork: (kind, factor) =>
      srNetworkCost(srModelForJob(config.srModels, kind, factor, explicitModel), config, explicitModel !== undefined),
  };
}
