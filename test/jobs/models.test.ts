import { describe, expect, it } from 'vitest';
import {
  LIPSYNC_MODEL_IDS,
  MODEL_IDS,
  isLipsyncModelId,
  isModelId,
  kindOfModel,
  reportedModel,
  type JobKind,
  type ModelId,
} from '../../src/jobs/index.js';

describe('model ids', () => {
  it('are exactly the spec identifiers', () => {
    expect([...MODEL_IDS].sort()).toEqual(
      [
        'vendor-image-upscale',
        'vendor-lipsync-2',
        'vendor-lipsync-2-pro',
        'vendor-lipsync-3',
        'vendor-music-video',
        'vendor-v5-generate-music',
        'vendor-video-upscale',
      ].sort(),
    );
  });

  const kinds: Array<[ModelId, JobKind, string]> = [
    ['vendor-image-upscale', 'image', 'vendor-image-upscale'],
    ['vendor-video-upscale', 'video', 'vendor-video-upscale'],
    ['vendor-lipsync-2', 'lipsync', 'vendor-lipsync-2'],
    ['vendor-lipsync-2-pro', 'lipsync', 'vendor-lipsync-2-pro'],
    ['vendor-lipsync-3', 'lipsync', 'vendor-lipsync-3'],
    ['vendor-v5-generate-music', 'music', 'vendor/generate-music'],
  ];

  it.each(kinds)('%s is a %s job and reports itself as %s when completed', (model, kind, reported) => {
    expect(kindOfModel(model)).toBe(kind);
    expect(reportedModel(model)).toBe(reported);
    expect(isModelId(model)).toBe(true);
    expect(isLipsyncModelId(model)).toBe(kind === 'lipsync');
  });

  it('lists the three lip-sync models in the spec order', () => {
    expect(LIPSYNC_MODEL_IDS).toEqual(['vendor-lipsync-2', 'vendor-lipsync-2-pro', 'vendor-lipsync-3']);
  });

  it.each([['vendor/generate-music'], ['VENDOR-IMAGE-UPSCALE'], [''], [2], [null], [undefined]])(
    'does not take %j for a model id',
    (value) => {
      expect(isModelId(value)).toBe(false);
      expect(isLipsyncModelId(value)).toBe(false);
    },
  );
});
