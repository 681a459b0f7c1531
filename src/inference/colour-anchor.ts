/**
 * Anchors the colours of a network's output to its input. A GAN-trained network such as Real-ESRGAN
 * x4plus drifts on flat colour: measured 13 to 15 levels off in the middle of a flat saturated
 * 48x48 patch, more at borders. A careful tool keeps colours, so the output's low frequencies are
 * put back where the input says they are, and only those: the network's detail, sharpening and
 * denoising (all finer than a few input pixels) are left alone.
 *
 * How: the output is averaged over each input pixel's block (exact for an integer factor), the
 * difference to the input is low-passed (a Gaussian of ANCHOR_SIGMA input pixels, edges clamped)
 * and added back, bilinearly spread over the output.
 *
 * With sigma 0 every block is corrected by its own difference (each block's mean becomes its input
 * pixel) and every pixel is held near its neighbouring input pixels (anchorBlocks). That is for tiny
 * images (TINY_SIDE), where every pixel is deliberate (an icon, a 1-pixel line) and the network,
 * with no context around it, moves single columns by 50 levels and more.
 */
import type { InterleavedImage } from './edge-pad.js';

/** Input pixels; the correction only reaches detail coarser than this. */
export const ANCHOR_SIGMA = 2;
/** Images with a side shorter than this are anchored block by block (sigma 0). */
export const TINY_SIDE = 16;
/** 8-bit levels a tiny image's output pixel may stray outside its neighbouring input pixels' range. */
export const TINY_TOLERANCE = 2;

/** The anchor's sigma for an image of this size. */
export function anchorSigma(width: number, height: number): number {
  return Math.min(width, height) < TINY_SIDE ? 0 : ANCHOR_SIGMA;
}

/** Corrects `output` in place; `output` is `input` scaled by the integer `factor`; `max` is 255 or 65535. */
export function anchorColours(
  input: InterleavedImage<Uint8Array | Uint16Array>,
  output: InterleavedImage<Uint8Array | Uint16Array>,
  factor: number,
  max: number,
  sigma = ANCHOR_SIGMA,
): void {
  const { width: w, height: h } = input;
  const ow = output.width;
  if (!Number.isInteger(factor) || factor < 1 || ow !== w * factor || output.height !== h * factor) {
    throw new RangeError(
      `Expected the output to be ${w * factor}x${h * factor} (factor ${factor}) but received ${ow}x${output.height}`,
    );
  }
  if (sigma === 0) {
    anchorBlocks(input, output, factor, max);
    return;
  }
  const error = blockError(input, output, factor);
  const out = output.data;
  const smooth = blur(blur(error, w, h, sigma, true), w, h, sigma, false);
  // Bilinear, separably: each output column's two input columns and weight once, each output row's
  // blend of two input rows once, then two multiplies per value.
  const xs0 = new Int32Array(ow);
  const xs1 = new Int32Array(ow);
  const txs = new Float32Array(ow);
  for (let x = 0; x < ow; x++) {
    const fx = Math.min(w - 1, Math.max(0, (x + 0.5) / factor - 0.5));
    const x0 = Math.floor(fx);
    xs0[x] = x0 * 3;
    xs1[x] = Math.min(w - 1, x0 + 1) * 3;
    txs[x] = fx - x0;
  }
  const line = new Float32Array(w * 3);
  // 8-bit output through a clamped view: it rounds and clamps on store, as blend.ts does.
  const clamped = out instanceof Uint8Array ? new Uint8ClampedArray(out.buffer, out.byteOffset, out.length) : undefined;
  for (let y = 0; y < output.height; y++) {
    const fy = Math.min(h - 1, Math.max(0, (y + 0.5) / factor - 0.5));
    const y0 = Math.floor(fy);
    const ty = fy - y0;
    const r0 = y0 * w * 3;
    const r1 = Math.min(h - 1, y0 + 1) * w * 3;
    for (let i = 0; i < w * 3; i++) line[i] = smooth[r0 + i]! + ty * (smooth[r1 + i]! - smooth[r0 + i]!);
    if (clamped !== undefined) spreadRow8(clamped, y * ow * 3, ow, line, xs0, xs1, txs);
    else spreadRow(out, y * ow * 3, ow, line, xs0, xs1, txs, max);
  }
}

