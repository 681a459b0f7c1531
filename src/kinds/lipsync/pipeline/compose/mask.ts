/**
 * The blend mask for pasting a generated face back: a rounded rectangle over the lower half of the
 * crop (Wav2Lip generates the mouth and jaw; the upper half it was given), opaque inside and fading
 * to nothing over `feather` with a smoothstep, so neither the crop's square nor the mask's own edge
 * shows as a line. Alpha is exactly 0 on and outside the rectangle's outline, which lies inside the
 * crop, so everything outside it stays the source frame's bit for bit. Pure: positions in, alpha out.
 *
 * All lengths are fractions of the crop side; (0, 0) is the crop's top-left corner, (1, 1) its
 * bottom-right, in the upright (aligned) face's orientation.
 */

export interface MouthMask {
  /** Outline of the region where alpha > 0. */
  left: number;
  right: number;
  top: number;
  bottom: number;
  /** Corner radius of the outline. */
  radius: number;
  /** Width of the fade from alpha 0 at the outline to alpha 1 inside. */
  feather: number;
}

/**
 * The generated half of a Wav2Lip-framed crop (crop.ts WAV2LIP_FRAMING; docs/lipsync.md): from its
 * top edge at 0.5, on the upper nose ~0.37 eye-to-mouth distances (d) below the eyes (at 0.365),
 * down to the chin (~0.976). The crop is cheek to cheek (~2.06 d) wide; 0.15-0.85 across keeps the
 * jaw's contour (~1.5 d wide, 0.14-0.86) to the source. The opaque core (the outline inset by the
 * feather: 0.27-0.73 across, 0.62-0.86 down) holds the mouth, whose keypoint is at (0.5, 0.729) and
 * whose corners are ~0.4 d to either side (0.3-0.7). A 12 % feather is ~12 px on a 100 px crop,
 * wide enough to hide the generated face's softer texture.
 */
export const DEFAULT_MOUTH_MASK: Readonly<MouthMask> = Object.freeze({
  left: 0.15,
  right: 0.85,
  top: 0.5,
  bottom: 0.98,
  radius: 0.2,
  feather: 0.12,
});

export function checkMask(mask: MouthMask): void {
  const { left, right, top, bottom, radius, feather } = mask;
  if (!(left >= 0 && left < right && right <= 1 && top >= 0 && top < bottom && bottom <= 1)) {
    throw new RangeError(
      `Expected the mask outline to satisfy 0 <= left < right <= 1 and 0 <= top < bottom <= 1 but received left ${left}, right ${right}, top ${top}, bottom ${bottom}`,
    );
  }
  const halfMin = Math.min(right - left, bottom - top) / 2;
  if (!(radius >= 0 && radius <= halfMin)) {
    throw new RangeError(`Expected the mask radius to be between 0 and ${halfMin} but received ${radius}`);
  }
  if (!(feather > 0 && feather <= halfMin)) {
    throw new RangeError(`Expected the mask feather to be above 0 and at most ${halfMin} but received ${feather}`);
  }
}

/** Signed distance to the rounded rectangle's outline: negative inside. */
export function maskDistance(u: number, v: number, mask: Readonly<MouthMask>): number {
  const hx = (mask.right - mask.left) / 2;
  const hy = (mask.bottom - mask.top) / 2;
  const qx = Math.abs(u - (mask.left + hx)) - hx + mask.radius;
  const qy = Math.abs(v - (mask.top + hy)) - hy + mask.radius;
  const outside = Math.sqrt(Math.max(qx, 0) ** 2 + Math.max(qy, 0) ** 2);
  return outside + Math.min(Math.max(qx, qy), 0) - mask.radius;
}

/** Alpha at crop-normalised (u, v): 0 outside the outline, 1 deeper than `feather` inside, smooth between. */
export function maskAlpha(u: number, v: number, mask: Readonly<MouthMask> = DEFAULT_MOUTH_MASK): number {
  const d = maskDistance(u, v, mask);
  if (d >= 0) return 0;
  const t = -d / mask.feather;
  if (t >= 1) return 1;
  return t * t * (3 - 2 * t);
}

/** The mask sampled at a size x size crop's pixel centres (for inspection and tests). */
export function maskImage(size: number, mask: Readonly<MouthMask> = DEFAULT_MOUTH_MASK): Float32Array {
  checkMask(mask);
  const out = new Float32Array(size * size);
  for (let v = 0; v < size; v++) {
    for (let u = 0; u < size; u++) out[v * size + u] = maskAlpha((u + 0.5) / size, (v + 0.5) / size, mask);
  }
  return out;
}
