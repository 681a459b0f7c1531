import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { probeHardware, srHardwareOptions, tileMemoryBytes, withProviderCheck } from '../../src/app/hardware.js';
import { hardwareClassOf, quotePolicy, srNetworkCost, timeLimitsFromEnv } from '../../src/app/quote-policy.js';
import { KIND_RUNTIMES } from '../../src/app/kinds.js';
import type { ProbeRunner } from '../../src/inference/index.js';

const MiB = 1024 * 1024;
const cudaWorks: ProbeRunner = async () => undefined;

describe('the hardware as the probe finds it', () => {
  it('cuda configured on this CPU-only machine: sessions, hardware class and the estimate follow the CPU, and the network kinds are not ready', async () => {
    const configured = loadConfig({ MEDIA_WORKER_EXECUTION_PROVIDERS: 'cuda,cpu' });
    expect(hardwareClassOf(configured)).toBe('h100'); // what the settings alone would claim
    const hardware = await probeHardware(configured);
    expect(hardware.config.executionProviders).toEqual(['cpu']);
    expect(hardwareClassOf(hardware.config)).toBe('cpu');
    expect(quotePolicy(KIND_RUNTIMES, hardware.config, timeLimitsFromEnv({})).hardware.name).toBe('cpu');
    expect(hardware.shortfall).toContain('execution provider cuda could not start');

    const checks = withProviderCheck(KIND_RUNTIMES, { image: [], music: [] }, hardware.shortfall);
    for (const kind of ['image', 'video', 'lipsync'] as const) {
      const check = checks[kind]?.find((c) => c.name === 'execution-provider');
      expect(await check?.run()).toBe(hardware.shortfall);
    }
    expect(checks.music).toEqual([]);
  });

  it('with CPU fallback allowed the same host is ready, still priced as a CPU', async () => {
    const hardware = await probeHardware(
      loadConfig({ MEDIA_WORKER_EXECUTION_PROVIDERS: 'cuda,cpu', MEDIA_WORKER_CPU_FALLBACK: 'true' }),
    );
    expect(hardware.shortfall).toBeNull();
    expect(hardwareClassOf(hardware.config)).toBe('cpu');
    const checks = withProviderCheck(KIND_RUNTIMES, {}, hardware.shortfall);
    expect(await checks.image?.[0]?.run()).toBeNull();
  });

  it('a GPU that answers keeps the GPU class, runs the float16 graphs, and budgets its tiles by device memory', async () => {
    const hardware = await probeHardware(
      loadConfig({ MEDIA_WORKER_EXECUTION_PROVIDERS: 'cuda', MEDIA_WORKER_DEVICE_MEMORY_MB: '49152' }),
      cudaWorks,
    );
    expect(hardware.config.executionProviders).toEqual(['cuda', 'cpu']);
    expect(hardwareClassOf(hardware.config)).toBe('h100');
    expect(srHardwareOptions(hardware.config)).toEqual({ tileMemoryBytes: 49152 * MiB, halfPrecision: true });
    expect((await srNetworkCost('realesrgan-x4plus', hardware.config)).tile).toBe(2048);
  });

  it('the CPU budgets by MEDIA_WORKER_TILE_RAM_MB, else a quarter of the host memory; a GPU without a budget keeps the manifest tile', async () => {
    expect(tileMemoryBytes(loadConfig({ MEDIA_WORKER_TILE_RAM_MB: '1024' }))).toBe(1024 * MiB);
    expect(tileMemoryBytes(loadConfig({}), 16 * 1024 * MiB)).toBe(4 * 1024 * MiB);
    expect(tileMemoryBytes(loadConfig({ MEDIA_WORKER_EXECUTION_PROVIDERS: 'cuda' }))).toBeUndefined();
    // 1 GiB over 12,288 bytes per pixel: 295 px, down to a multiple of 8.
    expect((await srNetworkCost('realesrgan-x4plus', loadConfig({ MEDIA_WORKER_TILE_RAM_MB: '1024' }))).tile).toBe(288);
    expect(
      (await srNetworkCost('realesrgan-x4plus', loadConfig({ MEDIA_WORKER_EXECUTION_PROVIDERS: 'cuda' }))).tile,
    ).toBe(512);
  });
});
