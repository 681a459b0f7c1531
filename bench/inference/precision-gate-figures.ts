/**
 * The pure parts of the precision gate (precision-gate.ts), apart so that tests import them without
 * starting the benchmark: each input's figures of a reduced-precision variant against its float32
 * network, and the gate they add up to (a manifest's `gate`, src/inference/manifest.ts).
 *
 * What is compared, per input: the delivered 8-bit outputs (the tiling engine's, clamped and
 * rounded, before the image pipeline's colour anchoring) of the variant and of the float32 graph.
 * - PSNR: over every RGB sample, no border left out (the variant against the float32 output, not
 *   against a ground truth: both see the same picture and the float32 output is the reference);
 * - sharpness: the variant's mean luma gradient over the float32 output's (bench/metrics.ts,
 *   sharpnessRatio), pooled over the inputs;
 * - colour: mean CIEDE2000 (bench/fidelity/colour-difference.ts) of the two outputs brought back
 *   to the input's size (Lanczos-3), so that it measures colour and not the fine detail PSNR
 *   already weighs;
 * - the float32 network's own tolerance: the same figure of the float32 output brought back to the
 *   input's size against the input itself, as the fidelity benchmark measures the pipeline
 *   (bench/fidelity/fidelity-images.ts): how far the network we ship already moves colour. A
 *   variant that moves colour away from float32 by more than float32 moves it from the input is
 *   refused;
 * - seams: the variant tiled (small tiles, the manifest's overlap) against the same variant in one
 *   tile, largest difference in 8-bit levels (1/255 steps), as tiling is held to for float32;
 * - speed: the float32 run's time over the variant's on the same input, in rounds that alternate
 *   which goes first; the gate keeps the median.
 */
import { meanCiede2000 } from '../fidelity/colour-difference.js';
import { median } from '../common.js';
import { lumaBt601, meanGradient, type Plane, psnr } from '../metrics.js';
import { PRECISION_PSNR_FLOOR_DB, SEAMLESS_LEVELS, type PrecisionGate } from '../../src/inference/index.js';

/** A variant whose lowest PSNR against its float32 network is below this is not offered by default (the worker's floor). */
export const MIN_PSNR_DB = PRECISION_PSNR_FLOOR_DB;
/** Tiled and untiled output of the variant may differ by this many 8-bit levels (seamless, as float32): the worker's. */
export { SEAMLESS_LEVELS };
/** PSNR stored for identical outputs (JSON has no Infinity). */
export const PSNR_CAP_DB = 100;

/** Input side per network when --size is not given: at most a few seconds per float32 run on 2 cores. */
export function defaultCropSide(macsPerInputPixel: number): number {
  return macsPerInputPixel <= 4_000_000 ? 128 : 96;
}

/**
 * The tile of the seam check: the smallest multiple of 8 the tiling engine accepts with the
 * manifest's overlap (more than 2 * overlap + 3 * feather), which gives the most seams.
 */
export function seamTile(overlap: number, feather: number): number {
  return Math.ceil((2 * overlap + 3 * feather + 1) / 8) * 8;
}

/**
 * The crop side of a seam check that cannot run on the gate's crops (each would be one tile): two
 * tiles a side, with as much of the picture beyond each tile's context as two tiles allow.
 */
export function seamCropSide(tile: number, overlap: number, feather: number): number {
  return Math.max(tile + 8, Math.floor((2 * tile - 2 * overlap - feather) / 8) * 8);
}

/** Every RGB sample of an interleaved 8-bit picture as one plane (PSNR over all of them). */
export function samplesPlane(rgb: Uint8Array, width: number, height: number): Plane {
  if (rgb.length !== width * height * 3)
    throw new RangeError(`Expected ${width}x${height}x3 = ${width * height * 3} samples but received ${rgb.length}`);
  return { data: Float64Array.from(rgb), width: width * 3, height };
}

/** PSNR (dB) over every RGB sample of two 8-bit pictures; Infinity when identical. */
export function psnrRgb(a: Uint8Array, b: Uint8Array, width: number, height: number): number {
  return psnr(samplesPlane(a, width, height), samplesPlane(b, width, height));
}

