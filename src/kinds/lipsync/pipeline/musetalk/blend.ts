/**
 * Pasting MuseTalk's 256 x 256 result back into the frame with a feathered mask that keeps the
 * upper face (the reference's musetalk/utils/blending.py get_image), without its BiSeNet face
 * parser. Pure geometry, and one in-place write into the frame.
 *
 * The reference: over the blend square (face-geometry.ts museTalkBlendBox, side 2s) it takes the
 * parser's face region inside the face box, keeps only its rows from the square's middle down
 * (upper_boundary_ratio 0.5: the upper face stays the source's), blurs it with a Gaussian of
 * int(0.05 * side // 2 * 2) + 1 taps (OpenCV's sigma for that size), and pastes the result,
 * resized to the box (bilinear), through that mask. In its v1.5 'jaw' mode the parser region is
 * the skin and lips of the lower face, widened a little below the chin, without the nose.
 *
 * Here the region is drawn from the box and keypoints instead: the half-ellipse under the square's
 * middle row as wide as the face box (cheek to cheek) reaching to the box's bottom (the chin plus
 * the margin), without an ellipse around the nose keypoint (0.3 x 0.12 eye-to-mouth distances,
 * where the parser leaves the nose out). The blur is the reference's.
 */
import { checkFrame, eyeMouthDistance, sampleBilinear, sampleMax } from '../compose/crop.js';
import type { DeepRgbFrame, FaceBox } from '../types.js';
import { museTalkBlendBox, type PixelBox } from './face-geometry.js';

/** The reference's upper_boundary_ratio: rows of the blend square above this fraction keep the source. */
export const MUSETALK_UPPER_BOUNDARY = 0.5;
/** Half-axes of the nose left out of the mask, in eye-to-mouth distances. */
export const NOSE_HOLE = Object.freeze({ across: 0.3, down: 0.12 });

export interface MuseTalkBlendMask {
  /** The blend square in frame pixels (may reach past the frame). */
  square: PixelBox;
  /** The face box the result is pasted into. */
  box: PixelBox;
  /** Alpha 0..1 over the square, row-major, side * side. */
  alpha: Float32Array;
}

/** The reference's blur size for a square of `side` pixels: int(0.05 * side // 2 * 2) + 1. */
export function museTalkBlurSize(side: number): number {
  return Math.floor((0.05 * side) / 2) * 2 + 1;
}

/** OpenCV's getGaussianKernel(ksize, 0): its fixed tables up to 7 taps, else sigma 0.3((k-1)/2 - 1) + 0.8. */
export function gaussianKernel(size: number): Float64Array {
  if (!Number.isInteger(size) || size < 1 || size % 2 === 0)
    throw new RangeError(`Expected an odd positive kernel size but received ${String(size)}`);
  const fixed: Record<number, number[]> = {
    1: [1],
    3: [0.25, 0.5, 0.25],
    5: [0.0625, 0.25, 0.375, 0.25, 0.0625],
    7: [0.03125, 0.109375, 0.21875, 0.28125, 0.21875, 0.109375, 0.03125],
  };
  const table = fixed[size];
  if (table !== undefined) return Float64Array.from(table);
  const sigma = 0.3 * ((size - 1) * 0.5 - 1) + 0.8;
  const half = (size - 1) / 2;
  const k = Float64Array.from({ length: size }, (_, i) => Math.exp(-((i - half) ** 2) / (2 * sigma * sigma)));
  const sum = k.reduce((a, b) => a + b, 0);
  return k.map((v) => v / sum);
}

/** OpenCV's default border (BORDER_REFLECT_101): ..., 2, 1, [0, 1, ..., n-1], n-2, ... */
function reflect101(i: number, n: number): number {
  if (n === 1) return 0;
  const period = 2 * (n - 1);
  const j = ((i % period) + period) % period;
  return j >= n ? period - j : j;
}

/** A separable Gaussian blur of a side x side plane, OpenCV's GaussianBlur with its default border. */
export function gaussianBlur(plane: Float32Array, side: number, size: number): Float32Array {
  const k = gaussianKernel(size);
  const half = (size - 1) / 2;
  const rows = new Float32Array(plane.length);
  for (let y = 0; y < side; y++) {
    for (let x = 0; x < side; x++) {
      let sum = 0;
      for (let i = 0; i < size; i++) sum += k[i]! * plane[y * side + reflect101(x + i - half, side)]!;
      rows[y * side + x] = sum;
    }
  }
  const out = new Float32Array(plane.length);
  for (let y = 0; y < side; y++) {
    for (let x = 0; x < side; x++) {
      let sum = 0;
      for (let i = 0; i < size; i++) sum += k[i]! * rows[reflect101(y + i - half, side) * side + x]!;
      out[y * side + x] = sum;
    }
  }
  return out;
}

