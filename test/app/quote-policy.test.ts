import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { workerCores } from '../../src/app/hardware.js';
import {
  hardwareClassOf,
  quotePolicy,
  srModelForJob,
  srNetworkCost,
  timeLimitsFromEnv,
} from '../../src/app/quote-policy.js';
import { KIND_RUNTIMES } from '../../src/app/kinds.js';
import { DEFAULT_LIPSYNC_MAX_OUTPUT_PERCENT, DEFAULT_WORK_LIMITS } from '../../src/jobs/index.js';
import { parseSrModelChoices } from '../../src/inference/index.js';

describe('the quote policy from the settings', () => {
  it('asks for the network the settings choose for the kind and factor, or the one the caller named', () => {
    const defaults = parseSrModelChoices('');
    expect(srModelForJob(defaults, 'image', '1')).toBe('realesrgan-x4plus');
    expect(srModelForJob(defaults, 'video', '2')).toBe('realesrgan-x4fast');
    expect(srModelForJob(parseSrModelChoices('video:4=esrgan-slim-x4'), 'video', '4')).toBe('esrgan-slim-x4');
    expect(srModelForJob(defaults, 'image', '4', 'esrgan-thick-x4')).toBe('esrgan-thick-x4');
  });

  it('reads the network cost from the manifest', async () => {
    const config = loadConfig({});
    const cost = await srNetworkCost('esrgan-thick-x4', config);
    expect(cost).toMatchObject({ name: 'esrgan-thick-x4', scale: 4 });
    // thick runs tens of times the multiply-adds of slim per pixel
    expect(cost.macsPerInputPixel / (await srNetworkCost('esrgan-slim-x4', config)).macsPerInputPixel).toBeGreaterThan(
      10,
    );
  });

  it("a named model that does not exist is INVALID_MODEL; a default that does not exist is not the client's fault", async () => {
    const config = loadConfig({});
    await expect(srNetworkCost('no-such-model', config, true)).rejects.toMatchObject({ code: 'INVALID_MODEL' });
    await expect(srNetworkCost('no-such-model', config, false)).rejects.not.toHaveProperty('code');
  });

  it('settings change the limits; defaults are DEFAULT_WORK_LIMITS', () => {
    expect(quotePolicy(KIND_RUNTIMES, loadConfig({}), timeLimitsFromEnv({})).limits).toEqual(DEFAULT_WORK_LIMITS);
    const config = loadConfig({
      MEDIA_WORKER_VIDEO_MAX_FPS: '30',
      MEDIA_WORKER_LIPSYNC_MAX_OUTPUT_PERCENT: '100',
      MEDIA_WORKER_MAX_ESTIMATE_PERCENT: '50',
    });
    expect(quotePolicy(KIND_RUNTIMES, config, timeLimitsFromEnv({})).limits).toMatchObject({
      videoMaxFps: 30,
      maxEstimatePercentOfLimit: 50,
    });
    // Lip-sync's own limit reaches its part of the policy (its default: DEFAULT_LIPSYNC_MAX_OUTPUT_PERCENT).
    expect(quotePolicy(KIND_RUNTIMES, config, timeLimitsFromEnv({})).kinds.lipsync.maxOutputPercent).toBe(100);
    expect(quotePolicy(KIND_RUNTIMES, loadConfig({}), timeLimitsFromEnv({})).kinds.lipsync.maxOutputPercent).toBe(
      DEFAULT_LIPSYNC_MAX_OUTPUT_PERCENT,
    );
    expect(() => loadConfig({ MEDIA_WORKER_MAX_ESTIMATE_PERCENT: '101' })).toThrow(/MEDIA_WORKER_MAX_ESTIMATE_PERCENT/);
  });

  it("time limits are the watchdog per kind in seconds, lip-sync's included (one limit per kind)", () => {
    const limits = timeLimitsFromEnv({ WORKER_WATCHDOG_MS: 'video=600000,lipsync=120000' });
    const p = quotePolicy(KIND_RUNTIMES, loadConfig({}), limits);
    expect(p.timeLimitSeconds).toMatchObject({ video: 600, image: 900, lipsync: 120, music: 600 });
    expect(quotePolicy(KIND_RUNTIMES, loadConfig({}), timeLimitsFromEnv({})).timeLimitSeconds.lipsync).toBe(240);
  });

  it('the hardware class: auto follows the first execution provider; cores follow MEDIA_WORKER_THREADS', () => {
    expect(hardwareClassOf(loadConfig({}))).toBe('cpu');
    expect(hardwareClassOf(loadConfig({ MEDIA_WORKER_EXECUTION_PROVIDERS: 'cuda,cpu' }))).toBe('h100');
    expect(
      hardwareClassOf(loadConfig({ MEDIA_WORKER_EXECUTION_PROVIDERS: 'cuda,cpu', MEDIA_WORKER_HARDWARE_CLASS: 'cpu' })),
    ).toBe('cpu');
    expect(workerCores(loadConfig({ MEDIA_WORKER_THREADS: '3' }))).toBe(3);
    const p = quotePolicy(
      KIND_RUNTIMES,
      loadConfig({ MEDIA_WORKER_THREADS: '4', MEDIA_WORKER_HARDWARE_CLASS: 'cpu' }),
      timeLimitsFromEnv({}),
    );
    expect(p.hardware).toMatchObject({ name: 'cpu', cores: 4 });
  });
});