/** Mean luma gradient of an 8-bit RGB picture (bench/metrics.ts), the measure of sharpness. */
export function lumaGradient(rgb: Uint8Array, width: number, height: number): number {
  return meanGradient(lumaBt601(rgb, width, height));
}

/** Mean CIEDE2000 of two 8-bit sRGB pictures of the same size. */
export function meanDeltaE(a: Uint8Array, b: Uint8Array): number {
  return meanCiede2000(a, b, { channels: 3, space: 'srgb', maxValue: 255 });
}

/** Largest difference of two 8-bit pictures, in levels (1/255 steps). */
export function maxLevelDifference(a: Uint8Array, b: Uint8Array): number {
  if (a.length !== b.length)
    throw new RangeError(`Expected pictures of the same length but received ${a.length} and ${b.length}`);
  let max = 0;
  for (let i = 0; i < a.length; i += 1) max = Math.max(max, Math.abs(a[i]! - b[i]!));
  return max;
}

/** One input's figures of a variant against its float32 network. */
export interface InputFigures {
  /** `photo:astronaut 128x128`, `frame:Megamind@5s 128x128`. */
  label: string;
  psnrDb: number;
  /** Mean luma gradient of the variant's output and of the float32 output (their ratio: sharpness). */
  gradient: number;
  float32Gradient: number;
  /** Variant against float32, both at the input's size. */
  deltaE: number;
  /** Variant against float32 at the output's size (for the record: includes fine detail). */
  deltaEFullSize: number;
  /** Float32 output at the input's size against the input. */
  toleranceDeltaE: number;
  /** Float32 time over the variant's, one per round. */
  speedRatios: number[];
}

/** What the gate is decided on; the stored (rounded) figures decide, so a manifest reads consistently. */
export function gatePasses(
  figures: Pick<PrecisionGate, 'psnrMinDb' | 'colourDeltaE' | 'colourToleranceDeltaE' | 'tiledMaxDiff'>,
): boolean {
  return (
    figures.psnrMinDb >= MIN_PSNR_DB &&
    figures.colourDeltaE <= figures.colourToleranceDeltaE &&
    figures.tiledMaxDiff <= SEAMLESS_LEVELS
  );
}

const round = (value: number, digits: number): number => Number(value.toFixed(digits));

/**
 * The gate of a variant from its inputs' figures and the seam check's largest differences: the
 * lowest and mean PSNR (capped at PSNR_CAP_DB), the pooled sharpness, the mean colour figures, the largest seam
 * difference, the median speed ratio over every round of every input.
 */
export function summariseGate(
  inputs: readonly InputFigures[],
  seamDiffs: readonly number[],
  measured: string,
): PrecisionGate {
  if (inputs.length === 0) throw new RangeError('Expected at least one input measured');
  if (seamDiffs.length === 0) throw new RangeError('Expected at least one seam check');
  const sum = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0);
  const mean = (xs: readonly number[]): number => sum(xs) / xs.length;
  const psnrs = inputs.map((i) => Math.min(PSNR_CAP_DB, i.psnrDb));
  const ratios = inputs.flatMap((i) => i.speedRatios);
  if (ratios.length === 0) throw new RangeError('Expected at least one timed round');
  const figures = {
    psnrMinDb: round(Math.min(...psnrs), 2),
    psnrMeanDb: round(mean(psnrs), 2),
    // Pooled over the inputs: a flat crop's own ratio (a dark video frame) is noise, not sharpness.
    sharpnessRatio: round(sum(inputs.map((i) => i.gradient)) / sum(inputs.map((i) => i.float32Gradient)), 3),
    colourDeltaE: round(mean(inputs.map((i) => i.deltaE)), 3),
    colourToleranceDeltaE: round(mean(inputs.map((i) => i.toleranceDeltaE)), 3),
    tiledMaxDiff: Math.max(...seamDiffs),
    speedVsFloat32: round(median(ratios), 2),
  };
  return { ...figures, passes: gatePasses(figures), inputs: inputs.map((i) => i.label), measured };
}
