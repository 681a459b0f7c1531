/**
 * Image quality metrics as super-resolution papers report them, so our figures can be set next to
 * published ones: PSNR and SSIM on the luma (Y) of BT.601 studio-range YCbCr, with a border as wide
 * as the scale factor left out (the network and bicubic both guess at the edges). Beside fidelity,
 * what users see: sharpness (gradient ratio to the reference), a lattice-blockiness index (a grid
 * drawn at the input's pixel boundaries) and frame-to-frame change (flicker, for video).
 *
 * Pure functions on float planes; no I/O.
 */

/** One channel of samples, row-major. */
export interface Plane {
  data: Float64Array;
  width: number;
  height: number;
}

/**
 * Y of ITU-R BT.601 YCbCr (studio range 16..235) from interleaved 8-bit RGB, kept as floats (no
 * rounding), the convention of MATLAB's rgb2ycbcr on doubles that SR benchmarks use.
 */
export function lumaBt601(rgb: Uint8Array, width: number, height: number, channels = 3): Plane {
  requireSize(width, height);
  if (channels < 3) throw new RangeError(`Expected at least 3 channels but received ${channels}`);
  if (rgb.length !== width * height * channels) {
    throw new RangeError(
      `Expected ${width}x${height}x${channels} = ${width * height * channels} samples but received ${rgb.length}`,
    );
  }
  const data = new Float64Array(width * height);
  for (let i = 0, j = 0; i < data.length; i += 1, j += channels) {
    data[i] = 16 + (65.481 * rgb[j]! + 128.553 * rgb[j + 1]! + 24.966 * rgb[j + 2]!) / 255;
  }
  return { data, width, height };
}

/** The plane without `border` pixels on every side. */
export function trimBorder(plane: Plane, border: number): Plane {
  if (!Number.isInteger(border) || border < 0)
    throw new RangeError(`Expected border to be a non-negative integer but received ${border}`);
  const width = plane.width - 2 * border;
  const height = plane.height - 2 * border;
  if (width < 1 || height < 1) {
    throw new RangeError(
      `Expected a ${plane.width}x${plane.height} plane to be larger than twice the border ${border}`,
    );
  }
  const data = new Float64Array(width * height);
  for (let y = 0; y < height; y += 1) {
    const from = (y + border) * plane.width + border;
    data.set(plane.data.subarray(from, from + width), y * width);
  }
  return { data, width, height };
}

/** Peak signal-to-noise ratio in dB; Infinity for identical planes. */
export function psnr(a: Plane, b: Plane, peak = 255): number {
  requireSameSize(a, b);
  let sum = 0;
  for (let i = 0; i < a.data.length; i += 1) {
    const d = a.data[i]! - b.data[i]!;
    sum += d * d;
  }
  const mse = sum / a.data.length;
  return mse === 0 ? Number.POSITIVE_INFINITY : 10 * Math.log10((peak * peak) / mse);
}

export interface SsimOptions {
  /** Gaussian window side; default 11. */
  window?: number;
  /** Gaussian standard deviation; default 1.5. */
  sigma?: number;
  k1?: number;
  k2?: number;
  /** Dynamic range of the samples; default 255. */
  range?: number;
}

/** Normalised 1-D Gaussian weights (the 2-D window is their outer product). */
export function gaussianWeights(size: number, sigma: number): Float64Array {
  if (!Number.isInteger(size) || size < 1 || size % 2 === 0)
    throw new RangeError(`Expected an odd positive window size but received ${size}`);
  const w = new Float64Array(size);
  const c = (size - 1) / 2;
  let sum = 0;
  for (let i = 0; i < size; i += 1) {
    w[i] = Math.exp(-((i - c) ** 2) / (2 * sigma * sigma));
    sum += w[i]!;
  }
  for (let i = 0; i < size; i += 1) w[i]! /= sum;
  return w;
}

/**
 * Mean structural similarity (Wang et al. 2004): Gaussian-weighted local statistics over every
 * window that lies wholly inside the image ('valid'), as the reference ssim.m computes them.
 * The window is separable, so each statistic costs 2 x window operations per pixel.
 */
export function ssim(a: Plane, b: Plane, options: SsimOptions = {}): number {
  requireSameSize(a, b);
  const size = options.window ?? 11;
  const w = gaussianWeights(size, options.sigma ?? 1.5);
  const range = options.range ?? 255;
  const c1 = ((options.k1 ?? 0.01) * range) ** 2;
  const c2 = ((options.k2 ?? 0.03) * range) ** 2;
  const { width, height } = a;
  if (width < size || height < size)
    throw new RangeError(`Expected a plane at least ${size}x${size} for SSIM but received ${width}x${height}`);

  const n = width * height;
  const aa = new Float64Array(n);
  const bb = new Float64Array(n);
  const ab = new Float64Array(n);
  for (let i = 0; i < n; i += 1) {
    const x = a.data[i]!;
    const y = b.data[i]!;
    aa[i] = x * x;
    bb[i] = y * y;
    ab[i] = x * y;
  }
  const muA = filterValid(a.data, width, height, w);
  const muB = filterValid(b.data, width, height, w);
  const eAA = filterValid(aa, width, height, w);
  const eBB = filterValid(bb, width, height, w);
  const eAB = filterValid(ab, width, height, w);

  let total = 0;
  for (let i = 0; i < muA.length; i += 1) {
    const ma = muA[i]!;
    const mb = muB[i]!;
    const va = eAA[i]! - ma * ma;
    const vb = eBB[i]! - mb * mb;
    const cov = eAB[i]! - ma * mb;
    total += ((2 * ma * mb + c1) * (2 * cov + c2)) / ((ma * ma + mb * mb + c1) * (va + vb + c2));
  }
  return total / muA.length;
}

