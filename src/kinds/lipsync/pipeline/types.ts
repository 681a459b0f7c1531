/**
 * Shapes shared by the lip-sync stages (timeline, audio features, faces, inference, compositing).
 * Coordinates are in pixels of the source frame, origin top-left, x to the right, y down.
 */

export type Point = readonly [x: number, y: number];

/** BlazeFace's six keypoints, named from the viewer's side: `leftEye` is the eye on the image's left. */
export interface FaceKeypoints {
  leftEye: Point;
  rightEye: Point;
  nose: Point;
  mouth: Point;
  leftEar: Point;
  rightEar: Point;
}

export interface FaceBox {
  x: number;
  y: number;
  width: number;
  height: number;
  /** Detector confidence 0..1 (interpolated boxes carry the lower of their neighbours'). */
  score: number;
  keypoints: FaceKeypoints;
}

/** One face followed through the video: a box per frame, undefined where the face is absent. */
export interface FaceTrack {
  id: number;
  boxes: (FaceBox | undefined)[];
}

/** An 8-bit interleaved RGB frame. */
export interface RgbFrame {
  data: Uint8Array;
  width: number;
  height: number;
}

/**
 * A frame of the output pass, which crops faces from it and pastes mouths into it: 8-bit, or 16-bit
 * (rgb48le, read in the platform's little-endian order) where the colour plan keeps more than
 * 8 bits (video/colour.ts). An RgbFrame is one.
 */
export interface DeepRgbFrame {
  data: Uint8Array | Uint16Array;
  width: number;
  height: number;
}
