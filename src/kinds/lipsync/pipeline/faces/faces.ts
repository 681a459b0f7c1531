/**
 * Faces of a whole video: detection on every frame, tracking (track.ts), and the choice of which
 * face the lip-sync drives.
 *
 * The choice is one face at a time, never two in the same frame:
 * - `activeSpeaker` false: tracks are ranked by prominence (mean area x presence, i.e. summed box
 *   area over the clip's frames); the first is driven, then every next one that does not share
 *   frames with a face already driven. One shot with two people drives the larger; a cut to
 *   another shot drives the face of that shot too.
 * - `activeSpeaker` true: the same, ranked by how well each mouth follows the audio
 *   (active-speaker.ts's correlation score) plus up to `prominenceBonus` for the most prominent
 *   face (in proportion to prominence), so that a near-tie between a face in front and a small,
 *   noisy one behind goes to the face in front. Tracks that cannot be judged (too short) rank
 *   after, by prominence.
 * Frames where no driven face is visible pass through untouched (their box is undefined).
 * The pipeline applies the choice to the frames detected so far while detection runs
 * (face-schedule.ts): a frame is decided from the clip up to 2 s past it, the last ones from the
 * whole clip.
 */
import { ProcessingError } from '../../../../errors.js';
import type { FaceDetector } from './blazeface.js';
import {
  captureFacePatch,
  scoreSpeakers,
  type ActiveSpeakerOptions,
  type FacePatch,
  type SpeakerScore,
} from './active-speaker.js';
import { trackFaces, type TrackedFace, type TrackerOptions } from './track.js';
import type { FaceBox, FaceTrack, RgbFrame } from '../types.js';

export interface FaceTrackingResult {
  tracks: TrackedFace[];
  frameCount: number;
  /** Frames that start a new shot (a hard cut); no track crosses one. */
  cuts: number[];
  /** Grey patches of each frame's detections, in detection order (for the active speaker). */
  patches: FacePatch[][];
  /** Raw detections per frame (before tracking), for diagnostics. */
  detections: FaceBox[][];
}

/** What the detector has seen so far, frame by frame (the arrays grow as frames are detected). */
export interface FaceObservations {
  detections: readonly (readonly FaceBox[])[];
  patches: readonly (readonly FacePatch[])[];
  /** Frames that start a new shot. */
  cuts: readonly number[];
}

/** Tracks over the frames observed so far (all of them once detection has ended). */
export function trackObservations(observed: FaceObservations, tracker?: TrackerOptions): FaceTrackingResult {
  const frameCount = observed.detections.length;
  return {
    tracks: trackFaces(observed.detections, tracker, observed.cuts),
    frameCount,
    cuts: [...observed.cuts],
    patches: observed.patches.slice(0, frameCount) as FacePatch[][],
    detections: observed.detections.slice(0, frameCount) as FaceBox[][],
  };
}

export interface DetectFaceTracksOptions {
  tracker?: TrackerOptions;
  /** Mean absolute change of the frame's 16x16 grey thumbnail (0-255) above which a frame starts a new shot. Default 20. */
  cutThreshold?: number;
  signal?: AbortSignal;
  /** Called after each frame with the number of frames done and everything observed so far. */
  onFrame?: (done: number, observed: FaceObservations) => void;
}

/** Runs the detector on every frame of the source (in order), then tracks the faces. */
export async function detectFaceTracks(
  frames: AsyncIterable<RgbFrame> | Iterable<RgbFrame>,
  detector: FaceDetector,
  options: DetectFaceTracksOptions = {},
): Promise<FaceTrackingResult> {
  const detections: FaceBox[][] = [];
  const patches: FacePatch[][] = [];
  const cuts: number[] = [];
  const cutThreshold = options.cutThreshold ?? DEFAULT_CUT_THRESHOLD;
  let previous: Float32Array | undefined;
  for await (const frame of frames) {
    options.signal?.throwIfAborted();
    const thumbnail = frameThumbnail(frame);
    if (previous !== undefined && thumbnailChange(previous, thumbnail) > cutThreshold) cuts.push(detections.length);
    previous = thumbnail;
    const faces = await detector.detect(frame);
    detections.push(faces);
    patches.push(faces.map((face) => captureFacePatch(frame, face)));
    options.onFrame?.(detections.length, { detections, patches, cuts });
  }
  return trackObservations({ detections, patches, cuts }, options.tracker);
}

/**
 * Within a shot the thumbnail changes by a few levels a frame (under 3 in Megamind.avi, camera
 * moves included); its cuts change it by 34-41.
 */
export const DEFAULT_CUT_THRESHOLD = 20;
const THUMBNAIL = 16;

/** Mean grey level of each cell of a 16x16 grid over the frame (every other pixel sampled). */
export function frameThumbnail(frame: RgbFrame): Float32Array {
  const sums = new Float32Array(THUMBNAIL * THUMBNAIL);
  const counts = new Uint32Array(THUMBNAIL * THUMBNAIL);
  for (let y = 0; y < frame.height; y += 2) {
    const row = Math.floor((y * THUMBNAIL) / frame.height) * THUMBNAIL;
    for (let x = 0; x < frame.width; x += 2) {
      const i = (y * frame.width + x) * 3;
      const cell = row + Math.floor((x * THUMBNAIL) / frame.width);
      sums[cell] =
        (sums[cell] as number) +
        0.299 * (frame.data[i] as number) +
        0.587 * (frame.data[i + 1] as number) +
        0.114 * (frame.data[i + 2] as number);
      counts[cell] = (counts[cell] as number) + 1;
    }
  }
  return sums.map((s, k) => s / Math.max(1, counts[k] as number));
}