/**
 * The region the result replaces, before the blur, over the blend square: inside the face box,
 * from the square's middle row down, inside the half-ellipse, outside the nose.
 */
export function museTalkBlendRegion(face: FaceBox, box: PixelBox): { square: PixelBox; region: Float32Array } {
  const square = museTalkBlendBox(box);
  const side = square.x2 - square.x1;
  const region = new Float32Array(side * side);
  const top = Math.trunc(side * MUSETALK_UPPER_BOUNDARY);
  const cx = (box.x1 + box.x2) / 2;
  const rx = (box.x2 - box.x1) / 2;
  const ry = box.y2 - (square.y1 + top);
  const d = eyeMouthDistance(face);
  const [noseX, noseY] = face.keypoints.nose;
  const holeX = NOSE_HOLE.across * d;
  const holeY = NOSE_HOLE.down * d;
  for (let v = top; v < side; v++) {
    const y = square.y1 + v;
    if (y < box.y1 || y >= box.y2) continue;
    const py = y + 0.5 - (square.y1 + top);
    for (let u = 0; u < side; u++) {
      const x = square.x1 + u;
      if (x < box.x1 || x >= box.x2) continue;
      const px = x + 0.5 - cx;
      if (ry <= 0 || (px / rx) ** 2 + (py / ry) ** 2 > 1) continue;
      if (holeX > 0 && holeY > 0 && ((x + 0.5 - noseX) / holeX) ** 2 + ((y + 0.5 - noseY) / holeY) ** 2 <= 1) continue;
      region[v * side + u] = 1;
    }
  }
  return { square, region };
}

/** The feathered mask: the region blurred as the reference blurs its parser's mask. */
export function museTalkBlendMask(face: FaceBox, box: PixelBox): MuseTalkBlendMask {
  const { square, region } = museTalkBlendRegion(face, box);
  const side = square.x2 - square.x1;
  const alpha = side > 0 ? gaussianBlur(region, side, museTalkBlurSize(side)) : region;
  return { square, box, alpha };
}

/**
 * Blends a generated square face (`size` x `size` RGB, 8-bit) into the frame, in place: resized to
 * the face box bilinearly (OpenCV's INTER_LINEAR mapping) and mixed by the mask. Pixels where the
 * mask is 0 and those outside the frame are not written. Returns how many pixels were blended.
 */
export function blendMuseTalkFace(
  frame: DeepRgbFrame,
  generated: Uint8Array,
  size: number,
  mask: MuseTalkBlendMask,
): number {
  checkFrame(frame);
  if (!Number.isInteger(size) || size < 1 || generated.length !== size * size * 3) {
    throw new RangeError(
      `Expected the generated face to hold ${size} x ${size} x 3 bytes but received ${generated.length}`,
    );
  }
  const { square, box, alpha } = mask;
  const side = square.x2 - square.x1;
  if (alpha.length !== side * side)
    throw new RangeError(`Expected a mask of ${side * side} values but received ${alpha.length}`);
  const { width, height, data } = frame;
  const gain = sampleMax(data) / 255;
  const scaleX = size / (box.x2 - box.x1);
  const scaleY = size / (box.y2 - box.y1);
  const rgb = new Float64Array(3);
  let blended = 0;
  const y0 = Math.max(0, box.y1, square.y1);
  const y1 = Math.min(height, box.y2, square.y2);
  const x0 = Math.max(0, box.x1, square.x1);
  const x1 = Math.min(width, box.x2, square.x2);
  for (let y = y0; y < y1; y++) {
    for (let x = x0; x < x1; x++) {
      const a = alpha[(y - square.y1) * side + (x - square.x1)]!;
      if (a <= 0) continue;
      sampleBilinear(generated, size, size, (x - box.x1 + 0.5) * scaleX - 0.5, (y - box.y1 + 0.5) * scaleY - 0.5, rgb);
      const o = 3 * (y * width + x);
      for (let c = 0; c < 3; c++) {
        const src = data[o + c]!;
        data[o + c] = Math.round(src + Math.min(1, a) * (rgb[c]! * gain - src));
      }
      blended++;
    }
  }
  return blended;
}
