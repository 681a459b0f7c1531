/**
 * The colour stored under fully transparent pixels is arbitrary (encoders and editors store black,
 * white, or anything), yet the network and the resize blend it into the visible edge: a red disc
 * with black under its transparency came back with a dark rim, red falling from 255 to about 68
 * where the resized alpha is half (issue 40). So before the network, colour is filled outward from
 * the visible pixels into the fully transparent ones, as texture tools do (pure):
 *
 * - DILATE_RINGS rings first, each pixel the alpha-weighted mean of its visible (or already filled)
 *   8-neighbours: the pixels the edge's resampling reaches get the edge's own colour;
 * - then a push-pull pyramid (a 2x2 alpha-weighted mean per level up, a bilinear pull down) for
 *   the rest, so a large transparent area gets a smooth, cheap fill from its nearest colours.
 *
 * Pixels with any alpha keep their colour exactly; an image without a fully transparent pixel (or
 * without a visible one) is returned as it came, the same object, so opaque images are untouched.
 */
import type { InterleavedImage } from '../../../inference/index.js';

/** Rings of exact neighbour colour around the visible pixels before the pyramid takes over. */
export const DILATE_RINGS = 3;

type Samples = Uint8Array | Uint16Array;

/** `colour` with every pixel whose `alpha` is 0 filled from the visible ones; `max` is 255 or 65535. */
export function fillTransparent<T extends Samples>(
  colour: InterleavedImage<T>,
  alpha: Samples,
  max: number,
): InterleavedImage<T> {
  const { width: w, height: h } = colour;
  const n = w * h;
  if (alpha.length !== n)
    throw new RangeError(`Expected ${n} alpha values for a ${w}x${h} image but received ${alpha.length}`);
  let transparent = 0;
  for (let i = 0; i < n; i++) if (alpha[i] === 0) transparent++;
  if (transparent === 0 || transparent === n) return colour;

  // Weights (alpha as a fraction) and colours as floats; a weight of 0 marks a pixel still to fill.
  const weight = new Float32Array(n);
  const rgb = new Float32Array(n * 3);
  for (let i = 0; i < n; i++) {
    weight[i] = alpha[i]! / max;
    rgb[i * 3] = colour.data[i * 3]!;
    rgb[i * 3 + 1] = colour.data[i * 3 + 1]!;
    rgb[i * 3 + 2] = colour.data[i * 3 + 2]!;
  }
  const left = dilate(rgb, weight, w, h, DILATE_RINGS);
  if (left > 0) pushPull(rgb, weight, w, h);

  const data = colour.data.slice() as T;
  for (let i = 0; i < n; i++) {
    if (alpha[i] !== 0) continue;
    for (let k = 0; k < 3; k++) data[i * 3 + k] = Math.min(max, Math.max(0, Math.round(rgb[i * 3 + k]!)));
  }
  return { ...colour, data };
}

/**
 * `rings` rings of alpha-weighted 8-neighbour means around the known pixels (weight > 0), in
 * place; a filled pixel counts with weight 1 for the next ring. Returns how many pixels are left.
 */
function dilate(rgb: Float32Array, weight: Float32Array, w: number, h: number, rings: number): number {
  let frontier: number[] = [];
  let left = 0;
  for (let i = 0; i < w * h; i++) {
    if (weight[i] !== 0) continue;
    left++;
    if (hasKnownNeighbour(weight, w, h, i)) frontier.push(i);
  }
  const queued = new Uint8Array(w * h);
  for (let ring = 0; ring < rings && frontier.length > 0; ring++) {
    // Means first, weights after: a ring reads only the pixels known before it.
    const means = new Float32Array(frontier.length * 3);
    frontier.forEach((i, f) => {
      const x = i % w;
      const y = (i - x) / w;
      let sum = 0;
      let r = 0;
      let g = 0;
      let b = 0;
      for (let dy = -1; dy <= 1; dy++) {
        const ny = y + dy;
        if (ny < 0 || ny >= h) continue;
        for (let dx = -1; dx <= 1; dx++) {
          const nx = x + dx;
          if (nx < 0 || nx >= w) continue;
          const j = ny * w + nx;
          const k = weight[j]!;
          sum += k;
          r += k * rgb[j * 3]!;
          g += k * rgb[j * 3 + 1]!;
          b += k * rgb[j * 3 + 2]!;
        }
      }
      means[f * 3] = r / sum;
      means[f * 3 + 1] = g / sum;
      means[f * 3 + 2] = b / sum;
    });
    const next: number[] = [];
    frontier.forEach((i, f) => {
      rgb.set(means.subarray(f * 3, f * 3 + 3), i * 3);
      weight[i] = 1;
      left--;
    });
    for (const i of frontier) {
      const x = i % w;
      const y = (i - x) / w;
      for (let dy = -1; dy <= 1; dy++) {
        for (let dx = -1; dx <= 1; dx++) {
          const nx = x + dx;
          const ny = y + dy;
          if (nx < 0 || nx >= w || ny < 0 || ny >= h) continue;
          const j = ny * w + nx;
          if (weight[j] === 0 && queued[j] === 0) {
            queued[j] = 1;
            next.push(j);
          }
        }
      }
    }
    frontier = next;
  }
  return left;
}

