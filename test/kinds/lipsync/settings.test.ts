/**
 * Lip-sync's backend settings: MEDIA_WORKER_LIPSYNC_BACKENDS, MEDIA_WORKER_SYNC_MODELS and which
 * network each id runs on (MEDIA_WORKER_LIPSYNC_MODELS), parsed and refused by name.
 */
import { describe, expect, it } from 'vitest';
import { findUnknownSettings, loadConfig } from '../../../src/config.js';
import { unknownSettingMessage } from '../../../src/settings-table.js';
import {
  DEFAULT_SYNC_MODEL_MAP,
  lipsyncNetworkOf,
  manifestsOnNetwork,
  modelsOnNetwork,
  parseLipsyncBackends,
  parseLipsyncModelMapping,
  parseSyncModelMap,
} from '../../../src/kinds/lipsync/pipeline/index.js';

describe('lip-sync backend settings', () => {
  it('MEDIA_WORKER_LIPSYNC_BACKENDS: known names in the operator order, each once, at least one', () => {
    expect(parseLipsyncBackends(' sync-compatible , wav2lip ')).toEqual(['sync-compatible', 'wav2lip']);
    expect(parseLipsyncBackends('musetalk,wav2lip')).toEqual(['musetalk', 'wav2lip']);
    expect(() => parseLipsyncBackends('wav2lip,latentsync')).toThrow(
      'Expected a comma-separated list of wav2lip, musetalk, sync-compatible but received "wav2lip,latentsync"',
    );
    expect(() => parseLipsyncBackends('wav2lip,wav2lip')).toThrow(
      'Expected each lip-sync backend once but wav2lip is listed twice',
    );
    expect(() => parseLipsyncBackends(' , ')).toThrow('Expected at least one of wav2lip, musetalk, sync-compatible');
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

  it('MEDIA_WORKER_LIPSYNC_MODELS: a manifest named musetalk... is MuseTalk, and one name serves the ids MuseTalk may', () => {
    expect(lipsyncNetworkOf('musetalk')).toBe('musetalk');
    expect(lipsyncNetworkOf('musetalk-test')).toBe('musetalk');
    expect(lipsyncNetworkOf('wav2lip-hq')).toBe('wav2lip');
    expect(lipsyncNetworkOf('my-musetalk')).toBe('wav2lip');
    const mapping = parseLipsyncModelMapping('musetalk-test');
    expect(mapping).toEqual({
      'vendor-lipsync-2': 'musetalk-test',
      'vendor-lipsync-2-pro': 'musetalk-test',
      'vendor-lipsync-3': 'wav2lip',
    });
    expect(modelsOnNetwork(mapping, 'musetalk')).toEqual(['vendor-lipsync-2', 'vendor-lipsync-2-pro']);
    expect(modelsOnNetwork(mapping, 'wav2lip')).toEqual(['vendor-lipsync-3']);
    expect(manifestsOnNetwork(mapping, 'musetalk')).toEqual(['musetalk-test']);
    const mixed = parseLipsyncModelMapping('{"vendor-lipsync-2-pro":"musetalk","vendor-lipsync-3":"wav2lip-hq"}');
    expect(modelsOnNetwork(mixed, 'musetalk')).toEqual(['vendor-lipsync-2-pro']);
    expect(modelsOnNetwork(mixed, 'wav2lip')).toEqual(['vendor-lipsync-2', 'vendor-lipsync-3']);
    expect(() => parseLipsyncModelMapping('{"vendor-lipsync-3":"musetalk"}', 'MODELS')).toThrow(
      'vendor-lipsync-3 cannot run on musetalk (musetalk): its profile allows wav2lip',
    );
  });

  it('musetalk is listed in MEDIA_WORKER_LIPSYNC_BACKENDS exactly when an id is mapped to MuseTalk', () => {
    const config = loadConfig({
      MEDIA_WORKER_LIPSYNC_MODELS: 'musetalk',
      MEDIA_WORKER_LIPSYNC_BACKENDS: 'musetalk,wav2lip',
    });
    expect(config.lipsyncModels['vendor-lipsync-2']).toBe('musetalk');
    expect(() => loadConfig({ MEDIA_WORKER_LIPSYNC_MODELS: 'musetalk' })).toThrow(
      'Invalid setting MEDIA_WORKER_LIPSYNC_MODELS: vendor-lipsync-2 and vendor-lipsync-2-pro are mapped to MuseTalk (musetalk) but MEDIA_WORKER_LIPSYNC_BACKENDS (wav2lip) does not list musetalk; add it, e.g. MEDIA_WORKER_LIPSYNC_BACKENDS=musetalk,wav2lip',
    );
    // The way MuseTalk was turned on before it was chosen per id: told what to set.
    expect(() => loadConfig({ MEDIA_WORKER_LIPSYNC_BACKENDS: 'musetalk,wav2lip' })).toThrow(
      'Invalid setting MEDIA_WORKER_LIPSYNC_BACKENDS: musetalk is listed but MEDIA_WORKER_LIPSYNC_MODELS maps no model id to a MuseTalk manifest',
    );
    expect(() => loadConfig({ MEDIA_WORKER_LIPSYNC_MODELS: '{"vendor-lipsync-3":"musetalk"}' })).toThrow(
      'MEDIA_WORKER_LIPSYNC_MODELS',
    );
  });

  it('MEDIA_WORKER_MUSETALK_MODEL, no longer read, is warned of with what to set instead', () => {
    const [unknown, ...rest] = findUnknownSettings({ MEDIA_WORKER_MUSETALK_MODEL: 'musetalk' });
    expect(rest).toEqual([]);
    expect(unknownSettingMessage(unknown!)).toBe(
      'Unknown setting MEDIA_WORKER_MUSETALK_MODEL: no setting reads it any more, it is ignored; MuseTalk is chosen per model id: name its manifest in MEDIA_WORKER_LIPSYNC_MODELS (e.g. MEDIA_WORKER_LIPSYNC_MODELS=musetalk) and list musetalk in MEDIA_WORKER_LIPSYNC_BACKENDS',
    );
  });
});
