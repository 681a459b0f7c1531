import { describe, expect, it } from 'vitest';
import { JobError } from '../../../../src/errors.js';
import type { SyncMode } from '../../../../src/jobs/index.js';
import {
  bounceIndex,
  DEFAULT_MAX_OUTPUT_SECONDS,
  planTimeline,
  type AudioPlan,
} from '../../../../src/kinds/lipsync/pipeline/index.js';

const FPS25 = { num: 25, den: 1 };
const NTSC = { num: 30000, den: 1001 };

function frames(mode: SyncMode, videoFrames: number, audioSeconds: number, fps = FPS25): number[] {
  const plan = planTimeline({ mode, videoFrames, fps, audioSeconds });
  return Array.from({ length: plan.outputFrames }, (_, i) => plan.sourceFrame(i));
}

type Row = [mode: SyncMode, audioSeconds: number, map: number[], audio: AudioPlan, frozenFrom?: number];

// A 5-frame video at 25 fps lasts 0.2 s. Audio of 0.12 s is 3 frames, 0.52 s is 13 frames.
const TABLE: Row[] = [
  // audio shorter than the video
  ['cut_off', 0.12, [0, 1, 2], {}],
  ['loop', 0.12, [0, 1, 2], {}],
  ['bounce', 0.12, [0, 1, 2], {}],
  ['silence', 0.12, [0, 1, 2, 3, 4], { padTo: 0.2 }],
  ['remap', 0.12, [0, 1, 3], {}],
  // equal
  ['cut_off', 0.2, [0, 1, 2, 3, 4], {}],
  ['loop', 0.2, [0, 1, 2, 3, 4], {}],
  ['bounce', 0.2, [0, 1, 2, 3, 4], {}],
  ['silence', 0.2, [0, 1, 2, 3, 4], {}],
  ['remap', 0.2, [0, 1, 2, 3, 4], {}],
  // audio longer than the video
  ['cut_off', 0.52, [0, 1, 2, 3, 4], { trimTo: 0.2 }],
  ['loop', 0.52, [0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 1, 2], {}],
  ['bounce', 0.52, [0, 1, 2, 3, 4, 3, 2, 1, 0, 1, 2, 3, 4], {}],
  ['silence', 0.52, [0, 1, 2, 3, 4, 4, 4, 4, 4, 4, 4, 4, 4], {}, 5],
  ['remap', 0.52, [0, 0, 0, 1, 1, 1, 2, 2, 3, 3, 3, 4, 4], {}],
  // audio between whole frames: 0.53 s is 13.25 frames (13, audio trimmed to 0.52 s), 0.51 s is
  // 12.75 frames (13, audio padded to 0.52 s)
  ['loop', 0.53, [0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 1, 2], { trimTo: 0.52 }],
  ['bounce', 0.51, [0, 1, 2, 3, 4, 3, 2, 1, 0, 1, 2, 3, 4], { padTo: 0.52 }],
  ['silence', 0.53, [0, 1, 2, 3, 4, 4, 4, 4, 4, 4, 4, 4, 4], { trimTo: 0.52 }, 5],
  ['remap', 0.51, [0, 0, 0, 1, 1, 1, 2, 2, 3, 3, 3, 4, 4], { padTo: 0.52 }],
  ['cut_off', 0.13, [0, 1, 2], { trimTo: 0.12 }],
  ['cut_off', 0.11, [0, 1, 2], { padTo: 0.12 }],
];

function closeAudio(actual: AudioPlan, expected: AudioPlan): void {
  expect(Object.keys(actual).sort()).toEqual(Object.keys(expected).sort());
  if (expected.trimTo !== undefined) expect(actual.trimTo).toBeCloseTo(expected.trimTo, 9);
  if (expected.padTo !== undefined) expect(actual.padTo).toBeCloseTo(expected.padTo, 9);
}

