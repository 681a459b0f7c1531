import { describe, expect, it } from 'vitest';
import {
  activeProviders,
  type ExecutionProviderName,
  probeExecutionProviders,
  providerShortfall,
  type ProbeRunner,
} from '../../src/inference/index.js';

/** A runner for which only `working` providers open. */
const only =
  (...working: ExecutionProviderName[]): ProbeRunner =>
  async (providers) => {
    const head = providers[0] ?? 'cpu';
    if (!working.includes(head)) throw new Error(`${head} failed to start\nnative detail`);
  };

describe('the start-up probe of the execution providers', () => {
  it('with the real ONNX Runtime on this CPU-only machine: cuda configured, the CPU answers, and the failure names the missing library', async () => {
    const probe = await probeExecutionProviders(['cuda', 'cpu']);
    expect(probe.active).toBe('cpu');
    expect(probe.failures).toHaveLength(1);
    expect(probe.failures[0]).toMatchObject({
      provider: 'cuda',
      error: expect.stringContaining('libonnxruntime_providers_cuda.so is not installed'),
    });
    expect(activeProviders(probe)).toEqual(['cpu']);
  });

  it('the CPU alone opens and runs the probe convolution without a failure', async () => {
    expect(await probeExecutionProviders(['cpu'])).toEqual({ requested: ['cpu'], active: 'cpu', failures: [] });
  });

  it('tries the list in order and keeps the first provider that answers, with the rest of the list after it', async () => {
    const probe = await probeExecutionProviders(['tensorrt', 'cuda'], only('cuda', 'cpu'));
    expect(probe).toEqual({
      requested: ['tensorrt', 'cuda'],
      active: 'cuda',
      failures: [{ provider: 'tensorrt', error: 'tensorrt failed to start' }],
    });
    expect(activeProviders(probe)).toEqual(['cuda', 'cpu']);
  });

  it('throws when even the CPU cannot run it', async () => {
    await expect(probeExecutionProviders(['cuda'], only())).rejects.toThrow(
      /at least on the CPU but it failed: cpu failed to start/,
    );
  });
});

describe('what a failed GPU provider means for readiness', () => {
  const cudaFailed = {
    requested: ['cuda', 'cpu'] as const,
    active: 'cpu' as const,
    failures: [{ provider: 'cuda' as const, error: 'no driver' }],
  };

  it('a GPU host on its CPU is not ready unless CPU fallback is allowed', () => {
    expect(providerShortfall(cudaFailed, false)).toBe(
      'execution provider cuda could not start (cuda: no driver); running on cpu instead is not allowed (MEDIA_WORKER_CPU_FALLBACK)',
    );
    expect(providerShortfall(cudaFailed, true)).toBeNull();
  });

  it('a CPU host, a GPU that started, and one GPU provider standing in for another are all fine', () => {
    expect(providerShortfall({ requested: ['cpu'], active: 'cpu', failures: [] }, false)).toBeNull();
    expect(providerShortfall({ requested: ['cuda'], active: 'cuda', failures: [] }, false)).toBeNull();
    expect(
      providerShortfall(
        { requested: ['tensorrt', 'cuda'], active: 'cuda', failures: [{ provider: 'tensorrt', error: 'x' }] },
        false,
      ),
    ).toBeNull();
  });
});