function hasKnownNeighbour(weight: Float32Array, w: number, h: number, i: number): boolean {
  const x = i % w;
  const y = (i - x) / w;
  for (let dy = -1; dy <= 1; dy++) {
    const ny = y + dy;
    if (ny < 0 || ny >= h) continue;
    for (let dx = -1; dx <= 1; dx++) {
      const nx = x + dx;
      if (nx >= 0 && nx < w && weight[ny * w + nx]! > 0) return true;
    }
  }
  return false;
}

interface Level {
  w: number;
  h: number;
  rgb: Float32Array;
  weight: Float32Array;
}

/**
 * Push: each level's pixel is the weighted mean of its (up to) 2x2 children, its weight their sum
 * capped at 1, up to a level with every pixel known. Pull: from the top down, each pixel becomes
 * weight x its own colour + (1 - weight) x the level above read bilinearly. Level 0 is `rgb` itself.
 */
function pushPull(rgb: Float32Array, weight: Float32Array, w: number, h: number): void {
  const levels: Level[] = [{ w, h, rgb, weight }];
  for (let top = levels[0]!; !allKnown(top.weight) && (top.w > 1 || top.h > 1); top = levels[levels.length - 1]!) {
    levels.push(push(top));
  }
  for (let l = levels.length - 2; l >= 0; l--) pull(levels[l]!, levels[l + 1]!);
}

function allKnown(weight: Float32Array): boolean {
  for (const k of weight) if (k === 0) return false;
  return true;
}

function push(fine: Level): Level {
  const w = Math.ceil(fine.w / 2);
  const h = Math.ceil(fine.h / 2);
  const rgb = new Float32Array(w * h * 3);
  const weight = new Float32Array(w * h);
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      let sum = 0;
      let r = 0;
      let g = 0;
      let b = 0;
      for (let fy = 2 * y; fy < Math.min(fine.h, 2 * y + 2); fy++) {
        for (let fx = 2 * x; fx < Math.min(fine.w, 2 * x + 2); fx++) {
          const j = fy * fine.w + fx;
          const k = fine.weight[j]!;
          sum += k;
          r += k * fine.rgb[j * 3]!;
          g += k * fine.rgb[j * 3 + 1]!;
          b += k * fine.rgb[j * 3 + 2]!;
        }
      }
      const i = y * w + x;
      if (sum > 0) {
        rgb[i * 3] = r / sum;
        rgb[i * 3 + 1] = g / sum;
        rgb[i * 3 + 2] = b / sum;
      }
      weight[i] = Math.min(1, sum);
    }
  }
  return { w, h, rgb, weight };
}

/** `fine` completed from `coarse` (already complete) in place; its weights become 1. */
function pull(fine: Level, coarse: Level): void {
  for (let y = 0; y < fine.h; y++) {
    const cy = Math.min(coarse.h - 1, Math.max(0, (y + 0.5) / 2 - 0.5));
    const y0 = Math.floor(cy);
    const y1 = Math.min(coarse.h - 1, y0 + 1);
    const ty = cy - y0;
    for (let x = 0; x < fine.w; x++) {
      const i = y * fine.w + x;
      const k = fine.weight[i]!;
      if (k >= 1) continue;
      const cx = Math.min(coarse.w - 1, Math.max(0, (x + 0.5) / 2 - 0.5));
      const x0 = Math.floor(cx);
      const x1 = Math.min(coarse.w - 1, x0 + 1);
      const tx = cx - x0;
      for (let c = 0; c < 3; c++) {
        const at = (xx: number, yy: number): number => coarse.rgb[(yy * coarse.w + xx) * 3 + c]!;
        const top = at(x0, y0) + tx * (at(x1, y0) - at(x0, y0));
        const bottom = at(x0, y1) + tx * (at(x1, y1) - at(x0, y1));
        const up = top + ty * (bottom - top);
        fine.rgb[i * 3 + c] = k * fine.rgb[i * 3 + c]! + (1 - k) * up;
      }
      fine.weight[i] = 1;
    }
  }
}
