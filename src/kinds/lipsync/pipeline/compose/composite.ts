/**
 * Pasting a generated face back into its frame, in place: each frame pixel under the crop is mapped
 * into the crop (turned back by the crop's angle when the face was aligned), the generated image is
 * sampled there bilinearly, and the two are blended by the mouth mask. Pixels where the mask is 0,
 * and pixels the crop does not cover, are never written, so they keep the source's exact values;
 * crop parts past the frame edge are simply not drawn. The frame keeps its size.
 *
 * The generated face is 8-bit (the network's precision); into a 16-bit frame it is scaled to 16
 * bits (x257) and blended there, so the frame's other pixels keep every bit.
 *
 * The generated image may be larger than the model's 96x96 (vendor-lipsync-2-pro's super-resolved
 * mouth); any square size works, since sampling happens in crop-normalised coordinates.
 */
import { checkCrop, checkFrame, cropBounds, sampleBilinear, sampleMax, type FaceCrop } from './crop.js';
import { DEFAULT_MOUTH_MASK, checkMask, maskAlpha, type MouthMask } from './mask.js';
import type { DeepRgbFrame } from '../types.js';

/** A square interleaved RGB image produced for a crop. */
export interface GeneratedFace {
  data: Uint8Array;
  size: number;
}

export interface CompositeStats {
  /** Frame pixels the mask reached (alpha > 0) and that were blended. */
  blended: number;
}

export function compositeFace(
  frame: DeepRgbFrame,
  generated: GeneratedFace,
  crop: FaceCrop,
  mask: Readonly<MouthMask> = DEFAULT_MOUTH_MASK,
): CompositeStats {
  checkFrame(frame);
  checkCrop(crop);
  checkMask(mask);
  const { size } = generated;
  if (!Number.isInteger(size) || size < 1 || generated.data.length !== size * size * 3) {
    throw new RangeError(
      `Expected the generated face to hold size * size * 3 bytes for a positive integer size but received ${generated.data.length} bytes for size ${String(size)}`,
    );
  }
  const { width, height, data } = frame;
  const { x0, y0, x1, y1 } = cropBounds(crop, width, height);
  const cos = Math.cos(crop.angle);
  const sin = Math.sin(crop.angle);
  const invW = 1 / crop.width;
  const invH = 1 / crop.height;
  const rgb = new Float64Array(3);
  const gain = sampleMax(data) / 255;
  let blended = 0;
  for (let y = y0; y < y1; y++) {
    const py = y + 0.5 - crop.cy;
    for (let x = x0; x < x1; x++) {
      const px = x + 0.5 - crop.cx;
      const u = (cos * px + sin * py) * invW + 0.5;
      const v = (-sin * px + cos * py) * invH + 0.5;
      const alpha = maskAlpha(u, v, mask);
      if (alpha <= 0) continue;
      sampleBilinear(generated.data, size, size, u * size - 0.5, v * size - 0.5, rgb);
      const o = 3 * (y * width + x);
      for (let c = 0; c < 3; c++) {
        const src = data[o + c]!;
        data[o + c] = Math.round(src + alpha * (rgb[c]! * gain - src));
      }
      blended++;
    }
  }
  return { blended };
}
