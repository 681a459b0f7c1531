/**
 * vendor-lipsync-2-pro's super-resolution pass: the generated 96x96 faces are upscaled by the SR
 * engine (x4) before they are pasted, so a face larger than 96 pixels on screen gets a sharp mouth
 * instead of a bilinear blow-up of 96 pixels.
 *
 * Only the rows the mouth mask can reach are run through the network: the mask is 0 above its top
 * edge (half the crop for the default mask), so those rows are never sampled by compositing. The
 * band starts `CONTEXT_ROWS` above the mask, so that neither the network's receptive field at the
 * band's top edge nor bilinear sampling at the mask's edge reads a row that was not upscaled. The
 * rows above the band stay black in the returned image (alpha 0 there: never seen). This halves
 * the network's work for the default mask.
 *
 * A band is far smaller than a tile, so several faces go through the network together as one
 * [B, 3, rows, 96] call (each face is what the tiling engine would run as a single tile). B is
 * chosen so that a call holds as many pixels as the model's configured tile batch (tile side^2 x
 * batch): the memory per call the operator tuned for the model, and on a CPU the sweet spot
 * (measured with esrgan-slim-x4: 30 ms per face at 4 or 6 per call, 75-90 ms at 16, whose
 * feature maps no longer fit the caches).
 */
import { gatherTile, type LoadedSrModel } from '../../../../inference/index.js';
import type { GeneratedFace } from './composite.js';

/** Source rows above the mask's top edge that are upscaled too. */
export const CONTEXT_ROWS = 8;
/** Faces per network call at most. */
export const SR_MAX_BATCH = 16;

/** Faces per call holding about the pixels of the model's configured tile batch. */
export function srFacesPerCall(tiling: LoadedSrModel['tiling'], bandPixels: number): number {
  const perCall = tiling.tile * tiling.tile * (tiling.batch ?? 1);
  return Math.max(1, Math.min(SR_MAX_BATCH, Math.floor(perCall / bandPixels)));
}

/** First source row of the upscaled band for a mask whose outline starts at `maskTop` (0..1). */
export function srBandStart(size: number, maskTop: number): number {
  return Math.max(0, Math.floor(maskTop * size) - CONTEXT_ROWS);
}

/**
 * Each face (interleaved RGB, size x size) upscaled `model.scale` times on the rows from the mask's
 * top down. Every result is square, (size * scale)^2, for compositeFace.
 */
export async function superResolveMouths(
  loaded: LoadedSrModel,
  faces: readonly Uint8Array[],
  size: number,
  maskTop: number,
  signal?: AbortSignal,
): Promise<GeneratedFace[]> {
  for (const face of faces) {
    if (face.length !== size * size * 3) {
      throw new RangeError(
        `Expected each face to hold ${size * size * 3} bytes (RGB ${size}x${size}) but received ${face.length}`,
      );
    }
  }
  const { model } = loaded;
  const scale = model.scale;
  const [lo, hi] = model.range ?? [0, 255];
  const from = srBandStart(size, maskTop);
  const rows = size - from;
  const inValues = 3 * rows * size;
  const outRows = rows * scale;
  const outSize = size * scale;
  const outPlane = outRows * outSize;
  const perCall = srFacesPerCall(loaded.tiling, rows * size);
  const results: GeneratedFace[] = [];
  for (let start = 0; start < faces.length; start += perCall) {
    signal?.throwIfAborted();
    const chunk = faces.slice(start, start + perCall);
    const input = new Float32Array(chunk.length * inValues);
    chunk.forEach((face, j) =>
      gatherTile(face.subarray(from * size * 3), size, 0, 0, size, rows, input, j * inValues, (hi - lo) / 255, lo),
    );
    const output = await model.run(input, [chunk.length, 3, rows, size]);
    const [b, c, h, w] = output.dims;
    if (b !== chunk.length || c !== 3 || h !== outRows || w !== outSize) {
      throw new Error(
        `Expected the super-resolution model to return [${chunk.length}, 3, ${outRows}, ${outSize}] but received [${output.dims.join(', ')}]`,
      );
    }
    const gain = 255 / (hi - lo);
    for (let j = 0; j < chunk.length; j += 1) {
      const data = new Uint8Array(outSize * outSize * 3);
      const base = j * 3 * outPlane;
      let d = from * scale * outSize * 3;
      for (let p = 0; p < outPlane; p += 1, d += 3) {
        for (let ch = 0; ch < 3; ch += 1) {
          const v = Math.round(((output.data[base + ch * outPlane + p] as number) - lo) * gain);
          data[d + ch] = v < 0 ? 0 : v > 255 ? 255 : v;
        }
      }
      results.push({ data, size: outSize });
    }
  }
  return results;
}
