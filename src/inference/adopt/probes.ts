/**
 * What only running a network tells: its scale and input range, how far an output pixel's inputs
 * reach (the overlap that makes tiles exact), the memory one tile pixel takes (the tile budget's
 * divisor), and whether tiled and untiled runs agree. Every probe runs real photo pixels through
 * ONNX Runtime on the CPU; the sizes are small so that a probe takes seconds on two cores.
 */
import sharp from 'sharp';
import type { TensorOutput, TensorRunner } from '../session.js';
import { srModel, upscaleRgb, type RgbImage } from '../tiling.js';
import { AdoptError } from './graph-facts.js';

export type Range = readonly [number, number];

/** The ranges networks are trained on: [0, 1] (most PyTorch exports), [0, 255], [-1, 1]. */
export const CANDIDATE_RANGES: readonly Range[] = [
  [0, 1],
  [0, 255],
  [-1, 1],
];

/**
 * A run's output below this PSNR against bicubic (dB) is no upscale of its input at any range; nor is
 * one that beats a flat image of the crop's mean colour by less than NULL_MARGIN_DB.
 */
const MIN_PSNR_DB = 20;
const NULL_MARGIN_DB = 6;

/** Planar float32 of 8-bit RGB mapped to `range`. */
export function toPlanar(image: RgbImage, range: Range): Float32Array {
  const plane = image.width * image.height;
  const out = new Float32Array(3 * plane);
  const k = (range[1] - range[0]) / 255;
  for (let i = 0; i < plane; i += 1)
    for (let c = 0; c < 3; c += 1) out[c * plane + i] = range[0] + image.data[i * 3 + c]! * k;
  return out;
}

/** Output values mapped back to 8-bit units (unclamped, unrounded). */
function toEightBit(values: Float32Array, range: Range): Float32Array {
  const k = 255 / (range[1] - range[0]);
  return values.map((v) => (v - range[0]) * k);
}

/** A crop of a photo as 8-bit RGB. */
export async function photoCrop(file: string, width: number, height: number, left = 0, top = 0): Promise<RgbImage> {
  const { data, info } = await sharp(file)
    .removeAlpha()
    .extract({ left, top, width, height })
    .raw()
    .toBuffer({ resolveWithObject: true });
  return {
    data: new Uint8Array(data.buffer, data.byteOffset, data.byteLength),
    width: info.width,
    height: info.height,
    channels: 3,
  };
}

async function runImage(runner: TensorRunner, image: RgbImage, range: Range): Promise<TensorOutput> {
  try {
    return await runner.run(toPlanar(image, range), [1, 3, image.height, image.width]);
  } catch (cause) {
    const first = (cause instanceof Error ? cause.message : String(cause)).split('\n')[0];
    throw new AdoptError(`ONNX Runtime cannot run it on a ${image.width}x${image.height} RGB image: ${first}`, {
      cause,
    });
  }
}

export interface ScaleProbe {
  scale: number;
  range: Range;
  /** PSNR (dB) of the output against a bicubic upscale of the input, per candidate range. */
  psnrByRange: Array<{ range: Range; psnr: number }>;
  inputSize: string;
  outputSize: string;
}

function psnr(a: Float32Array, b: Uint8Array): number {
  let sum = 0;
  for (let i = 0; i < a.length; i += 1) {
    const d = Math.min(255, Math.max(0, a[i]!)) - b[i]!;
    sum += d * d;
  }
  const mse = sum / a.length;
  return mse === 0 ? 99 : 10 * Math.log10((255 * 255) / mse);
}

/**
 * The scale from one run on a non-square crop (both axes must grow by the same integer of at least
 * 2), and the input range: the candidate whose output looks most like the input upscaled (PSNR
 * against bicubic), unless `given`. A network whose output resembles its input at no range is refused.
 */
export async function probeScaleAndRange(runner: TensorRunner, photo: RgbImage, given?: Range): Promise<ScaleProbe> {
  const first = await runImage(runner, photo, given ?? CANDIDATE_RANGES[0]!);
  const [n, c, h, w] = first.dims;
  const inputSize = `${photo.width}x${photo.height}`;
  const outputSize = first.dims.join('x');
  if (first.dims.length !== 4 || n !== 1 || c !== 3 || h === undefined || w === undefined) {
    throw new AdoptError(
      `not a super-resolution network: a 1x3x${photo.height}x${photo.width} input gives an output of shape ${outputSize}, where 1x3xHxW is expected`,
    );
  }
  const scale = h / photo.height;
  if (!Number.isInteger(scale) || scale < 2 || w / photo.width !== scale) {
    throw new AdoptError(
      `not a super-resolution network: a ${inputSize} input gives ${w}x${h}, which is no integer scale of at least 2 on both axes`,
    );
  }
  const bicubic = await sharp(photo.data, { raw: { width: photo.width, height: photo.height, channels: 3 } })
    .resize(photo.width * scale, photo.height * scale, { kernel: 'cubic', fit: 'fill' })
    .raw()
    .toBuffer();
  const planarBicubic = toPlanar(
    { data: new Uint8Array(bicubic), width: photo.width * scale, height: photo.height * scale, channels: 3 },
    [0, 255],
  );
  const reference = Uint8Array.from(planarBicubic);
  const psnrByRange: ScaleProbe['psnrByRange'] = [];
  for (const range of given === undefined ? CANDIDATE_RANGES : [given]) {
    const out = range === (given ?? CANDIDATE_RANGES[0]) ? first : await runImage(runner, photo, range);
    psnrByRange.push({ range, psnr: psnr(toEightBit(out.data, range), reference) });
  }
  const best = psnrByRange.reduce((a, b) => (b.psnr > a.psnr ? b : a));
  const flat = psnr(
    new Float32Array(reference.length).fill(reference.reduce((sum, v) => sum + v, 0) / reference.length),
    reference,
  );
  const needed = Math.max(MIN_PSNR_DB, flat + NULL_MARGIN_DB);
  if (best.psnr < needed) {
    const tried = psnrByRange.map((p) => `[${p.range.join(', ')}] ${p.psnr.toFixed(1)} dB`).join(', ');
    throw new AdoptError(
      `not a super-resolution network: its x${scale} output does not resemble its input upscaled at any input range (PSNR against bicubic: ${tried}; at least ${needed.toFixed(1)} dB expected, a flat image scores ${flat.toFixed(1)})`,
    );
  }
  return { scale, range: best.range, psnrByRange, inputSize, outputSize: `${w}x${h}` };
}

