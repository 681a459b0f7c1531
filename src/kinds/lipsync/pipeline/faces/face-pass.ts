/**
 * The lip-sync pipeline's first pass over the video: every source frame the output can show is
 * decoded, faces are detected and tracked (faces.ts), and the frames are counted (the count the
 * timeline is planned from: containers such as WebM and GIF do not declare one).
 *
 * Frames are decoded at a detection size, never the full size: BlazeFace sees a 256-pixel
 * letterbox of the frame whatever its size, so a 720p frame would only cost conversion, pipe and
 * resize time. By default the size is exactly the frame's part of the detector's letterbox, so the
 * detector's own resize has nothing to do (measured: 1.3 ms per frame instead of 3.7 from 640x360
 * and 4.7 from 1280x720); when the active speaker must be judged, frames are kept up to
 * `DETECTION_MAX_SIDE`, so that the mouths in the 48-pixel active-speaker patches keep their
 * detail. Boxes are mapped back to frame pixels afterwards.
 */
import { letterboxGeometry, type FaceDetector } from './blazeface.js';
import { detectFaceTracks, type FaceObservations, type FaceTrackingResult } from './faces.js';
import { ffmpegFrameStream, sourceDecoderArgs, type SourceDecodeSpec } from '../frames/index.js';
import type { FaceBox, FaceKeypoints, Point, RgbFrame } from '../types.js';
import type { Size } from '../../../../video/index.js';
import { definedFields } from '../../../../defined-fields.js';

export const DETECTION_MAX_SIDE = 640;

/** The displayed size scaled down (never up) to at most `maxSide` on the longer side. */
export function detectionSize(size: Size, maxSide = DETECTION_MAX_SIDE): Size {
  const scale = Math.min(1, maxSide / Math.max(size.width, size.height));
  return { width: Math.max(1, Math.round(size.width * scale)), height: Math.max(1, Math.round(size.height * scale)) };
}

/** The frame's part of a detector's letterbox (input edge, border margin), never larger than the frame. */
export function letterboxSize(size: Size, inputSize: number, margin = 0): Size {
  const box = letterboxGeometry(size.width, size.height, inputSize, margin);
  if (box.innerWidth >= size.width || box.innerHeight >= size.height) return size;
  return { width: box.innerWidth, height: box.innerHeight };
}

function scalePoint([x, y]: Point, sx: number, sy: number): Point {
  return [x * sx, y * sy];
}

/** A box found at one size, in the pixels of a frame `sx` x `sy` times larger. */
export function scaleBox(box: FaceBox, sx: number, sy: number): FaceBox {
  const k = box.keypoints;
  const keypoints: FaceKeypoints = {
    leftEye: scalePoint(k.leftEye, sx, sy),
    rightEye: scalePoint(k.rightEye, sx, sy),
    nose: scalePoint(k.nose, sx, sy),
    mouth: scalePoint(k.mouth, sx, sy),
    leftEar: scalePoint(k.leftEar, sx, sy),
    rightEar: scalePoint(k.rightEar, sx, sy),
  };
  return { x: box.x * sx, y: box.y * sy, width: box.width * sx, height: box.height * sy, score: box.score, keypoints };
}

export interface FacePassInput {
  ffmpeg: string;
  /** The source at its displayed size. */
  spec: SourceDecodeSpec;
  /** The size frames are detected at; default detectionSize(spec.size). */
  size?: Size;
  /** Decode at most this many frames (frames past the output's last never matter). */
  limit?: number;
  detector: FaceDetector;
  signal?: AbortSignal;
  /** After each frame: frames done and everything observed so far (in detection-size pixels). */
  onFrame?: (done: number, observed: FaceObservations) => void;
}

export interface FacePassResult {
  /** Tracks, detections and patches in detection-size pixels. */
  tracking: FaceTrackingResult;
  /** Frames decoded (the source's count, or `limit`). */
  frameCount: number;
  detectionSize: Size;
  /** Multiply detection-size coordinates by these to get frame pixels. */
  toFrame: { x: number; y: number };
  ms: number;
}

/** What to multiply detection-size coordinates by to get frame pixels. */
export function toFramePixels(frame: Size, detection: Size): { x: number; y: number } {
  return { x: frame.width / detection.width, y: frame.height / detection.height };
}

export async function runFacePass(input: FacePassInput): Promise<FacePassResult> {
  const started = performance.now();
  const size = input.size ?? detectionSize(input.spec.size);
  const frameBytes = size.width * size.height * 3;
  const args = sourceDecoderArgs({ ...input.spec, size }, input.limit === undefined ? {} : { end: input.limit });
  const stream = ffmpegFrameStream(input.ffmpeg, args, frameBytes, input.signal);
  async function* frames(): AsyncGenerator<RgbFrame> {
    for (;;) {
      const data = await stream.next();
      if (data === null) return;
      yield {
        data: new Uint8Array(data.buffer, data.byteOffset, data.byteLength),
        width: size.width,
        height: size.height,
      };
    }
  }
  let tracking: FaceTrackingResult;
  try {
    tracking = await detectFaceTracks(
      frames(),
      input.detector,
      definedFields({ signal: input.signal, onFrame: input.onFrame }),
    );
  } finally {
    await stream.close();
  }
  return {
    tracking,
    frameCount: tracking.frameCount,
    detectionSize: size,
    toFrame: toFramePixels(input.spec.size, size),
    ms: performance.now() - started,
  };
}
