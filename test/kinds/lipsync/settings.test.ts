/** Lip-sync's backend settings: MEDIA_WORKER_LIPSYNC_BACKENDS and MEDIA_WORKER_SYNC_MODELS, parsed and refused by name. */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config.js';
import {
  DEFAULT_SYNC_MODEL_MAP,
  parseLipsyncBackends,
  parseSyncModelMap,
} from '../../../src/kinds/lipsync/pipeline/index.js';

describe('lip-sync backend settings', () => {
  it('MEDIA_WORKER_LIPSYNC_BACKENDS: known names in the operator order, each once, at least one', () => {
    expect(parseLipsyncBackends(' sync-compatible , wav2lip ')).toEqual(['sync-compatible', 'wav2lip']);
    expect(() => parseLipsyncBackends('wav2lip,latentsync')).toThrow(
      'Expected a comma-separated list of wav2lip, sync-compatible but received "wav2lip,latentsync"',
    );
    expect(() => parseLipsyncBackends('wav2lip,wav2lip')).toThrow(
      'Expected each lip-sync backend once but wav2lip is listed twice',
    );
    expect(() => parseLipsyncBackends(' , ')).toThrow('Expected at least one of wav2lip, sync-compatible');
  });

  it('MEDIA_WORKER_SYNC_MODELS: the ids named replace the default, null keeps one off the provider', () => {
    expect(parseSyncModelMap('{"vendor-lipsync-3":null}')).toEqual({
      ...DEFAULT_SYNC_MODEL_MAP,
      'vendor-lipsync-3': null,
    });
    expect(parseSyncModelMap('{}')).toEqual(DEFAULT_SYNC_MODEL_MAP);
    expect(() => parseSyncModelMap('{"vendor-lipsync-9":"x"}')).toThrow('Expected a valid provider model map');
    expect(() => parseSyncModelMap('{"vendor-lipsync-2":"../admin"}')).toThrow('provider model name');
    expect(() => parseSyncModelMap('["lipsync-2"]')).toThrow('Expected a JSON object');
  });

  it('a bad value fails loading the settings with the variable named', () => {
    expect(() => loadConfig({ MEDIA_WORKER_LIPSYNC_BACKENDS: 'wav2lip,nope' })).toThrow(
      'MEDIA_WORKER_LIPSYNC_BACKENDS',
    );
    expect(() => loadConfig({ MEDIA_WORKER_SYNC_MODELS: 'not json' })).toThrow('MEDIA_WORKER_SYNC_MODELS');
    expect(loadConfig({ MEDIA_WORKER_LIPSYNC_BACKENDS: 'sync-compatible' }).lipsyncBackends).toEqual([
      'sync-compatible',
    ]);
  });
});
