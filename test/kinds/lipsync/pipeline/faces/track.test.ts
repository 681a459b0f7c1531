import { describe, expect, it } from 'vitest';
import {
  DEFAULT_TRACKER_OPTIONS,
  interpolateBox,
  smoothBoxes,
  trackFaces,
  type FaceBox,
} from '../../../../../src/kinds/lipsync/pipeline/index.js';

/** A 100 px face whose top-left corner is (x, y); keypoints at fixed places inside it. */
function face(x: number, y: number, score = 0.9, size = 100): FaceBox {
  const at = (fx: number, fy: number): readonly [number, number] => [x + fx * size, y + fy * size];
  return {
    x,
    y,
    width: size,
    height: size,
    score,
    keypoints: {
      leftEye: at(0.3, 0.35),
      rightEye: at(0.7, 0.35),
      nose: at(0.5, 0.55),
      mouth: at(0.5, 0.75),
      leftEar: at(0.05, 0.45),
      rightEar: at(0.95, 0.45),
    },
  };
}

/** Deterministic jitter in [-amplitude, amplitude]. */
function jitter(i: number, amplitude: number): number {
  return amplitude * Math.sin(i * 12.9898 + 78.233 * Math.cos(i));
}

describe('trackFaces', () => {
  it('follows one moving face through every frame and smooths its jitter', () => {
    const truth = (f: number): number => 100 + 2 * f;
    const detections = Array.from({ length: 40 }, (_, f) => [face(truth(f) + jitter(f, 3), 50 + jitter(f + 100, 3))]);
    const [track, ...others] = trackFaces(detections);
    expect(others).toEqual([]);
    expect(track?.id).toBe(0);
    expect(track?.boxes.every((b) => b !== undefined)).toBe(true);
    expect(track?.detections).toEqual(Array.from({ length: 40 }, () => 0));
    const error = (boxes: (FaceBox | undefined)[]): number =>
      boxes.reduce((sum, b, f) => sum + Math.abs((b?.x ?? Number.NaN) - truth(f)), 0) / boxes.length;
    expect(error(track?.boxes ?? [])).toBeLessThan(0.6 * error(detections.map((d) => d[0])));
  });

  it('fills a short gap by linear interpolation, with the lower neighbour score', () => {
    const detections: FaceBox[][] = [
      [face(0, 0, 0.9)],
      [face(10, 0, 0.9)],
      [],
      [],
      [],
      [face(50, 20, 0.8)],
      [face(60, 20, 0.8)],
    ];
    const [track] = trackFaces(detections, { smoothRadius: 0 });
    expect(track?.boxes.map((b) => b?.x)).toEqual([0, 10, 20, 30, 40, 50, 60]);
    expect(track?.boxes.map((b) => b?.y)).toEqual([0, 0, 5, 10, 15, 20, 20]);
    expect(track?.boxes[3]?.score).toBe(0.8);
    expect(track?.boxes[3]?.keypoints.mouth).toEqual([80, 85]);
    expect(track?.detections).toEqual([0, 0, undefined, undefined, undefined, 0, 0]);
  });

  it('splits a face that is gone longer than maxGap, and never extrapolates', () => {
    const here = (n: number): FaceBox[][] => Array.from({ length: n }, () => [face(10, 10)]);
    const none = (n: number): FaceBox[][] => Array.from({ length: n }, () => []);
    const detections = [...none(2), ...here(5), ...none(DEFAULT_TRACKER_OPTIONS.maxGap + 1), ...here(5), ...none(3)];
    const tracks = trackFaces(detections);
    expect(DEFAULT_TRACKER_OPTIONS.maxGap).toBe(8);
    expect(tracks.map((t) => t.boxes.map((b) => (b === undefined ? '.' : '#')).join(''))).toEqual([
      '..#####.................',
      '................#####...',
    ]);
  });

  it('never continues a track across a shot cut, even where the boxes overlap', () => {
    const detections = Array.from({ length: 12 }, (_, f) => [face(f < 6 ? 100 : 110, 100)]);
    expect(trackFaces(detections)).toHaveLength(1);
    const tracks = trackFaces(detections, {}, [6]);
    expect(tracks.map((t) => t.boxes.map((b) => (b === undefined ? '.' : '#')).join(''))).toEqual([
      '######......',
      '......######',
    ]);
    // Smoothing stays within each shot: no box before the cut moves towards the next shot's face.
    expect(tracks[0]?.boxes[5]?.x).toBe(100);
  });

  it('drops tracks that are too short or never confident', () => {
    const detections = Array.from({ length: 20 }, (_, f) => [
      face(0, 0, 0.9),
      ...(f >= 5 && f < 7 ? [face(400, 0, 0.95)] : []),
      face(800, 0, 0.6),
    ]);
    const tracks = trackFaces(detections);
    expect(tracks).toHaveLength(1);
    expect(tracks[0]?.boxes.every((b) => b?.x === 0)).toBe(true);
    // One confident detection is enough to keep an otherwise weak face.
    detections[10]?.splice(1, 1, face(800, 0, 0.8));
    expect(trackFaces(detections).map((t) => t.boxes[0]?.x)).toEqual([0, 800]);
  });

  it('keeps two faces apart whatever order the detector lists them in', () => {
    const detections = Array.from({ length: 30 }, (_, f) => {
      const a = face(100 + f, 100, 0.9);
      const b = face(300 - f, 110, 0.85);
      return f % 2 === 0 ? [a, b] : [b, a];
    });
    const tracks = trackFaces(detections);
    expect(tracks).toHaveLength(2);
    expect(tracks[0]?.boxes.map((b) => Math.round(b?.x ?? -1))).toEqual(Array.from({ length: 30 }, (_, f) => 100 + f));
    expect(tracks[1]?.boxes.map((b) => Math.round(b?.x ?? -1))).toEqual(Array.from({ length: 30 }, (_, f) => 300 - f));
    expect(tracks[0]?.detections.slice(0, 4)).toEqual([0, 1, 0, 1]);
  });

  it('follows a small face moving faster than its boxes overlap', () => {
    // 30 px faces 20 px apart: IoU 0.2, below minIou; the centre moved two thirds of a face.
    const detections = Array.from({ length: 12 }, (_, f) => [face(f * 20, 0, 0.9, 30)]);
    expect(trackFaces(detections)).toHaveLength(1);
  });

  it.each([
    [{ minIou: 0 }, 'Expected a number in (0, 1) for minIou but received 0'],
    [{ maxGap: -1 }, 'Expected a non-negative integer for maxGap but received -1'],
    [{ minDetections: 0 }, 'Expected a positive integer for minDetections but received 0'],
    [{ smoothRadius: 1.5 }, 'Expected a non-negative integer for smoothRadius but received 1.5'],
  ])('refuses options %j', (options, message) => {
    expect(() => trackFaces([], options)).toThrow(message);
  });
});

describe('smoothing and interpolation', () => {
  it('averages a centred window, narrowing it at the ends of a run', () => {
    const boxes = [face(0, 0), face(10, 0), face(50, 0), face(30, 0), undefined, face(90, 0)];
    const smoothed = smoothBoxes(boxes, 1);
    expect(smoothed.map((b) => b?.x)).toEqual([0, 20, 30, 30, undefined, 90]);
    expect(smoothed[2]?.keypoints.nose[0]).toBeCloseTo(80, 9);
  });

  it('interpolates every field linearly', () => {
    const mid = interpolateBox(face(0, 0, 0.9, 100), face(100, 50, 0.7, 200), 0.5);
    expect([mid.x, mid.y, mid.width, mid.height, mid.score]).toEqual([50, 25, 150, 150, 0.7]);
    expect(mid.keypoints.leftEye).toEqual([(30 + 160) / 2, (35 + 120) / 2]);
  });
});
