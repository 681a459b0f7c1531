/**
 * Which execution provider really runs on this host, found once at start: each configured provider
 * list (providerAttempts) opens a one-convolution graph and runs it, the first that answers wins.
 * A convolution, because that is what the networks are made of and what loads cuDNN: a provider
 * whose library loads but whose cuDNN does not fails here, not on the first job.
 *
 * What follows from the answer is pure (providerShortfall, activeProviders): the hardware class, the
 * cost estimate, the sessions' provider list and readiness follow the provider that opened, not the
 * configured one, so a GPU host whose CUDA failed does not quote and accept work as a GPU.
 */
import ort from 'onnxruntime-node';
import { firstErrorLine } from '../errors.js';
import { buildModel, encodeModel, floatTensor, floatValueInfo, node } from './convert/onnx-builder.js';
import { type ExecutionProviderName, isGpuProvider, providerAttempts } from './execution-providers.js';
import { checkProviderLibrary, sessionOptions } from './session.js';

export interface ProviderFailure {
  provider: ExecutionProviderName;
  /** First line of the error opening or running the probe graph with it. */
  error: string;
}

export interface ProviderProbe {
  /** The configured preference. */
  requested: readonly ExecutionProviderName[];
  /** The first provider that opened and ran the probe graph (cpu when every other one failed). */
  active: ExecutionProviderName;
  /** The preferred providers that could not start, in order. */
  failures: readonly ProviderFailure[];
}

/** Opens a session with this provider list (on GPU `deviceIndex`) and runs the probe graph once; throws when it cannot. */
export type ProbeRunner = (providers: readonly ExecutionProviderName[], deviceIndex?: number) => Promise<void>;

const PROBE_SIDE = 8;

/** A 3-channel identity 1x1 convolution on an 8x8 image: tiny, and a real Conv for every provider. */
export function probeGraph(): Uint8Array {
  const weights = new Float32Array(9);
  for (let c = 0; c < 3; c += 1) weights[c * 3 + c] = 1;
  return encodeModel(
    buildModel({
      graphName: 'provider-probe',
      nodes: [node('Conv', ['input', 'weight'], ['output'], 'conv', { kernel_shape: [1, 1] })],
      initializers: [floatTensor('weight', [3, 3, 1, 1], weights)],
      inputs: [floatValueInfo('input', [1, 3, PROBE_SIDE, PROBE_SIDE])],
      outputs: [floatValueInfo('output', [1, 3, PROBE_SIDE, PROBE_SIDE])],
      opset: 17,
      producerName: 'media-worker',
      producerVersion: '1',
      docString: 'execution provider probe',
      metadata: [],
    }),
  );
}

/** The real runner: ONNX Runtime on the calling thread (a few milliseconds on any provider). */
export const runProbeGraph: ProbeRunner = async (providers, deviceIndex = 0) => {
  const options = sessionOptions(providers, 1, deviceIndex);
  checkProviderLibrary(options);
  const session = await ort.InferenceSession.create(probeGraph(), options);
  try {
    const values = PROBE_SIDE * PROBE_SIDE * 3;
    const input = Float32Array.from({ length: values }, (_, i) => i % 7);
    const result = await session.run({ input: new ort.Tensor('float32', input, [1, 3, PROBE_SIDE, PROBE_SIDE]) });
    const output = result['output']?.data;
    if (
      !(output instanceof Float32Array) ||
      output.length !== values ||
      output.some((v, i) => Math.abs(v - (input[i] ?? 0)) > 1e-3)
    ) {
      throw new Error(`the probe convolution on ${providers[0] ?? 'cpu'} returned wrong values`);
    }
  } finally {
    await session.release();
  }
};

/** Tries the preference list as sessions do (providerAttempts) and says which provider answered. */
export async function probeExecutionProviders(
  requested: readonly ExecutionProviderName[],
  run: ProbeRunner = runProbeGraph,
  deviceIndex = 0,
): Promise<ProviderProbe> {
  const failures: ProviderFailure[] = [];
  for (const providers of providerAttempts(requested)) {
    const provider = providers[0] ?? 'cpu';
    try {
      await run(providers, deviceIndex);
      return { requested: [...requested], active: provider, failures };
    } catch (error) {
      failures.push({ provider, error: firstErrorLine(error) });
    }
  }
  const cpu = failures.at(-1);
  throw new Error(
    `Expected ONNX Runtime to run a convolution at least on the CPU but it failed: ${cpu?.error ?? 'unknown error'}`,
  );
}

/** The provider list sessions are opened with: from the one that answered on, ending on the CPU. */
export function activeProviders(probe: ProviderProbe): ExecutionProviderName[] {
  return providerAttempts(probe.requested).find((attempt) => attempt[0] === probe.active) ?? ['cpu'];
}

/**
 * Why the kinds that run networks must not be pulled, or null: the host was configured for a GPU,
 * none of its GPU providers started, and running on the CPU instead was not allowed (a CPU run of a
 * job priced and timed for a GPU would take hours and end at the watchdog). A GPU provider standing
 * in for another (cuda for tensorrt) is still a GPU and passes.
 */
export function providerShortfall(probe: ProviderProbe, allowCpuFallback: boolean): string | null {
  const wanted = probe.requested[0] ?? 'cpu';
  if (!isGpuProvider(wanted) || isGpuProvider(probe.active) || allowCpuFallback) return null;
  const why = probe.failures.map((f) => `${f.provider}: ${f.error}`).join('; ');
  return `execution provider ${wanted} could not start (${why}); running on ${probe.active} instead is not allowed (MEDIA_WORKER_CPU_FALLBACK)`;
}