/** Mean gradient magnitude: sqrt(dx^2 + dy^2) of forward differences, over every pixel with both. */
export function meanGradient(plane: Plane): number {
  requireSize(plane.width - 1, plane.height - 1);
  const { data, width, height } = plane;
  let sum = 0;
  for (let y = 0; y < height - 1; y += 1) {
    for (let x = 0; x < width - 1; x += 1) {
      const i = y * width + x;
      const dx = data[i + 1]! - data[i]!;
      const dy = data[i + width]! - data[i]!;
      sum += Math.sqrt(dx * dx + dy * dy);
    }
  }
  return sum / ((width - 1) * (height - 1));
}

/**
 * How sharp an upscale looks next to the real high-resolution picture: its mean gradient over the
 * reference's. Bicubic from a x4 downscale is about 0.5; 1.0 is as crisp as the original.
 */
export function sharpnessRatio(output: Plane, reference: Plane): number {
  requireSameSize(output, reference);
  return meanGradient(output) / meanGradient(reference);
}

/**
 * A lattice-blockiness index: the mean luma step across every `period`-th column and row boundary
 * (where an input pixel's block ends in a x`period` upscale: between x = k*period - 1 and k*period)
 * over the mean step across all other boundaries. 1.0 means no grid; a network that draws the
 * input's pixel lattice scores above.
 */
export function blockiness(plane: Plane, period: number): number {
  if (!Number.isInteger(period) || period < 2)
    throw new RangeError(`Expected an integer period of at least 2 but received ${period}`);
  requireSize(plane.width - period, plane.height - period);
  const { data, width, height } = plane;
  let onGrid = 0;
  let onCount = 0;
  let offGrid = 0;
  let offCount = 0;
  for (let y = 0; y < height; y += 1) {
    for (let x = 1; x < width; x += 1) {
      const step = Math.abs(data[y * width + x]! - data[y * width + x - 1]!);
      if (x % period === 0) {
        onGrid += step;
        onCount += 1;
      } else {
        offGrid += step;
        offCount += 1;
      }
    }
  }
  for (let y = 1; y < height; y += 1) {
    for (let x = 0; x < width; x += 1) {
      const step = Math.abs(data[y * width + x]! - data[(y - 1) * width + x]!);
      if (y % period === 0) {
        onGrid += step;
        onCount += 1;
      } else {
        offGrid += step;
        offCount += 1;
      }
    }
  }
  const off = offGrid / offCount;
  return off === 0 ? (onGrid === 0 ? 1 : Number.POSITIVE_INFINITY) : onGrid / onCount / off;
}

/** Mean absolute luma change between consecutive frames (same size), the raw figure of a flicker ratio. */
export function meanFrameChange(frames: readonly Plane[]): number {
  if (frames.length < 2) throw new RangeError(`Expected at least 2 frames but received ${frames.length}`);
  let sum = 0;
  for (let k = 1; k < frames.length; k += 1) {
    const a = frames[k - 1]!;
    const b = frames[k]!;
    requireSameSize(a, b);
    let s = 0;
    for (let i = 0; i < a.data.length; i += 1) s += Math.abs(b.data[i]! - a.data[i]!);
    sum += s / a.data.length;
  }
  return sum / (frames.length - 1);
}

/** Separable correlation with `w` keeping only outputs whose window lies inside the plane. */
function filterValid(src: Float64Array, width: number, height: number, w: Float64Array): Float64Array {
  const k = w.length;
  const ow = width - k + 1;
  const oh = height - k + 1;
  const rows = new Float64Array(ow * height);
  for (let y = 0; y < height; y += 1) {
    const base = y * width;
    for (let x = 0; x < ow; x += 1) {
      let s = 0;
      for (let t = 0; t < k; t += 1) s += w[t]! * src[base + x + t]!;
      rows[y * ow + x] = s;
    }
  }
  const out = new Float64Array(ow * oh);
  for (let y = 0; y < oh; y += 1) {
    for (let x = 0; x < ow; x += 1) {
      let s = 0;
      for (let t = 0; t < k; t += 1) s += w[t]! * rows[(y + t) * ow + x]!;
      out[y * ow + x] = s;
    }
  }
  return out;
}

function requireSize(width: number, height: number): void {
  if (!Number.isInteger(width) || !Number.isInteger(height) || width < 1 || height < 1) {
    throw new RangeError(`Expected positive integer dimensions but received ${width}x${height}`);
  }
}

function requireSameSize(a: Plane, b: Plane): void {
  if (a.width !== b.width || a.height !== b.height || a.data.length !== b.data.length) {
    throw new RangeError(
      `Expected planes of the same size but received ${a.width}x${a.height} and ${b.width}x${b.height}`,
    );
  }
  if (a.data.length !== a.width * a.height) {
    throw new RangeError(
      `Expected ${a.width}x${a.height} = ${a.width * a.height} samples but received ${a.data.length}`,
    );
  }
}
