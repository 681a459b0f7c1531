/**
 * Faces followed through a video, from per-frame detections (pure, offline: the whole clip's
 * detections are known, so smoothing can look ahead).
 *
 * 1. Association: each frame's detections are matched greedily, best overlap first, to the tracks
 *    seen in the last `maxGap + 1` frames and not before a shot cut (IoU, or for small fast faces a centre within three quarters
 *    of a face of the last one, at a similar size). An unmatched detection starts a track.
 * 2. Clean-up: a track with fewer than `minDetections` detected frames, or whose best score never
 *    reaches `confirmScore`, is dropped (one confident detection confirms a face; weak ones may then
 *    carry it, e.g. as it turns or leaves the frame).
 * 3. Gaps of up to `maxGap` frames between two detections are filled by linear interpolation (score:
 *    the lower neighbour's). Nothing is extrapolated past a track's first or last detection.
 * 4. Smoothing: a centred moving average over `smoothRadius` frames each side, within each run of
 *    consecutive boxes, on position, size and keypoints (the detector jitters by a few pixels, which
 *    would make a pasted mouth shimmer).
 */
import type { FaceBox, FaceKeypoints, FaceTrack, Point } from '../types.js';

export interface TrackerOptions {
  /** Least IoU between a track's last box and a detection for them to be the same face. */
  minIou?: number;
  /** Longest run of frames without a detection that a track bridges. */
  maxGap?: number;
  /** Fewer detected frames than this: a spurious track. */
  minDetections?: number;
  /** A track whose best detection scores below this is dropped. */
  confirmScore?: number;
  /** Moving-average half width in frames (0: no smoothing). */
  smoothRadius?: number;
}

export const DEFAULT_TRACKER_OPTIONS: Readonly<Required<TrackerOptions>> = {
  minIou: 0.3,
  maxGap: 8,
  minDetections: 3,
  confirmScore: 0.75,
  smoothRadius: 2,
};

/** A track plus, per frame, the index of the detection it came from (undefined: interpolated or absent). */
export interface TrackedFace extends FaceTrack {
  detections: (number | undefined)[];
}

const KEYPOINTS: readonly (keyof FaceKeypoints)[] = ['leftEye', 'rightEye', 'nose', 'mouth', 'leftEar', 'rightEar'];

function boxIou(a: FaceBox, b: FaceBox): number {
  const x0 = Math.max(a.x, b.x);
  const y0 = Math.max(a.y, b.y);
  const x1 = Math.min(a.x + a.width, b.x + b.width);
  const y1 = Math.min(a.y + a.height, b.y + b.height);
  const inner = Math.max(0, x1 - x0) * Math.max(0, y1 - y0);
  const union = a.width * a.height + b.width * b.height - inner;
  return union > 0 ? inner / union : 0;
}

/** How well a detection continues a track's last box: > 0 when acceptable, higher is better. */
function affinity(last: FaceBox, next: FaceBox, minIou: number): number {
  const overlap = boxIou(last, next);
  if (overlap >= minIou) return 1 + overlap;
  const size = Math.sqrt(last.width * last.height);
  const ratio = Math.sqrt(next.width * next.height) / size;
  const dx = last.x + last.width / 2 - (next.x + next.width / 2);
  const dy = last.y + last.height / 2 - (next.y + next.height / 2);
  const distance = Math.hypot(dx, dy) / size;
  return ratio > 2 / 3 && ratio < 3 / 2 && distance < 0.75 ? 1 - distance : 0;
}

function checkOptions(o: Required<TrackerOptions>): void {
  const bad = (name: string, what: string, value: number): never => {
    throw new RangeError(`Expected ${what} for ${name} but received ${value}`);
  };
  if (!(o.minIou > 0 && o.minIou < 1)) bad('minIou', 'a number in (0, 1)', o.minIou);
  if (!(Number.isInteger(o.maxGap) && o.maxGap >= 0)) bad('maxGap', 'a non-negative integer', o.maxGap);
  if (!(Number.isInteger(o.minDetections) && o.minDetections >= 1))
    bad('minDetections', 'a positive integer', o.minDetections);
  if (!(o.confirmScore >= 0 && o.confirmScore <= 1)) bad('confirmScore', 'a number in [0, 1]', o.confirmScore);
  if (!(Number.isInteger(o.smoothRadius) && o.smoothRadius >= 0))
    bad('smoothRadius', 'a non-negative integer', o.smoothRadius);
}

interface OpenTrack {
  boxes: Map<number, { box: FaceBox; index: number }>;
  lastFrame: number;
  last: FaceBox;
}

