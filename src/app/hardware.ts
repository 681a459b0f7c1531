/**
 * What this host's hardware is, as the settings and the start-up probe make it: the execution
 * provider that really runs (inference/provider-probe.ts), the config every later step reads with
 * that provider first, whether the kinds that run networks may be pulled, and the memory a network
 * call may use (which sets the tile size). `serve` and the one-off commands both start here, so a
 * GPU host whose CUDA failed neither quotes like a GPU nor takes jobs it would run on its CPU.
 */
import os from 'node:os';
import type { Config } from '../config.js';
import {
  activeProviders,
  isGpuProvider,
  probeExecutionProviders,
  providerShortfall,
  runsFloat16,
  type ExecutionProviderName,
  type ProbeRunner,
  type ProviderProbe,
} from '../inference/index.js';
import { JOB_KINDS, type JobKind } from '../jobs/index.js';
import type { KindChecks } from '../worker/index.js';
import { describeDevice, deviceBudgetMb, type DeviceDescription } from './device.js';
import type { KindRuntimes } from './kind-runtime.js';
import { resolvePrecision, type PrecisionReport, type VariantProber } from './precision.js';

/** The kinds whose jobs run networks on the execution provider (their runtime's `usesExecutionProvider`). */
export function providerKinds(runtimes: KindRuntimes): JobKind[] {
  return JOB_KINDS.filter((kind) => runtimes.byKind[kind].usesExecutionProvider);
}

export interface ProbedHardware {
  probe: ProviderProbe;
  /** The settings with the provider list starting at the provider that answered. */
  config: Config;
  /** Why the network kinds must not run (providerShortfall), or null. */
  shortfall: string | null;
  /** The device the active provider runs on (capabilities and /readyz name it). */
  device: DeviceDescription;
  /** Which graph each super-resolution network runs (WORKER_PRECISION, app/precision.ts). */
  precision: PrecisionReport;
}

/** Cores the worker's CPU work gets: MEDIA_WORKER_THREADS, 0 meaning every available core. */
export function workerCores(config: Config): number {
  return config.threads > 0 ? config.threads : os.availableParallelism();
}

/**
 * The TensorRT provider's engine cache, as environment variables: onnxruntime-node passes the
 * TensorRT provider nothing but a device id, and the provider reads these (ONNX Runtime's TensorRT
 * provider documentation, "Environment variables"). fp16 stays off: the graphs are float16 already.
 */
export function tensorrtEnvironment(config: Config): Record<string, string> {
  const dir = config.tensorrtCacheDir ?? `${config.modelFilesDir ?? config.modelsDir}/tensorrt-cache`;
  return { ORT_TENSORRT_ENGINE_CACHE_ENABLE: '1', ORT_TENSORRT_CACHE_PATH: dir, ORT_TENSORRT_TIMING_CACHE_ENABLE: '1' };
}

/**
 * Probes the configured providers once, on GPU MEDIA_WORKER_DEVICE_INDEX, and derives the config and
 * readiness that follow from it; the tile budget follows that GPU's memory when none is configured.
 */
export async function probeHardware(
  config: Config,
  run?: ProbeRunner,
  describe: (provider: ExecutionProviderName, index: number) => Promise<DeviceDescription> = describeDevice,
  probeVariant?: VariantProber,
): Promise<ProbedHardware> {
  if (config.executionProviders.includes('tensorrt')) {
    for (const [name, value] of Object.entries(tensorrtEnvironment(config))) process.env[name] ??= value;
  }
  // CUDA numbers GPUs fastest first unless told otherwise; nvidia-smi (and the operator) by PCI bus.
  // Read when CUDA initialises, which is at the first CUDA session: set before the probe opens one.
  if (config.executionProviders.some((p) => p === 'cuda' || p === 'tensorrt'))
    process.env['CUDA_DEVICE_ORDER'] ??= 'PCI_BUS_ID';
  const probe = await probeExecutionProviders(config.executionProviders, run, config.deviceIndex);
  const device = await describe(probe.active, config.deviceIndex);
  const probed = {
    ...config,
    executionProviders: activeProviders(probe),
    deviceMemoryMb: deviceBudgetMb(config.deviceMemoryMb, device),
  };
  const precision = await resolvePrecision(probed, probe.active, workerCores(probed), probeVariant);
  return {
    probe,
    config: precision.config,
    shortfall: providerShortfall(probe, config.cpuFallback),
    device,
    precision: precision.report,
  };
}

/** Adds the provider check to the kinds that run networks (providerKinds): failing while `shortfall` says why. */
export function withProviderCheck(runtimes: KindRuntimes, checks: KindChecks, shortfall: string | null): KindChecks {
  const out: KindChecks = { ...checks };
  for (const kind of providerKinds(runtimes)) {
    out[kind] = [...(checks[kind] ?? []), { name: 'execution-provider', run: () => Promise.resolve(shortfall) }];
  }
  return out;
}

/**
 * Bytes one network call may use: the GPU's budget (MEDIA_WORKER_DEVICE_MEMORY_MB) when a GPU
 * provider runs, else the CPU's (MEDIA_WORKER_TILE_RAM_MB, 0: a quarter of the host's memory).
 * Undefined: no budget, the manifests' tile sizes.
 */
export function tileMemoryBytes(config: Config, totalMemory: number = os.totalmem()): number | undefined {
  const MiB = 1024 * 1024;
  const first = config.executionProviders[0] ?? 'cpu';
  if (isGpuProvider(first)) return config.deviceMemoryMb > 0 ? config.deviceMemoryMb * MiB : undefined;
  return config.tileRamMb > 0 ? config.tileRamMb * MiB : Math.floor(totalMemory / 4);
}

/** What the super-resolution loader takes from the hardware: the tile budget, and float16 graphs on a GPU. */
export function srHardwareOptions(config: Config): { tileMemoryBytes?: number; halfPrecision: boolean } {
  const bytes = tileMemoryBytes(config);
  return {
    ...(bytes === undefined ? {} : { tileMemoryBytes: bytes }),
    halfPrecision: runsFloat16(config.precision, config.executionProviders[0] ?? 'cpu'),
  };
}