/** Adds one row of bilinear corrections into 8-bit output (the clamped view rounds and clamps). */
function spreadRow8(
  out: Uint8ClampedArray,
  start: number,
  ow: number,
  line: Float32Array,
  xs0: Int32Array,
  xs1: Int32Array,
  txs: Float32Array,
): void {
  let o = start;
  for (let x = 0; x < ow; x++, o += 3) {
    const a = xs0[x]!;
    const b = xs1[x]!;
    const tx = txs[x]!;
    out[o] = out[o]! + line[a]! + tx * (line[b]! - line[a]!);
    out[o + 1] = out[o + 1]! + line[a + 1]! + tx * (line[b + 1]! - line[a + 1]!);
    out[o + 2] = out[o + 2]! + line[a + 2]! + tx * (line[b + 2]! - line[a + 2]!);
  }
}

/** The same for 16-bit output, rounding and clamping by hand. */
function spreadRow(
  out: Uint8Array | Uint16Array,
  start: number,
  ow: number,
  line: Float32Array,
  xs0: Int32Array,
  xs1: Int32Array,
  txs: Float32Array,
  max: number,
): void {
  let o = start;
  for (let x = 0; x < ow; x++, o += 3) {
    const a = xs0[x]!;
    const b = xs1[x]!;
    const tx = txs[x]!;
    for (let k = 0; k < 3; k++) {
      const v = Math.round(out[o + k]! + line[a + k]! + tx * (line[b + k]! - line[a + k]!));
      out[o + k] = v < 0 ? 0 : v > max ? max : v;
    }
  }
}

/**
 * Sigma 0: each block moved by one shift of its own, and each pixel kept within TINY_TOLERANCE of
 * the range of the input pixels around it (the two nearest on each axis): on an image a few pixels
 * across the network has no context, and its within-block structure is mostly halo (single pixels
 * 60 to 100 levels off beside a sharp column edge). The shift is the one whose clamped pixels have
 * the input pixel's mean (found by bisection: the clamped mean grows with the shift), so a block
 * whose pixels hit a clamp (a full-strength colour beside its opposite) still averages to its input
 * pixel. A flat tiny image so comes out flat within 2 levels.
 */
function anchorBlocks(
  input: InterleavedImage<Uint8Array | Uint16Array>,
  output: InterleavedImage<Uint8Array | Uint16Array>,
  factor: number,
  max: number,
): void {
  const { width: w, height: h, data: src } = input;
  const ow = output.width;
  const out = output.data;
  const tolerance = TINY_TOLERANCE * (max / 255);
  // The input pixels on each side of an output pixel centre, per axis.
  const near = (i: number, length: number): [number, number] => {
    const f = Math.min(length - 1, Math.max(0, (i + 0.5) / factor - 0.5));
    return [Math.floor(f), Math.min(length - 1, Math.floor(f) + 1)];
  };
  const n = factor * factor;
  const at = new Int32Array(n);
  const base = new Float64Array(n);
  const lo = new Float64Array(n);
  const hi = new Float64Array(n);
  const clamped = (i: number, shift: number): number =>
    Math.min(hi[i]!, Math.max(lo[i]!, Math.round(base[i]! + shift)));
  const meanAt = (shift: number): number => {
    let sum = 0;
    for (let i = 0; i < n; i++) sum += clamped(i, shift);
    return sum / n;
  };
  for (let by = 0; by < h; by++) {
    for (let bx = 0; bx < w; bx++) {
      for (let k = 0; k < 3; k++) {
        for (let dy = 0, i = 0; dy < factor; dy++) {
          const y = by * factor + dy;
          const [y0, y1] = near(y, h);
          for (let dx = 0; dx < factor; dx++, i++) {
            const x = bx * factor + dx;
            const [x0, x1] = near(x, w);
            const a = src[(y0 * w + x0) * 3 + k]!;
            const b = src[(y0 * w + x1) * 3 + k]!;
            const c = src[(y1 * w + x0) * 3 + k]!;
            const d = src[(y1 * w + x1) * 3 + k]!;
            at[i] = (y * ow + x) * 3 + k;
            base[i] = out[at[i]!]!;
            lo[i] = Math.max(0, Math.min(a, b, c, d) - tolerance);
            hi[i] = Math.min(max, Math.max(a, b, c, d) + tolerance);
          }
        }
        const target = src[(by * w + bx) * 3 + k]!;
        let below = -max;
        let above = max;
        for (let step = 0; step < 40 && above - below > 1e-3; step++) {
          const middle = (below + above) / 2;
          if (meanAt(middle) < target) below = middle;
          else above = middle;
        }
        const shift = Math.abs(meanAt(below) - target) < Math.abs(meanAt(above) - target) ? below : above;
        for (let i = 0; i < n; i++) out[at[i]!] = clamped(i, shift);
      }
    }
  }
}