function associate(
  detections: readonly (readonly FaceBox[])[],
  o: Required<TrackerOptions>,
  cuts: ReadonlySet<number>,
): OpenTrack[] {
  const all: OpenTrack[] = [];
  let open: OpenTrack[] = [];
  detections.forEach((faces, frame) => {
    // A face after a cut is another shot's, even where it overlaps one of the last shot.
    open = cuts.has(frame) ? [] : open.filter((t) => frame - t.lastFrame <= o.maxGap + 1);
    const pairs: { track: OpenTrack; index: number; value: number }[] = [];
    for (const track of open) {
      faces.forEach((face, index) => {
        const value = affinity(track.last, face, o.minIou);
        if (value > 0) pairs.push({ track, index, value });
      });
    }
    pairs.sort((a, b) => b.value - a.value);
    const usedTracks = new Set<OpenTrack>();
    const usedFaces = new Set<number>();
    for (const { track, index } of pairs) {
      if (usedTracks.has(track) || usedFaces.has(index)) continue;
      usedTracks.add(track);
      usedFaces.add(index);
      const box = faces[index] as FaceBox;
      track.boxes.set(frame, { box, index });
      track.lastFrame = frame;
      track.last = box;
    }
    faces.forEach((box, index) => {
      if (usedFaces.has(index)) return;
      const track: OpenTrack = { boxes: new Map([[frame, { box, index }]]), lastFrame: frame, last: box };
      all.push(track);
      open.push(track);
    });
  });
  return all;
}

function lerpPoint(a: Point, b: Point, t: number): Point {
  return [a[0] + (b[0] - a[0]) * t, a[1] + (b[1] - a[1]) * t];
}

export function interpolateBox(a: FaceBox, b: FaceBox, t: number): FaceBox {
  const keypoints = {} as Record<keyof FaceKeypoints, Point>;
  for (const k of KEYPOINTS) keypoints[k] = lerpPoint(a.keypoints[k], b.keypoints[k], t);
  return {
    x: a.x + (b.x - a.x) * t,
    y: a.y + (b.y - a.y) * t,
    width: a.width + (b.width - a.width) * t,
    height: a.height + (b.height - a.height) * t,
    score: Math.min(a.score, b.score),
    keypoints,
  };
}

/** Centred moving average within each run of consecutive defined boxes; scores are kept. */
export function smoothBoxes(boxes: readonly (FaceBox | undefined)[], radius: number): (FaceBox | undefined)[] {
  if (radius === 0) return [...boxes];
  return boxes.map((box, i) => {
    if (box === undefined) return undefined;
    let lo = i;
    while (lo > i - radius && boxes[lo - 1] !== undefined) lo -= 1;
    let hi = i;
    while (hi < i + radius && boxes[hi + 1] !== undefined) hi += 1;
    // Symmetric window, so a run's ends are not dragged towards its middle.
    const half = Math.min(i - lo, hi - i);
    const window = boxes.slice(i - half, i + half + 1) as FaceBox[];
    const mean = (f: (b: FaceBox) => number): number => window.reduce((s, b) => s + f(b), 0) / window.length;
    const keypoints = {} as Record<keyof FaceKeypoints, Point>;
    for (const k of KEYPOINTS) keypoints[k] = [mean((b) => b.keypoints[k][0]), mean((b) => b.keypoints[k][1])];
    return {
      x: mean((b) => b.x),
      y: mean((b) => b.y),
      width: mean((b) => b.width),
      height: mean((b) => b.height),
      score: box.score,
      keypoints,
    };
  });
}

/**
 * Tracks from per-frame detections (`detections[frame]` lists that frame's faces). `cuts` lists
 * the frames that start a new shot: no track continues across one. Every track has one entry per
 * frame; ids count from 0 in order of first appearance.
 */
export function trackFaces(
  detections: readonly (readonly FaceBox[])[],
  options: TrackerOptions = {},
  cuts: Iterable<number> = [],
): TrackedFace[] {
  const o = { ...DEFAULT_TRACKER_OPTIONS, ...options };
  checkOptions(o);
  const frameCount = detections.length;
  const kept = associate(detections, o, new Set(cuts)).filter((t) => {
    const scores = [...t.boxes.values()].map((d) => d.box.score);
    return scores.length >= o.minDetections && Math.max(...scores) >= o.confirmScore;
  });
  return kept.map((track, id) => {
    const raw: (FaceBox | undefined)[] = new Array<FaceBox | undefined>(frameCount).fill(undefined);
    const sources: (number | undefined)[] = new Array<number | undefined>(frameCount).fill(undefined);
    const frames = [...track.boxes.keys()].sort((a, b) => a - b);
    frames.forEach((frame, k) => {
      const here = track.boxes.get(frame) as { box: FaceBox; index: number };
      raw[frame] = here.box;
      sources[frame] = here.index;
      const nextFrame = frames[k + 1];
      if (nextFrame === undefined || nextFrame - frame - 1 > o.maxGap) return;
      const next = (track.boxes.get(nextFrame) as { box: FaceBox }).box;
      for (let f = frame + 1; f < nextFrame; f += 1)
        raw[f] = interpolateBox(here.box, next, (f - frame) / (nextFrame - frame));
    });
    return { id, boxes: smoothBoxes(raw, o.smoothRadius), detections: sources };
  });
}