export function thumbnailChange(a: Float32Array, b: Float32Array): number {
  let total = 0;
  for (let k = 0; k < a.length; k += 1) total += Math.abs((a[k] as number) - (b[k] as number));
  return total / a.length;
}

/** Summed box area over the clip divided by its frame count: mean area x share of frames present. */
export function prominence(track: FaceTrack): number {
  if (track.boxes.length === 0) return 0;
  let sum = 0;
  for (const box of track.boxes) if (box !== undefined) sum += box.width * box.height;
  return sum / track.boxes.length;
}

/** The most prominent track, or undefined when there is none. */
export function mostProminentTrack<T extends FaceTrack>(tracks: readonly T[]): T | undefined {
  let best: T | undefined;
  for (const track of tracks) if (best === undefined || prominence(track) > prominence(best)) best = track;
  return best;
}

export interface ChooseFacesOptions {
  activeSpeaker: boolean;
  /** Audio RMS per video frame (active-speaker.ts `audioEnvelope`); required when activeSpeaker is true. */
  audioEnvelope?: ArrayLike<number>;
  speaker?: ActiveSpeakerOptions;
  /** Frames two driven tracks may share (a cut seen a frame late); the higher-ranked wins them. */
  overlapTolerance?: number;
  /** Correlation added to the most prominent track's speaker score (others in proportion). Default 0.1. */
  prominenceBonus?: number;
}

export interface DrivenFaces {
  /** Driven tracks, best first. */
  tracks: TrackedFace[];
  /** Per frame: the box to drive, undefined to leave the frame untouched. */
  boxes: (FaceBox | undefined)[];
  method: 'most-prominent' | 'active-speaker';
  /** Every track's ranking figures, for logs. */
  ranking: { trackId: number; prominence: number; speaker?: SpeakerScore }[];
}

function sharedFrames(a: FaceTrack, b: FaceTrack): number {
  let n = 0;
  a.boxes.forEach((box, f) => {
    if (box !== undefined && b.boxes[f] !== undefined) n += 1;
  });
  return n;
}

/**
 * The faces to drive. Throws a ProcessingError (the job's LIPSYNC_FAILED) when the video has no face at all.
 */
export function chooseDrivenFaces(result: FaceTrackingResult, options: ChooseFacesOptions): DrivenFaces {
  if (result.tracks.length === 0) {
    throw new ProcessingError(
      `Expected a face to drive but no face was found in the video (${result.frameCount} frames searched)`,
    );
  }
  const tolerance = options.overlapTolerance ?? 2;
  const prominences = new Map(result.tracks.map((t) => [t.id, prominence(t)]));
  let speakers: Map<number, SpeakerScore> | undefined;
  if (options.activeSpeaker) {
    if (options.audioEnvelope === undefined)
      throw new TypeError('Expected an audio envelope for active speaker selection but received none');
    speakers = new Map(
      scoreSpeakers(result.tracks, result.patches, options.audioEnvelope, options.speaker).map((s) => [s.trackId, s]),
    );
  }
  const byProminence = (a: TrackedFace, b: TrackedFace): number =>
    (prominences.get(b.id) ?? 0) - (prominences.get(a.id) ?? 0);
  const topProminence = Math.max(...prominences.values());
  const bonus = options.prominenceBonus ?? 0.1;
  const rankScore = (t: TrackedFace): number | undefined => {
    const score = speakers?.get(t.id)?.score;
    return score === undefined ? undefined : score + (bonus * (prominences.get(t.id) ?? 0)) / topProminence;
  };
  const ranked = [...result.tracks].sort((a, b) => {
    const sa = rankScore(a);
    const sb = rankScore(b);
    if (sa !== undefined && sb !== undefined && sa !== sb) return sb - sa;
    if (sa !== undefined && sb === undefined) return -1;
    if (sa === undefined && sb !== undefined) return 1;
    return byProminence(a, b);
  });

  const chosen: TrackedFace[] = [];
  for (const track of ranked) {
    if (chosen.every((c) => sharedFrames(c, track) <= tolerance)) chosen.push(track);
  }
  const boxes = new Array<FaceBox | undefined>(result.frameCount).fill(undefined);
  for (let f = 0; f < result.frameCount; f += 1) {
    for (const track of chosen) {
      const box = track.boxes[f];
      if (box !== undefined) {
        boxes[f] = box;
        break;
      }
    }
  }
  return {
    tracks: chosen,
    boxes,
    method: options.activeSpeaker ? 'active-speaker' : 'most-prominent',
    ranking: ranked.map((t) => {
      const speaker = speakers?.get(t.id);
      return { trackId: t.id, prominence: prominences.get(t.id) ?? 0, ...(speaker ? { speaker } : {}) };
    }),
  };
}

/** Detector settings per kind of footage; `robust` is for vendor-lipsync-3 (close-ups, faces cut by the frame edge). */
export const FACE_DETECTION_PROFILES = {
  standard: { model: 'blazeface-back-256', margin: 0, minScore: 0.5 },
  /** A black border of a quarter of the frame around it: cut faces gain context, close-ups shrink to a size the detector knows. */
  robust: { model: 'blazeface-back-256', margin: 0.25, minScore: 0.5 },
} as const satisfies Record<string, { model: string; margin: number; minScore: number }>;

export type FaceDetectionProfile = keyof typeof FACE_DETECTION_PROFILES;
