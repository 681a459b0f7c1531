/**
 * MuseTalk 1.5's face geometry, from the project's detector (BlazeFace: a box and six keypoints)
 * instead of the reference's S3FD + DWPose landmarks, whose licences do not allow a paid service.
 * Pure: boxes and keypoints in, integer pixel boxes out.
 *
 * The reference (musetalk/utils/preprocessing.py get_landmark_and_bbox; scripts/inference.py):
 *   - the face box runs across from the leftmost to the rightmost of the 68 face landmarks (the jaw
 *     line's ends, cheek to cheek), down to the lowest (the chin), and up from landmark 29 (the lower
 *     nose bridge) as far as the chin is below it, so the bridge is the box's vertical middle;
 *   - v1.5 adds `extra_margin` (10) pixels below the chin, clipped to the frame;
 *   - the crop frame[y1:y2, x1:x2] is resized to 256 x 256 (crop.ts does it, with OpenCV's Lanczos-4);
 *   - the result is pasted back blended over a square `expand` (1.5) times the box's larger half
 *     side around its centre (blend-mask.ts).
 * Here the keypoints stand in for the landmarks, through the face proportions compose/crop.ts uses
 * (eye-to-mouth distance d, the median of three estimates): the chin ~0.68 d below the mouth, and
 * landmark 29 ~0.1 d above BlazeFace's nose tip (landmark 30). Across, BlazeFace's box is cheek to
 * cheek, as the jaw line's ends are.
 */
import { eyeMouthDistance } from '../compose/crop.js';
import type { FaceBox } from '../types.js';

/** A box of whole frame pixels: columns x1 .. x2 - 1, rows y1 .. y2 - 1 (numpy's frame[y1:y2, x1:x2]). */
export interface PixelBox {
  x1: number;
  y1: number;
  x2: number;
  y2: number;
}

export interface MuseTalkFaceOptions {
  /** Pixels added below the chin (the reference's --extra_margin, default 10). */
  extraMargin?: number;
}

export const MUSETALK_EXTRA_MARGIN = 10;
/** The reference's get_image `expand`: the blend square's half side over the box's larger half side. */
export const MUSETALK_BLEND_EXPAND = 1.5;
/** Chin below the mouth keypoint, in eye-to-mouth distances (compose/mask.ts's face proportions). */
export const CHIN_PER_EYE_MOUTH = 0.68;
/** Landmark 29 (lower nose bridge) above BlazeFace's nose tip, in eye-to-mouth distances. */
export const BRIDGE_ABOVE_NOSE_TIP = 0.1;

function finite(name: string, value: number): void {
  if (!Number.isFinite(value))
    throw new RangeError(`Expected ${name} to be a finite number but received ${String(value)}`);
}

/**
 * The reference's face box for a detected face, clipped to the frame; undefined where nothing of
 * it lies in the frame (the frame then passes through, as the reference skips a frame without a
 * usable box).
 */
export function museTalkFaceBox(
  face: FaceBox,
  frameWidth: number,
  frameHeight: number,
  opts: MuseTalkFaceOptions = {},
): PixelBox | undefined {
  const margin = opts.extraMargin ?? MUSETALK_EXTRA_MARGIN;
  if (!Number.isInteger(margin) || margin < 0)
    throw new RangeError(`Expected extraMargin to be a non-negative integer but received ${String(margin)}`);
  if (!Number.isInteger(frameWidth) || !Number.isInteger(frameHeight) || frameWidth < 1 || frameHeight < 1) {
    throw new RangeError(`Expected a positive integer frame size but received ${frameWidth}x${frameHeight}`);
  }
  const { nose, mouth } = face.keypoints;
  for (const [name, value] of [
    ['box.x', face.x],
    ['box.width', face.width],
    ['nose.y', nose[1]],
    ['mouth.y', mouth[1]],
  ] as const)
    finite(name, value);
  const d = eyeMouthDistance(face);
  finite('the eye-to-mouth distance', d);
  const chin = Math.round(mouth[1] + CHIN_PER_EYE_MOUTH * d);
  const bridge = Math.round(nose[1] - BRIDGE_ABOVE_NOSE_TIP * d);
  const x1 = Math.max(0, Math.round(face.x));
  const x2 = Math.min(frameWidth, Math.round(face.x + face.width));
  const y1 = Math.max(0, bridge - (chin - bridge));
  const y2 = Math.min(frameHeight, chin + margin);
  if (x2 - x1 < 1 || y2 - y1 < 1) return undefined;
  return { x1, y1, x2, y2 };
}

/**
 * The square the result is blended over (the reference's get_crop_box): centred on the box's centre
 * (integer halves, as Python's //), half side int(max(w, h) // 2 * expand). It may reach past the
 * frame; the blend draws only what lies inside.
 */
export function museTalkBlendBox(box: PixelBox, expand = MUSETALK_BLEND_EXPAND): PixelBox {
  const cx = Math.floor((box.x1 + box.x2) / 2);
  const cy = Math.floor((box.y1 + box.y2) / 2);
  const s = Math.trunc(Math.floor(Math.max(box.x2 - box.x1, box.y2 - box.y1) / 2) * expand);
  return { x1: cx - s, y1: cy - s, x2: cx + s, y2: cy + s };
}
