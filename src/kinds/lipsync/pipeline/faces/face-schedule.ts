/**
 * The driven face of each source frame, decided while detection is still running, so that the
 * output pass (and the lip-sync network) can start long before the face pass has seen the whole
 * clip.
 *
 * A frame's face is decided once the detector is `lookAhead` frames past it, from everything
 * observed so far (the `decide` callback: tracking and the choice of faces over the frames seen),
 * `block` frames at a time, and never changed afterwards. What the tracker does near a frame
 * (gap filling up to its `maxGap`, smoothing over its `smoothRadius`) only needs a few frames
 * ahead, so with a look-ahead larger than those a frame gets the box the whole clip would give it;
 * which face is driven is ranked on the frames seen so far (the clip up to `lookAhead` past the
 * frame). The last frames are decided by `finish`, with the whole clip. A clip no longer than the
 * look-ahead is decided wholly at the end, exactly as if detection had run first.
 */
import type { FaceBox } from '../types.js';
import type { FaceObservations } from './faces.js';

export interface FaceScheduleOptions {
  /** Frames the detector must be past a frame before it is decided (> the tracker's maxGap + smoothRadius). */
  lookAhead: number;
  /** Frames decided together (each decision re-ranks the faces seen so far). */
  block: number;
  /** The box to drive in each observed frame (frame pixels), from the observations so far. */
  decide: (observed: FaceObservations) => readonly (FaceBox | undefined)[];
}

interface Waiter {
  frame: number;
  resolve(box: FaceBox | undefined): void;
  reject(error: unknown): void;
}

export class FaceSchedule {
  private readonly boxes: (FaceBox | undefined)[] = [];
  private decidedFrames = 0;
  private decisionCount = 0;
  private ended = false;
  private failure: { error: unknown } | undefined;
  private waiters: Waiter[] = [];

  constructor(private readonly options: FaceScheduleOptions) {
    for (const [name, value, least] of [
      ['lookAhead', options.lookAhead, 0],
      ['block', options.block, 1],
    ] as const) {
      if (!Number.isInteger(value) || value < least)
        throw new RangeError(`Expected ${name} to be an integer >= ${least} but received ${value}`);
    }
  }

  /** Frames whose face is final. */
  get decided(): number {
    return this.decidedFrames;
  }

  /** How often the faces were chosen (blocks decided early, plus the final decision). */
  get decisions(): number {
    return this.decisionCount;
  }

  /** After each detected frame: decides the next block once the detector is far enough ahead. */
  observe(observed: FaceObservations): void {
    if (this.ended || this.failure !== undefined) return;
    const upTo = observed.detections.length - this.options.lookAhead;
    if (upTo - this.decidedFrames < this.options.block) return;
    this.commit(this.options.decide(observed), upTo);
  }

  /** Detection ended: `boxes` (the whole clip's choice) decides every frame not yet decided. */
  finish(boxes: readonly (FaceBox | undefined)[]): void {
    if (this.ended || this.failure !== undefined) return;
    this.commit(boxes, boxes.length);
    this.ended = true;
    // Frames past the clip's end have no face.
    for (const w of this.waiters) w.resolve(undefined);
    this.waiters = [];
  }

  /** Detection failed or the plan changed: every wait rejects with `error`. */
  fail(error: unknown): void {
    if (this.ended || this.failure !== undefined) return;
    this.failure = { error };
    for (const w of this.waiters) w.reject(error);
    this.waiters = [];
  }

  /** The face to drive in source frame `frame`: at once when decided, else once it is. */
  boxAt(frame: number): FaceBox | undefined | Promise<FaceBox | undefined> {
    if (frame < this.decidedFrames) return this.boxes[frame];
    if (this.failure !== undefined) return Promise.reject(this.failure.error);
    if (this.ended) return undefined;
    return new Promise((resolve, reject) => this.waiters.push({ frame, resolve, reject }));
  }

  private commit(boxes: readonly (FaceBox | undefined)[], upTo: number): void {
    this.decisionCount += 1;
    for (let f = this.decidedFrames; f < upTo; f += 1) this.boxes[f] = boxes[f];
    this.decidedFrames = Math.max(this.decidedFrames, upTo);
    const ready = this.waiters.filter((w) => w.frame < this.decidedFrames);
    this.waiters = this.waiters.filter((w) => w.frame >= this.decidedFrames);
    for (const w of ready) w.resolve(this.boxes[w.frame]);
  }
}

/** Seconds of video the detector runs ahead of the frames it decides. */
export const FACE_LOOK_AHEAD_SECONDS = 2;
/** Seconds of video decided at a time. */
export const FACE_BLOCK_SECONDS = 0.5;

/** Look-ahead and block in frames at `fps`; the look-ahead always covers the tracker's gap filling and smoothing. */
export function scheduleFrames(fps: number, trackerReach: number): { lookAhead: number; block: number } {
  return {
    lookAhead: Math.max(trackerReach + 1, Math.round(FACE_LOOK_AHEAD_SECONDS * fps)),
    block: Math.max(1, Math.round(FACE_BLOCK_SECONDS * fps)),
  };
}
