import { describe, expect, it } from 'vitest';
import {
  FaceSchedule,
  scheduleFrames,
  type FaceObservations,
  type FaceBox,
} from '../../../../../src/kinds/lipsync/pipeline/index.js';

function box(x: number): FaceBox {
  const p = [x, 0] as const;
  return {
    x,
    y: 0,
    width: 10,
    height: 10,
    score: 1,
    keypoints: { leftEye: p, rightEye: p, nose: p, mouth: p, leftEar: p, rightEar: p },
  };
}

/** Observations of `frames` frames (their content does not matter to the schedule). */
function seen(frames: number): FaceObservations {
  return { detections: Array.from({ length: frames }, () => []), patches: [], cuts: [] };
}

describe('FaceSchedule', () => {
  it('decides a block once detection is lookAhead frames past it, from the observations at that moment', () => {
    const calls: number[] = [];
    // Each decision drives a box whose x is the number of frames it saw.
    const schedule = new FaceSchedule({
      lookAhead: 5,
      block: 3,
      decide: (observed) => {
        calls.push(observed.detections.length);
        return observed.detections.map(() => box(observed.detections.length));
      },
    });
    for (let n = 1; n <= 7; n += 1) schedule.observe(seen(n));
    expect(calls).toEqual([]);
    expect(schedule.decided).toBe(0);
    schedule.observe(seen(8));
    expect(calls).toEqual([8]);
    expect(schedule.decided).toBe(3);
    for (let n = 9; n <= 11; n += 1) schedule.observe(seen(n));
    expect(calls).toEqual([8, 11]);
    expect(schedule.decided).toBe(6);
    // Decided frames keep the decision made for them.
    expect([0, 1, 2, 3, 4, 5].map((f) => (schedule.boxAt(f) as FaceBox).x)).toEqual([8, 8, 8, 11, 11, 11]);
    expect(schedule.boxAt(6)).toBeInstanceOf(Promise);
    schedule.finish(Array.from({ length: 12 }, () => box(12)));
    expect(schedule.decided).toBe(12);
    expect(schedule.decisions).toBe(3);
    expect([5, 6, 11].map((f) => (schedule.boxAt(f) as FaceBox).x)).toEqual([11, 12, 12]);
    // Past the clip's end: no face.
    expect(schedule.boxAt(12)).toBeUndefined();
  });

  it('answers waiting frames when they are decided, undefined boxes included', async () => {
    const schedule = new FaceSchedule({
      lookAhead: 2,
      block: 1,
      decide: (o) => o.detections.map((_, f) => (f % 2 === 0 ? box(f) : undefined)),
    });
    const early = schedule.boxAt(0);
    const odd = schedule.boxAt(1);
    const late = schedule.boxAt(9);
    schedule.observe(seen(3));
    await expect(early).resolves.toMatchObject({ x: 0 });
    schedule.observe(seen(4));
    await expect(odd).resolves.toBeUndefined();
    schedule.finish(Array.from({ length: 5 }, (_, f) => box(100 + f)));
    // Frame 9 lies past the 5-frame clip.
    await expect(late).resolves.toBeUndefined();
    expect((schedule.boxAt(4) as FaceBox).x).toBe(104);
  });

  it('a short clip is decided wholly at the end, by the whole clip', () => {
    let calls = 0;
    const schedule = new FaceSchedule({ lookAhead: 50, block: 12, decide: () => ((calls += 1), []) });
    for (let n = 1; n <= 40; n += 1) schedule.observe(seen(n));
    expect(calls).toBe(0);
    schedule.finish(Array.from({ length: 40 }, (_, f) => box(f)));
    expect((schedule.boxAt(39) as FaceBox).x).toBe(39);
    expect(schedule.decisions).toBe(1);
  });

  it('rejects every wait, present and future, when detection fails, and ignores what comes after', async () => {
    const schedule = new FaceSchedule({ lookAhead: 1, block: 1, decide: (o) => o.detections.map(() => box(1)) });
    const waiting = schedule.boxAt(3);
    schedule.fail(new Error('decoder died'));
    await expect(waiting).rejects.toThrow('decoder died');
    await expect(schedule.boxAt(5)).rejects.toThrow('decoder died');
    schedule.observe(seen(10));
    schedule.finish([box(1)]);
    expect(schedule.decided).toBe(0);
  });

  it('refuses a look-ahead or block that is not a whole number of frames', () => {
    expect(() => new FaceSchedule({ lookAhead: -1, block: 1, decide: () => [] })).toThrow(/lookAhead/);
    expect(() => new FaceSchedule({ lookAhead: 5, block: 0, decide: () => [] })).toThrow(/block/);
    expect(() => new FaceSchedule({ lookAhead: 2.5, block: 1, decide: () => [] })).toThrow(/lookAhead/);
  });

  it.each([
    // fps, tracker reach, look-ahead (2 s, at least the reach + 1), block (0.5 s, at least 1)
    [25, 10, 50, 13],
    [30000 / 1001, 10, 60, 15],
    [60, 10, 120, 30],
    [2, 10, 11, 1],
  ])('at %s fps with a tracker reaching %s frames: look-ahead %s, block %s', (fps, reach, lookAhead, block) => {
    expect(scheduleFrames(fps, reach)).toEqual({ lookAhead, block });
  });
});
