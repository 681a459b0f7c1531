/**
 * Which ONNX Runtime execution providers a session asks for, and the order in which they are tried.
 *
 * onnxruntime-node bundles the CPU and WebGPU providers; CUDA and TensorRT exist only where their
 * libraries were installed (Dockerfile.cuda). Asking for a provider that cannot start makes session
 * creation throw, so the caller tries the preference list, then what is left of it, and always ends
 * on the CPU. Whether a GPU host may run on its CPU at all is decided once at start, by the probe
 * (provider-probe.ts) and MEDIA_WORKER_CPU_FALLBACK, not here.
 */

import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

export const EXECUTION_PROVIDER_NAMES = ['cpu', 'cuda', 'tensorrt', 'webgpu'] as const;
export type ExecutionProviderName = (typeof EXECUTION_PROVIDER_NAMES)[number];

export function isExecutionProviderName(value: unknown): value is ExecutionProviderName {
  return typeof value === 'string' && (EXECUTION_PROVIDER_NAMES as readonly string[]).includes(value);
}

export function isGpuProvider(name: ExecutionProviderName): boolean {
  return name !== 'cpu';
}

/**
 * Reads a provider preference as config spells it ("cuda", "tensorrt,cuda" or an array) into a
 * de-duplicated list. Throws a RangeError worded like every other bad argument of the project.
 */
export function parseExecutionProviders(value: string | readonly string[]): ExecutionProviderName[] {
  const items = typeof value === 'string' ? value.split(',') : [...value];
  const names = items.map((s) => s.trim().toLowerCase()).filter((s) => s.length > 0);
  const bad = names.find((n) => !isExecutionProviderName(n));
  if (names.length === 0 || bad !== undefined) {
    throw new RangeError(
      `Expected execution providers to be a comma-separated list of ${EXECUTION_PROVIDER_NAMES.join(', ')} but received ${JSON.stringify(value)}`,
    );
  }
  return dedupe(names as ExecutionProviderName[]);
}

/**
 * The provider lists to try, most preferred first. Each attempt drops the head of the previous one,
 * and the last is always CPU alone. TensorRT hands the nodes it cannot compile to the providers after
 * it, so a list is passed to ONNX Runtime whole rather than one provider at a time.
 *
 *   ['tensorrt', 'cuda'] -> [['tensorrt', 'cuda', 'cpu'], ['cuda', 'cpu'], ['cpu']]
 */
export function providerAttempts(preference: readonly ExecutionProviderName[]): ExecutionProviderName[][] {
  const withCpu = dedupe<ExecutionProviderName>([...preference.filter((p) => p !== 'cpu'), 'cpu']);
  const attempts: ExecutionProviderName[][] = [];
  for (let i = 0; i < withCpu.length; i += 1) attempts.push(withCpu.slice(i));
  return attempts;
}

/** One entry of ONNX Runtime's `executionProviders`: a name, or a name with the device to use. */
export type ProviderOption = ExecutionProviderName | { readonly name: 'cuda' | 'tensorrt'; readonly deviceId: number };

/**
 * The provider list as ONNX Runtime takes it, pointed at GPU `deviceIndex` (one worker per GPU).
 * CUDA and TensorRT take a `deviceId`; onnxruntime-node's WebGPU options can only name a device
 * object made by a browser's WebGPU, so WebGPU runs on Dawn's default adapter whatever the index.
 */
export function providerOptions(providers: readonly ExecutionProviderName[], deviceIndex = 0): ProviderOption[] {
  if (!Number.isInteger(deviceIndex) || deviceIndex < 0) {
    throw new RangeError(`Expected device index to be a non-negative integer but received ${String(deviceIndex)}`);
  }
  return providers.map((name) => (name === 'cuda' || name === 'tensorrt' ? { name, deviceId: deviceIndex } : name));
}

/** Host cores ONNX Runtime may use for one operator; `configured` 0 or absent means all of them. */
export function resolveThreadCount(configured: number | undefined, available: number): number {
  if (configured === undefined || configured === 0) return Math.max(1, available);
  if (!Number.isInteger(configured) || configured < 0) {
    throw new RangeError(`Expected threads to be a non-negative integer but received ${String(configured)}`);
  }
  return configured;
}

function dedupe<T>(items: readonly T[]): T[] {
  return [...new Set(items)];
}

/** Provider libraries onnxruntime-node loads from its own binary directory when asked for them. */
const PROVIDER_LIBRARIES: Partial<Record<ExecutionProviderName, string>> = {
  cuda: 'libonnxruntime_providers_cuda.so',
  tensorrt: 'libonnxruntime_providers_tensorrt.so',
};

/** onnxruntime-node's directory of native binaries, when it has the expected layout. */
export function ortBinaryDir(): string | undefined {
  try {
    const main = createRequire(import.meta.url).resolve('onnxruntime-node');
    const dir = path.join(path.dirname(main), '..', 'bin', 'napi-v6', process.platform, process.arch);
    return existsSync(dir) ? dir : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The library a provider needs when it is certainly absent (Linux, known layout), else undefined.
 * Checking first spares the log ONNX Runtime's own multi-line native error for the common case of a
 * CPU-only install, and says what is missing in words an operator can act on.
 */
export function missingProviderLibrary(
  name: ExecutionProviderName,
  binaryDir: string | undefined = ortBinaryDir(),
): string | undefined {
  const library = PROVIDER_LIBRARIES[name];
  if (library === undefined || binaryDir === undefined || process.platform !== 'linux') return undefined;
  const file = path.join(binaryDir, library);
  return existsSync(file) ? undefined : file;
}