/** Input minus the mean of its block of the output, per channel, as floats. */
function blockError(
  input: InterleavedImage<Uint8Array | Uint16Array>,
  output: InterleavedImage<Uint8Array | Uint16Array>,
  factor: number,
): Float32Array {
  const { width: w, height: h } = input;
  const ow = output.width;
  const src = output.data;
  const sums = new Float64Array(w * 3);
  const error = new Float32Array(w * h * 3);
  const n = factor * factor;
  for (let y = 0; y < h; y++) {
    sums.fill(0);
    for (let dy = 0; dy < factor; dy++) {
      let o = (y * factor + dy) * ow * 3;
      for (let x = 0; x < w; x++) {
        const s = x * 3;
        for (let dx = 0; dx < factor; dx++, o += 3) {
          sums[s] = sums[s]! + src[o]!;
          sums[s + 1] = sums[s + 1]! + src[o + 1]!;
          sums[s + 2] = sums[s + 2]! + src[o + 2]!;
        }
      }
    }
    const row = y * w * 3;
    for (let i = 0; i < w * 3; i++) error[row + i] = input.data[row + i]! - sums[i]! / n;
  }
  return error;
}

/** One separable Gaussian pass, along rows (`horizontal`) or columns, edges clamped. */
function blur(src: Float32Array, w: number, h: number, sigma: number, horizontal: boolean): Float32Array {
  const radius = Math.ceil(3 * sigma);
  const kernel = Array.from({ length: 2 * radius + 1 }, (_, i) => Math.exp(-((i - radius) ** 2) / (2 * sigma * sigma)));
  const total = kernel.reduce((a, b) => a + b, 0);
  const weights = Float32Array.from(kernel, (k) => k / total);
  const out = new Float32Array(src.length);
  const length = horizontal ? w : h;
  const lines = horizontal ? h : w;
  // Distance between neighbours along the pass and between lines, in values.
  const step = horizontal ? 3 : w * 3;
  const lineStep = horizontal ? w * 3 : 3;
  for (let l = 0; l < lines; l++) {
    const base = l * lineStep;
    for (let i = 0; i < length; i++) {
      let r = 0;
      let g = 0;
      let b = 0;
      for (let t = -radius; t <= radius; t++) {
        const j = i + t;
        const s = base + (j < 0 ? 0 : j >= length ? length - 1 : j) * step;
        const k = weights[t + radius]!;
        r += k * src[s]!;
        g += k * src[s + 1]!;
        b += k * src[s + 2]!;
      }
      const d = base + i * step;
      out[d] = r;
      out[d + 1] = g;
      out[d + 2] = b;
    }
  }
  return out;
}
