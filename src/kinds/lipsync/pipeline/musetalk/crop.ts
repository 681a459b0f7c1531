/**
 * MuseTalk 1.5's network input for a face: the face box cut out of the frame and resized to
 * 256 x 256 with OpenCV's Lanczos-4 (scripts/inference.py: cv2.resize(..., INTER_LANCZOS4)), then
 * the VAE's two images (musetalk/models/vae.py get_latents_for_unet): the crop with its lower half
 * blacked out, and the whole crop, both as RGB in [-1, 1]. And back: the VAE decoder's [-1, 1]
 * output to 8-bit RGB as vae.decode_latents rounds it. Pure.
 */
import { checkFrame, sampleMax } from '../compose/crop.js';
import type { DeepRgbFrame } from '../types.js';
import type { PixelBox } from './face-geometry.js';

export const MUSETALK_FACE_SIZE = 256;

/**
 * OpenCV's interpolateLanczos4 weights for a fractional offset: 8 taps at -3 .. +4 around the
 * sample's floor, sinc(d) sinc(d / 4), normalised to sum 1.
 */
export function lanczos4Weights(frac: number, out = new Float64Array(8)): Float64Array {
  if (frac < 1.1920929e-7) {
    out.fill(0);
    out[3] = 1;
    return out;
  }
  let sum = 0;
  for (let i = 0; i < 8; i++) {
    const d = frac + 3 - i;
    const w = (4 * Math.sin(Math.PI * d) * Math.sin((Math.PI * d) / 4)) / (Math.PI * Math.PI * d * d);
    out[i] = w;
    sum += w;
  }
  for (let i = 0; i < 8; i++) out[i]! /= sum;
  return out;
}

/** Source taps and weights of each destination index along one axis (OpenCV's resize mapping, edge replicated). */
function axisTaps(src: number, dst: number): { index: Int32Array; weight: Float64Array } {
  const scale = src / dst;
  const index = new Int32Array(dst * 8);
  const weight = new Float64Array(dst * 8);
  const w = new Float64Array(8);
  for (let d = 0; d < dst; d++) {
    const f = (d + 0.5) * scale - 0.5;
    const s = Math.floor(f);
    lanczos4Weights(f - s, w);
    for (let i = 0; i < 8; i++) {
      index[d * 8 + i] = Math.min(src - 1, Math.max(0, s - 3 + i));
      weight[d * 8 + i] = w[i]!;
    }
  }
  return { index, weight };
}

/**
 * frame[y1:y2, x1:x2] resized to size x size with Lanczos-4, 8-bit interleaved RGB (a 16-bit frame
 * gives its 8-bit crop). The box must lie inside the frame (face-geometry.ts clips it).
 */
export function cropMuseTalkFace(
  frame: DeepRgbFrame,
  box: PixelBox,
  size = MUSETALK_FACE_SIZE,
  out?: Uint8Array,
): Uint8Array {
  checkFrame(frame);
  const { x1, y1, x2, y2 } = box;
  if (!(
    Number.isInteger(x1) &&
    Number.isInteger(y1) &&
    x1 >= 0 &&
    y1 >= 0 &&
    x2 > x1 &&
    y2 > y1 &&
    x2 <= frame.width &&
    y2 <= frame.height
  )) {
    throw new RangeError(
      `Expected a face box inside the ${frame.width}x${frame.height} frame but received ${x1},${y1} - ${x2},${y2}`,
    );
  }
  const target = out ?? new Uint8Array(size * size * 3);
  if (target.length !== size * size * 3)
    throw new RangeError(`Expected the output to hold ${size * size * 3} bytes but received ${target.length}`);
  const w = x2 - x1;
  const h = y2 - y1;
  const toByte = 255 / sampleMax(frame.data);
  const across = axisTaps(w, size);
  const down = axisTaps(h, size);
  // Horizontal pass over the rows of the box, then vertical, as OpenCV's separable resize.
  const rows = new Float64Array(h * size * 3);
  for (let y = 0; y < h; y++) {
    const row = (y1 + y) * frame.width;
    for (let u = 0; u < size; u++) {
      let r = 0;
      let g = 0;
      let b = 0;
      for (let i = 0; i < 8; i++) {
        const o = 3 * (row + x1 + across.index[u * 8 + i]!);
        const k = across.weight[u * 8 + i]!;
        r += k * frame.data[o]!;
        g += k * frame.data[o + 1]!;
        b += k * frame.data[o + 2]!;
      }
      const o = 3 * (y * size + u);
      rows[o] = r;
      rows[o + 1] = g;
      rows[o + 2] = b;
    }
  }
  for (let v = 0; v < size; v++) {
    for (let u = 0; u < size; u++) {
      for (let c = 0; c < 3; c++) {
        let sum = 0;
        for (let i = 0; i < 8; i++) sum += down.weight[v * 8 + i]! * rows[3 * (down.index[v * 8 + i]! * size + u) + c]!;
        const value = Math.round(sum * toByte);
        target[3 * (v * size + u) + c] = value < 0 ? 0 : value > 255 ? 255 : value;
      }
    }
  }
  return target;
}

/**
 * One 256 x 256 RGB crop as the VAE encoder's [3, size, size] input in [-1, 1], written at `offset`
 * of `out`: with `maskLowerHalf`, rows from size / 2 down are -1 (the reference multiplies the
 * [0, 1] image by its half mask before normalising).
 */
export function museTalkImageTensor(
  rgb: Uint8Array,
  size: number,
  maskLowerHalf: boolean,
  out: Float32Array,
  offset = 0,
): void {
  const plane = size * size;
  if (rgb.length !== plane * 3)
    throw new RangeError(`Expected ${plane * 3} bytes (RGB ${size}x${size}) but received ${rgb.length}`);
  if (offset < 0 || offset + 3 * plane > out.length)
    throw new RangeError(
      `Expected room for ${3 * plane} values at offset ${offset} but the output holds ${out.length}`,
    );
  const maskedFrom = maskLowerHalf ? Math.floor(size / 2) * size : plane;
  for (let p = 0; p < plane; p++) {
    for (let c = 0; c < 3; c++) out[offset + c * plane + p] = p >= maskedFrom ? -1 : rgb[3 * p + c]! / 127.5 - 1;
  }
}

/** The VAE decoder's [3, size, size] output in [-1, 1] at `offset` as 8-bit RGB: round(clamp(x / 2 + 0.5) * 255). */
export function museTalkDecodedImage(tensor: Float32Array, size: number, offset = 0, out?: Uint8Array): Uint8Array {
  const plane = size * size;
  if (offset < 0 || offset + 3 * plane > tensor.length)
    throw new RangeError(`Expected ${3 * plane} values at offset ${offset} but the tensor holds ${tensor.length}`);
  const target = out ?? new Uint8Array(plane * 3);
  for (let p = 0; p < plane; p++) {
    for (let c = 0; c < 3; c++) {
      const v = tensor[offset + c * plane + p]! / 2 + 0.5;
      target[3 * p + c] = Math.round((v < 0 ? 0 : v > 1 ? 1 : v) * 255);
    }
  }
  return target;
}
