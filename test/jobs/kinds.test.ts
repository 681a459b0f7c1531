/**
 * The registry of job kinds (src/jobs/kinds.ts): every kind once, each model id naming one
 * kind, and what derives from it (model ids, tools, failure codes, setting defaults) read off the
 * descriptors. That a kind missing from the registry, or a descriptor disagreeing with its kind's
 * types, does not compile is checked by tsc itself (the registry's type is a mapped type over
 * KindTypeMap); the @ts-expect-error lines below keep that so.
 */
import { describe, expect, it } from 'vitest';
import {
  JOB_KINDS,
  KINDS,
  KIND_FAILURE_CODE,
  MODEL_IDS,
  TOOL_NAMES,
  allKinds,
  kindOfModel,
  modelsClaimedTwice,
  type JobKind,
  type KindContract,
} from '../../src/jobs/index.js';

describe('the registry of kinds', () => {
  it('lists every kind once, each under its own key', () => {
    expect(JOB_KINDS).toEqual(['image', 'video', 'lipsync', 'music', 'music-video']);
    for (const kind of JOB_KINDS) expect(KINDS[kind].kind).toBe(kind);
  });

  it('refuses a model id claimed by two kinds', () => {
    expect(modelsClaimedTwice(allKinds())).toEqual({});
    // A sixth kind that claims the music video's id (and its own): the id is named with both claimants.
    const twice = [...allKinds(), { kind: 'music-video-hd', models: ['vendor-music-video', 'vendor-music-video-hd'] }];
    expect(modelsClaimedTwice(twice)).toEqual({ 'vendor-music-video': ['music-video', 'music-video-hd'] });
  });

  it('registers the music video under its model id, on the unified endpoint, with no tool', () => {
    expect(kindOfModel('vendor-music-video')).toBe('music-video');
    expect(KINDS['music-video'].onGenerate).toBe(true);
    expect(KINDS['music-video'].tool).toBeUndefined();
    expect(KINDS['music-video'].resultLifetimeDays).toBe(KINDS.music.resultLifetimeDays);
  });

  it("derives the model ids, each naming its kind, in the registry's order", () => {
    expect(MODEL_IDS).toEqual(allKinds().flatMap((kind) => kind.models));
    for (const kind of allKinds()) for (const model of kind.models) expect(kindOfModel(model)).toBe(kind.kind);
  });

  it('derives the tools and the failure codes from the descriptors', () => {
    expect(TOOL_NAMES).toEqual(['upscale-image', 'upscale-video', 'lipsync']);
    expect(KIND_FAILURE_CODE).toEqual({
      image: 'UPSCALE_FAILED',
      video: 'UPSCALE_FAILED',
      lipsync: 'LIPSYNC_FAILED',
      music: 'GENERATION_FAILED',
      'music-video': 'MUSIC_VIDEO_FAILED',
    });
  });

  it('types a descriptor by its kind (compile-time: these lines must stay errors)', () => {
    // @ts-expect-error a lip-sync descriptor is not the image kind's
    const wrong: KindContract<'image'> = KINDS.lipsync;
    // @ts-expect-error a registry without the music video does not have the registry's type
    const partial: { [K in JobKind]: KindContract<K> } = {
      image: KINDS.image,
      video: KINDS.video,
      lipsync: KINDS.lipsync,
      music: KINDS.music,
    };
    expect([wrong, partial]).toHaveLength(2);
  });
});