describe('planTimeline', () => {
  it.each(TABLE)('%s with %f s of audio against a 5-frame video', (mode, audioSeconds, map, audio, frozenFrom) => {
    const plan = planTimeline({ mode, videoFrames: 5, fps: FPS25, audioSeconds });
    expect(frames(mode, 5, audioSeconds)).toEqual(map);
    expect(plan.outputFrames).toBe(map.length);
    expect(plan.durationSeconds).toBeCloseTo(map.length / 25, 12);
    closeAudio(plan.audio, audio);
    expect(plan.frozenFrom).toBe(frozenFrom);
    expect(plan.sourceFramesUsed).toBe(Math.max(...map) + 1);
  });

  it('gives every mode the output length sync.so documents, to one frame, at 29.97 fps', () => {
    const videoFrames = 300; // 10.01 s
    const video = (videoFrames * 1001) / 30000;
    for (const audioSeconds of [4.3, 10.01, 17.77]) {
      const expected: Record<SyncMode, number> = {
        cut_off: Math.min(video, audioSeconds),
        loop: audioSeconds,
        bounce: audioSeconds,
        silence: Math.max(video, audioSeconds),
        remap: audioSeconds,
      };
      for (const [mode, seconds] of Object.entries(expected) as [SyncMode, number][]) {
        const plan = planTimeline({ mode, videoFrames, fps: NTSC, audioSeconds });
        const frame = 1001 / 30000;
        expect(Math.abs(plan.durationSeconds - seconds), `${mode} ${audioSeconds}`).toBeLessThanOrEqual(
          frame / 2 + 1e-9,
        );
        expect(plan.durationSeconds).toBeCloseTo((plan.outputFrames * 1001) / 30000, 12);
        // The audio plan makes the audio exactly as long as the video.
        const audioAfter = plan.audio.trimTo ?? plan.audio.padTo ?? audioSeconds;
        expect(audioAfter).toBeCloseTo(plan.durationSeconds, 6);
        for (let i = 0; i < plan.outputFrames; i++) {
          const source = plan.sourceFrame(i);
          expect(source).toBeGreaterThanOrEqual(0);
          expect(source).toBeLessThan(videoFrames);
        }
      }
    }
  });

  it('bounces without repeating the turning frames and plays a 1-frame video as a still', () => {
    expect(Array.from({ length: 9 }, (_, i) => bounceIndex(i, 3))).toEqual([0, 1, 2, 1, 0, 1, 2, 1, 0]);
    expect(Array.from({ length: 5 }, (_, i) => bounceIndex(i, 2))).toEqual([0, 1, 0, 1, 0]);
    expect(frames('bounce', 1, 0.2)).toEqual([0, 0, 0, 0, 0]);
    expect(frames('loop', 1, 0.12)).toEqual([0, 0, 0]);
  });

  it('stretches with remap so that every source frame is shown, in order, when the audio is longer', () => {
    const map = frames('remap', 50, 4); // 100 output frames from 50
    expect(map).toHaveLength(100);
    expect(new Set(map).size).toBe(50);
    for (let i = 1; i < map.length; i++) expect(map[i]! - map[i - 1]!).toBeGreaterThanOrEqual(0);
    expect(map.filter((f) => f === 17)).toHaveLength(2);
  });

  it('maps long outputs without a table (a 4-minute loop answers any index)', () => {
    const plan = planTimeline({ mode: 'loop', videoFrames: 750, fps: FPS25, audioSeconds: 240 });
    expect(plan.outputFrames).toBe(6000);
    expect(plan.sourceFrame(5999)).toBe(5999 % 750);
  });

  it('keeps the shortest output at one frame', () => {
    const plan = planTimeline({ mode: 'loop', videoFrames: 10, fps: FPS25, audioSeconds: 0.01 });
    expect(plan.outputFrames).toBe(1);
    expect(plan.audio).toEqual({ padTo: 0.04 });
  });

  it('refuses audio that would make the output longer than the cap, before any work', () => {
    let error: unknown;
    try {
      planTimeline({ mode: 'loop', videoFrames: 250, fps: FPS25, audioSeconds: DEFAULT_MAX_OUTPUT_SECONDS + 1 });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(JobError);
    expect((error as JobError).code).toBe('INPUT_TOO_LARGE');
    expect((error as JobError).message).toBe(
      'Expected the audio to last at most 240 s for sync_mode "loop" (the output follows the audio) but received 241.00 s',
    );
    for (const mode of ['bounce', 'silence', 'remap'] as const) {
      expect(() => planTimeline({ mode, videoFrames: 250, fps: FPS25, audioSeconds: 300 })).toThrow(JobError);
    }
    // cut_off never runs past the video, however long the audio.
    expect(planTimeline({ mode: 'cut_off', videoFrames: 250, fps: FPS25, audioSeconds: 3600 }).outputFrames).toBe(250);
    expect(() =>
      planTimeline({ mode: 'loop', videoFrames: 250, fps: FPS25, audioSeconds: 20, maxOutputSeconds: 15 }),
    ).toThrow('at most 15 s');
  });

  it.each([
    [{ videoFrames: 0 }, 'Expected videoFrames to be a positive integer but received 0'],
    [{ videoFrames: 2.5 }, 'Expected videoFrames to be a positive integer but received 2.5'],
    [{ fps: { num: 25, den: 0 } }, 'Expected fps to be a positive fraction of integers but received 25/0'],
    [{ audioSeconds: 0 }, 'Expected audioSeconds to be a positive number but received 0'],
    [{ audioSeconds: Number.NaN }, 'Expected audioSeconds to be a positive number but received NaN'],
    [{ maxOutputSeconds: -1 }, 'Expected maxOutputSeconds to be a positive number but received -1'],
  ])('refuses %o', (patch, message) => {
    expect(() => planTimeline({ mode: 'cut_off', videoFrames: 10, fps: FPS25, audioSeconds: 1, ...patch })).toThrow(
      message,
    );
  });

  it('refuses an output frame index outside the plan', () => {
    const plan = planTimeline({ mode: 'cut_off', videoFrames: 10, fps: FPS25, audioSeconds: 1 });
    expect(() => plan.sourceFrame(10)).toThrow('Expected an output frame index from 0 to 9 but received 10');
    expect(() => plan.sourceFrame(-1)).toThrow('Expected an output frame index from 0 to 9 but received -1');
  });
});