/** Sides of the crops the reach is measured on, smallest first: the reach must stay inside the crop. */
const REACH_SIDES = [65, 129, 257];
/** An output change smaller than this (8-bit units) cannot move a rounded 8-bit pixel in practice. */
const REACH_THRESHOLD = 1e-3;

/**
 * How far, in input pixels, a change of one input pixel moves the output: the overlap at which
 * tiles give the untiled result. Measured by changing the centre pixel of a photo crop and finding
 * the farthest output pixel that moved; a crop whose border the change reaches is doubled.
 */
export async function measureReach(
  runner: TensorRunner,
  photoFile: string,
  scale: number,
  range: Range,
): Promise<number> {
  for (const side of REACH_SIDES) {
    const base = await photoCrop(photoFile, side, side, 40, 40);
    const changed: RgbImage = { ...base, data: Uint8Array.from(base.data) };
    const centre = (side - 1) / 2;
    for (let c = 0; c < 3; c += 1)
      changed.data[(centre * side + centre) * 3 + c] = 255 - base.data[(centre * side + centre) * 3 + c]!;
    const a = toEightBit((await runImage(runner, base, range)).data, range);
    const b = toEightBit((await runImage(runner, changed, range)).data, range);
    const outSide = side * scale;
    const plane = outSide * outSide;
    let reach = 0;
    for (let i = 0; i < plane; i += 1) {
      if (
        Math.abs(a[i]! - b[i]!) <= REACH_THRESHOLD &&
        Math.abs(a[plane + i]! - b[plane + i]!) <= REACH_THRESHOLD &&
        Math.abs(a[2 * plane + i]! - b[2 * plane + i]!) <= REACH_THRESHOLD
      )
        continue;
      // Distance from the changed pixel's footprint, in input pixels.
      const y = Math.floor(Math.floor(i / outSide) / scale);
      const x = Math.floor((i % outSide) / scale);
      reach = Math.max(reach, Math.abs(y - centre), Math.abs(x - centre));
    }
    if (reach < centre) return reach;
  }
  const widest = REACH_SIDES.at(-1)!;
  throw new AdoptError(
    `its output depends on the whole image: a change of one pixel moves output pixels more than ${(widest - 1) / 2} input pixels away, so tiles cannot give the untiled result`,
  );
}

/**
 * Peak memory one call takes per tile input pixel (manifest tile.bytesPerPixel): the growth of this
 * process's peak resident set from a warm 16-pixel call to calls of two sides, the slope between
 * them (what does not grow with the tile left out). Run it before any larger call raises the peak.
 */
export async function measureBytesPerPixel(
  runner: TensorRunner,
  photo: (side: number) => Promise<RgbImage>,
  range: Range,
  sides: readonly [number, number] = [96, 192],
): Promise<number> {
  await runImage(runner, await photo(16), range);
  const peaks: number[] = [];
  for (const side of sides) {
    await runImage(runner, await photo(side), range);
    peaks.push(process.resourceUsage().maxRSS * 1024);
  }
  const [small, large] = sides;
  const slope = (peaks[1]! - peaks[0]!) / (large * large - small * small);
  // A slope of 0 means the allocator reused the smaller call's memory: the larger call's own growth is the figure.
  return Math.max(1, Math.round(slope > 0 ? slope : peaks[1]! / (large * large)));
}

export interface TilingAgreement {
  tile: number;
  overlap: number;
  width: number;
  height: number;
  tiles: number;
  /** Largest 8-bit difference between the tiled and the untiled output. */
  maxDiff: number;
}

/** Tiles that must agree with one untiled call: a crop two small tiles wide and high, with the manifest's overlap. */
export async function checkTiledAgreement(
  runner: TensorRunner,
  photoFile: string,
  scale: number,
  range: Range,
  overlap: number,
): Promise<TilingAgreement> {
  const tile = Math.ceil((2 * overlap + 24) / 8) * 8;
  const side = 2 * tile - 2 * overlap;
  const image = await photoCrop(photoFile, side, side, 100, 60);
  const model = srModel(runner, scale, range);
  const untiled = await upscaleRgb(model, image, { tile: side, overlap: 0 });
  const tiled = await upscaleRgb(model, image, { tile, overlap, fitTile: false });
  let maxDiff = 0;
  for (let i = 0; i < tiled.data.length; i += 1)
    maxDiff = Math.max(maxDiff, Math.abs(tiled.data[i]! - untiled.data[i]!));
  return { tile, overlap, width: side, height: side, tiles: tiled.tiles, maxDiff };
}
