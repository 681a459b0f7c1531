/**
 * The device this process runs its networks on, as capabilities and /readyz name it: a GPU's index,
 * name and memory (from nvidia-smi, the one tool every NVIDIA driver ships), or the CPU. One worker
 * runs per GPU (systemd/media-worker@.service), so the tile budget follows this device's memory.
 */
import { execFile } from 'node:child_process';
import os from 'node:os';
import { firstErrorLine } from '../errors.js';
import { isGpuProvider, type ExecutionProviderName } from '../inference/index.js';

export interface DeviceDescription {
  kind: 'gpu' | 'cpu';
  /** The execution provider that runs (the start-up probe's answer). */
  provider: ExecutionProviderName;
  /** The GPU's index as nvidia-smi numbers them; null on the CPU and on WebGPU (its adapter is Dawn's choice). */
  index: number | null;
  name: string | null;
  /** Total memory of the GPU (of the host, on the CPU), MiB; null when unknown. */
  memoryMb: number | null;
  /** Why something is unknown, or what to know about it. */
  note?: string;
}

/** What nvidia-smi says about one GPU; `--query-gpu=index,name,memory.total --format=csv,noheader,nounits`. */
export const NVIDIA_SMI_QUERY = ['--query-gpu=index,name,memory.total', '--format=csv,noheader,nounits'];

/** One line of that query (`3, NVIDIA H100 80GB HBM3, 81559`), or undefined when it is not one. */
export function parseNvidiaSmiLine(line: string): { index: number; name: string; memoryMb: number } | undefined {
  const parts = line.split(',').map((p) => p.trim());
  if (parts.length < 3) return undefined;
  const index = Number(parts[0]);
  const memoryMb = Number(parts.at(-1));
  const name = parts.slice(1, -1).join(', ');
  if (!Number.isInteger(index) || index < 0 || !Number.isFinite(memoryMb) || memoryMb <= 0 || name === '')
    return undefined;
  return { index, name, memoryMb };
}

/** Runs a command and returns its stdout; injectable so tests need no GPU. */
export type RunCommand = (file: string, args: readonly string[]) => Promise<string>;

const runCommand: RunCommand = (file, args) =>
  new Promise((resolve, reject) => {
    execFile(file, [...args], { timeout: 10_000, maxBuffer: 64 * 1024 }, (error, stdout) =>
      error ? reject(error) : resolve(stdout),
    );
  });

/** Describes the device `provider` runs on, GPU `index` for CUDA and TensorRT. Never throws: what is unknown is said. */
export async function describeDevice(
  provider: ExecutionProviderName,
  index: number,
  run: RunCommand = runCommand,
): Promise<DeviceDescription> {
  if (!isGpuProvider(provider)) {
    const note = `no GPU: running on the CPU (${os.availableParallelism()} cores); MEDIA_WORKER_DEVICE_INDEX=${index} would choose the GPU of cuda or tensorrt`;
    return {
      kind: 'cpu',
      provider,
      index: null,
      name: os.cpus()[0]?.model.trim() ?? null,
      memoryMb: Math.round(os.totalmem() / 2 ** 20),
      note,
    };
  }
  if (provider === 'webgpu') {
    return {
      kind: 'gpu',
      provider,
      index: null,
      name: null,
      memoryMb: null,
      note: "WebGPU runs on Dawn's default adapter; MEDIA_WORKER_DEVICE_INDEX is not applied (onnxruntime-node cannot pick an adapter)",
    };
  }
  try {
    const out = await run('nvidia-smi', [...NVIDIA_SMI_QUERY, '-i', String(index)]);
    const gpu = out
      .split('\n')
      .map(parseNvidiaSmiLine)
      .find((g) => g?.index === index);
    if (gpu === undefined)
      return {
        kind: 'gpu',
        provider,
        index,
        name: null,
        memoryMb: null,
        note: `nvidia-smi did not describe GPU ${index}: ${JSON.stringify(out.slice(0, 200))}`,
      };
    return { kind: 'gpu', provider, index, name: gpu.name, memoryMb: gpu.memoryMb };
  } catch (error) {
    return { kind: 'gpu', provider, index, name: null, memoryMb: null, note: `nvidia-smi: ${firstErrorLine(error)}` };
  }
}

/** Share of the GPU's memory one network call may use when MEDIA_WORKER_DEVICE_MEMORY_MB is 0 (the CPU's default is a quarter of RAM too). */
export const DEVICE_MEMORY_SHARE = 0.25;

/** MEDIA_WORKER_DEVICE_MEMORY_MB as it applies on `device`: the setting when given, else a share of the GPU's memory, else 0 (the manifests' tiles). */
export function deviceBudgetMb(configuredMb: number, device: DeviceDescription): number {
  if (configuredMb > 0 || device.kind !== 'gpu' || device.memoryMb === null) return configuredMb;
  return Math.floor(device.memoryMb * DEVICE_MEMORY_SHARE);
}

/** One line for logs: `GPU 3 (NVIDIA H100 80GB HBM3, 81559 MiB) on cuda`, `CPU (...)`. */
export function deviceLine(d: DeviceDescription): string {
  const memory = d.memoryMb === null ? '' : `, ${d.memoryMb} MiB`;
  const what =
    d.kind === 'cpu'
      ? `CPU (${d.name ?? 'unknown'}${memory})`
      : `GPU ${d.index ?? 'default'} (${d.name ?? 'unknown'}${memory})`;
  return `${what} on ${d.provider}${d.note === undefined ? '' : `: ${d.note}`}`;
}
