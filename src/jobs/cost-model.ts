/**
 * What a job will cost to process, decided at quote time from what the probe already knows: frames,
 * pixels in and out per frame, the network's multiply-adds per input pixel (its manifest), the
 * encoder's output (a kind with figures of its own adds them in its room, src/jobs/kinds/). Pure: numbers in,
 * an estimate out, so the quote, the worker's re-check and the tests agree.
 *
 * Time = setup + network + codecs, where
 * - network = tiled input pixels x MACs per pixel / achieved MAC/s, plus a cost per tiled output
 *   pixel (converting and blending tiles, which the MAC count does not see);
 * - codecs = decoded megapixels x decode s/MP + encoded megapixels x encode s/MP;
 * and network and codecs add up on a CPU class (they share the cores) but overlap on a GPU class
 * (the slower of the two decides). Figures per class: hardware-classes.ts.
 */
import { planTiles } from '../inference/tile-plan.js';
import type { HardwareProfile } from './hardware-classes.js';
import type { UpscaleFactor } from './types.js';

/** What the cost model needs of a super-resolution network (from its manifest). */
export interface SrNetworkCost {
  name: string;
  /** Output edge over input edge (2 or 4). */
  scale: number;
  macsPerInputPixel: number;
  tile: number;
  overlap: number;
}

export interface CostEstimate {
  /** Frames the job processes (1 for an image). */
  frames: number;
  inputPixelsPerFrame: number;
  outputPixelsPerFrame: number;
  /** Network multiply-adds for the whole job (0 where no SR network runs). */
  networkMacs: number;
  /** Estimated processing seconds on the profile's hardware class, rounded up to 0.1 s. */
  seconds: number;
  /** The parts, unrounded, for logs and the calibration benchmark. */
  parts: { setup: number; network: number; decode: number; encode: number; other: number };
}

export const MEGA = 1e6;

/**
 * Per tiled output pixel, seconds on one core: float conversion, tile blending and copying around
 * the network (measured with the MAC rate, see docs/benchmarks.md "Cost model calibration").
 */
export const TILE_OUTPUT_CORE_SECONDS_PER_PIXEL = 0.02e-6;

/** Input pixels the network really runs for one frame: every tile in full, overlaps included. */
export function tiledInputPixels(
  width: number,
  height: number,
  network: Pick<SrNetworkCost, 'tile' | 'overlap'>,
): number {
  // The tiling engine's default feather (tiling.ts defaultFeather); tile-plan.ts has no imports, tiling.ts does.
  const plan = planTiles({
    width,
    height,
    tile: network.tile,
    overlap: network.overlap,
    feather: Math.min(network.overlap, 4),
  });
  return plan.count * plan.tileWidth * plan.tileHeight;
}

function networkSeconds(
  width: number,
  height: number,
  network: SrNetworkCost,
  hw: HardwareProfile,
): { seconds: number; macs: number } {
  const tiled = tiledInputPixels(width, height, network);
  const macs = tiled * network.macsPerInputPixel;
  const tileOutput = tiled * network.scale * network.scale;
  const perPixel = hw.overlapsCodecs ? 0 : (TILE_OUTPUT_CORE_SECONDS_PER_PIXEL / hw.cores) * tileOutput;
  return { seconds: macs / hw.networkMacsPerSecond + perPixel, macs };
}

export function total(hw: HardwareProfile, network: number, codecs: number): number {
  return hw.setupSeconds + (hw.overlapsCodecs ? Math.max(network, codecs) : network + codecs);
}

export function roundUpTenth(seconds: number): number {
  return Math.ceil(seconds * 10 - 1e-9) / 10;
}

export interface ImageCostRequest {
  width: number;
  height: number;
  factor: UpscaleFactor;
}

export function estimateImageUpscale(req: ImageCostRequest, network: SrNetworkCost, hw: HardwareProfile): CostEstimate {
  const f = Number(req.factor);
  const inputPixels = req.width * req.height;
  const outputPixels = inputPixels * f * f;
  const net = networkSeconds(req.width, req.height, network, hw);
  const codec = ((inputPixels + outputPixels) / MEGA) * hw.imageCodecSecondsPerMegapixel;
  const seconds = total(hw, net.seconds, codec);
  return {
    frames: 1,
    inputPixelsPerFrame: inputPixels,
    outputPixelsPerFrame: outputPixels,
    networkMacs: net.macs,
    seconds: roundUpTenth(seconds),
    parts: { setup: hw.setupSeconds, network: net.seconds, decode: 0, encode: 0, other: codec },
  };
}

export interface VideoCostRequest {
  /** Displayed (decoded) size. */
  width: number;
  height: number;
  frames: number;
  factor: UpscaleFactor;
}

/** Frames a video of `seconds` at `fps` has: what the decoder delivers at a constant rate. */
export function frameCount(seconds: number, fps: { num: number; den: number }): number {
  return Math.max(1, Math.round((seconds * fps.num) / fps.den));
}

export function estimateVideoUpscale(req: VideoCostRequest, network: SrNetworkCost, hw: HardwareProfile): CostEstimate {
  const f = Number(req.factor);
  const inputPixels = req.width * req.height;
  // The encoder's frames: the target rounded up to even sides (4:2:0), as video-geometry.ts does.
  const outW = req.width * f + ((req.width * f) % 2);
  const outH = req.height * f + ((req.height * f) % 2);
  const outputPixels = outW * outH;
  const perFrame = networkSeconds(req.width, req.height, network, hw);
  const net = perFrame.seconds * req.frames;
  const decode = ((inputPixels * req.frames) / MEGA) * hw.decodeSecondsPerMegapixel;
  const encode = ((outputPixels * req.frames) / MEGA) * hw.encodeSecondsPerMegapixel;
  return {
    frames: req.frames,
    inputPixelsPerFrame: inputPixels,
    outputPixelsPerFrame: outputPixels,
    networkMacs: perFrame.macs * req.frames,
    seconds: roundUpTenth(total(hw, net, decode + encode)),
    parts: { setup: hw.setupSeconds, network: net, decode, encode, other: 0 },
  };
}
