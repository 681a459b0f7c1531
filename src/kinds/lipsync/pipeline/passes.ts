/**
 * The lip-sync pipeline's two passes over the video, run one of two ways: `passesTogether` (the face
 * pass and the output pass at once, the timeline planned from a forecast of the frame count that is
 * checked when the face pass ends) or `passesInTurn` (the output pass after the face pass, from the
 * counted frames). When each runs: docs/lipsync.md.
 *
 * What the passes need from the job (decoding, planning, encoding) comes in as `PassSteps`, so that
 * this module holds only the order of things and how the passes stop each other.
 */
import { StageGroup, type InfoLogger } from '../../../video/index.js';
import {
  type FacePassResult,
  FaceSchedule,
  scheduleFrames,
  chooseDrivenFaces,
  trackObservations,
  type DrivenFaces,
  type FaceObservations,
  type FaceTrackingResult,
  DEFAULT_TRACKER_OPTIONS,
} from './faces/index.js';
import { type OutputPassInput, type OutputPassResult } from './compose/index.js';
import type { TimelinePlan } from './timeline.js';
import type { FaceBox } from './types.js';

export interface PassSteps {
  /** The face pass, stopped by `signal`; `onObserved` after each frame. */
  detect(signal: AbortSignal | undefined, onObserved?: (observed: FaceObservations) => void): Promise<FacePassResult>;
  /** Called once detection ended: its progress, and the check that it decoded frames at all. */
  detected(pass: FacePassResult): void;
  /** The timeline for a count of source frames, and the job's audio fitted to it. */
  plan(videoFrames: number): { plan: TimelinePlan; fitted: Float32Array };
  /** The audio envelope the active speaker is judged by; undefined when the job does not ask for one. */
  speakerEnvelope(
    plan: TimelinePlan,
    fitted: Float32Array,
    sourceFrames: number,
  ): Promise<ArrayLike<number> | undefined>;
  /** Detection-size boxes in frame pixels. */
  inFrame(boxes: readonly (FaceBox | undefined)[]): (FaceBox | undefined)[];
  /** The output pass, stopped by `signal`. */
  output(
    plan: TimelinePlan,
    fitted: Float32Array,
    boxAt: OutputPassInput['boxAt'],
    signal: AbortSignal | undefined,
  ): Promise<OutputPassResult>;
  /** Removes what a stopped output pass wrote. */
  discardOutput(): Promise<void>;
  /** Source frames per second. */
  fps: number;
  signal?: AbortSignal;
  logger?: InfoLogger;
}

/** What the two passes produced. */
export interface Passes {
  pass: FacePassResult;
  plan: TimelinePlan;
  driven: DrivenFaces;
  output: OutputPassResult;
  outputMs: number;
  overlapped: boolean;
  decisions: number;
}

/** The driven faces; the active speaker is judged (`envelope` given) only among several faces. */
export function driveFaces(tracking: FaceTrackingResult, envelope: ArrayLike<number> | undefined): DrivenFaces {
  const speaking = envelope !== undefined && tracking.tracks.length > 1;
  return chooseDrivenFaces(tracking, { activeSpeaker: speaking, ...(speaking ? { audioEnvelope: envelope } : {}) });
}

/** The whole clip's choice, logged with every track's ranking. */
function finalChoice(steps: PassSteps, pass: FacePassResult, envelope: ArrayLike<number> | undefined): DrivenFaces {
  const driven = driveFaces(pass.tracking, envelope);
  steps.logger?.info(
    {
      tracks: pass.tracking.tracks.length,
      driven: driven.tracks.map((t) => t.id),
      method: driven.method,
      ranking: driven.ranking,
    },
    'lip-sync faces chosen',
  );
  return driven;
}

/** The output pass after a finished face pass, from the frames it counted. */
export async function passesInTurn(steps: PassSteps, pass: FacePassResult): Promise<Passes> {
  const { plan, fitted } = steps.plan(pass.frameCount);
  const envelope =
    pass.tracking.tracks.length > 1 ? await steps.speakerEnvelope(plan, fitted, pass.frameCount) : undefined;
  const driven = finalChoice(steps, pass, envelope);
  const boxes = steps.inFrame(driven.boxes);
  const started = performance.now();
  const output = await steps.output(plan, fitted, (frame) => boxes[frame], steps.signal);
  return { pass, plan, driven, output, outputMs: performance.now() - started, overlapped: false, decisions: 1 };
}

/**
 * Both passes at once, the timeline planned from `expected` frames. Resolves with the face pass
 * alone (its output discarded) when the video decoded to another count: the caller then runs
 * `passesInTurn` with it.
 */
export async function passesTogether(steps: PassSteps, expected: number): Promise<Passes | FacePassResult> {
  const { plan, fitted } = steps.plan(expected);
  const envelope = await steps.speakerEnvelope(plan, fitted, expected);
  const schedule = new FaceSchedule({
    ...scheduleFrames(steps.fps, DEFAULT_TRACKER_OPTIONS.maxGap + DEFAULT_TRACKER_OPTIONS.smoothRadius),
    decide: (observed) => {
      const tracking = trackObservations(observed);
      return tracking.tracks.length === 0 ? [] : steps.inFrame(driveFaces(tracking, envelope).boxes);
    },
  });
  // The two passes stop together: a failure of either stops the other, the job's signal both.
  const group = new StageGroup(steps.signal, 'lip-sync passes');
  group.onHalt(() => schedule.fail(group.stopped));
  const started = performance.now();
  const output = steps.output(plan, fitted, (frame) => schedule.boxAt(frame), group.signal);
  const outputSettled = group.run(output);
  try {
    const pass = await steps.detect(group.signal, (observed) => schedule.observe(observed));
    steps.detected(pass);
    if (pass.frameCount !== expected) {
      steps.logger?.info(
        { forecast: expected, decoded: pass.frameCount },
        'the video decoded to another frame count than forecast; lip-syncing again from the counted frames',
      );
      group.halt();
      await outputSettled;
      await steps.discardOutput();
      return pass;
    }
    const driven = finalChoice(steps, pass, envelope);
    schedule.finish(steps.inFrame(driven.boxes));
    return {
      pass,
      plan,
      driven,
      output: await output,
      outputMs: performance.now() - started,
      overlapped: true,
      decisions: schedule.decisions,
    };
  } catch (error) {
    // The first real failure wins: a face pass stopped by the output pass's failure reports that one.
    throw await group.failure(error, [outputSettled]);
  } finally {
    await group.settle([outputSettled]);
  }
}
