import { describe, expect, it } from 'vitest';
import { withMusicSlot } from '../../src/app/index.js';
import { parseWorkerSettings } from '../../src/worker/index.js';

describe('the music slot of serve', () => {
  const defaults = parseWorkerSettings({});

  it('turns on one music slot when a backend is configured and WORKER_CONCURRENCY is not set', () => {
    expect(defaults.concurrency.music).toBe(0);
    expect(withMusicSlot(defaults, true, false).concurrency).toEqual({ ...defaults.concurrency, music: 1 });
  });

  it('leaves the settings alone without a backend or when the operator set the concurrency', () => {
    expect(withMusicSlot(defaults, false, false)).toBe(defaults);
    expect(withMusicSlot(defaults, true, true)).toBe(defaults);
  });
});
