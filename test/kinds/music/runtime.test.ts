import { describe, expect, it } from 'vitest';
import { withConfiguredSlots } from '../../../src/app/index.js';
import { loadConfig } from '../../../src/config.js';
import { parseWorkerSettings } from '../../../src/worker/index.js';

describe("the music slot of serve (the music runtime's configuredSlots)", () => {
  const defaults = parseWorkerSettings({});
  const withBackend = loadConfig({ MEDIA_WORKER_MUSIC_BACKENDS: 'musicgen' });
  const without = loadConfig({});

  it('turns on one music slot when a backend is configured and WORKER_CONCURRENCY is not set', () => {
    expect(defaults.concurrency.music).toBe(0);
    expect(withConfiguredSlots(defaults, withBackend, false).concurrency).toEqual({
      ...defaults.concurrency,
      music: 1,
    });
  });

  it('leaves the settings alone without a backend or when the operator set the concurrency', () => {
    expect(withConfiguredSlots(defaults, without, false)).toBe(defaults);
    expect(withConfiguredSlots(defaults, withBackend, true)).toBe(defaults);
  });
});
