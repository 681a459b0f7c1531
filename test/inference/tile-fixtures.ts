/**
 * Shared helpers of the tiling and session tests: real photo crops, a JavaScript stand-in network
 * with a known receptive field, and a logger that records warnings.
 */
import path from 'node:path';
import sharp from 'sharp';
import type { Nchw, TensorOutput } from '../../src/inference/session.js';
import type { RgbImage, SrModel } from '../../src/inference/tiling.js';
import { BUNDLED_PHOTOS_DIR } from '../../src/paths.js';

// The project's own copies of scikit-image's sample photos (test/fixtures/photos/README.md).
export const PHOTOS_DIR = BUNDLED_PHOTOS_DIR;

export async function photoCrop(
  name: string,
  left: number,
  top: number,
  width: number,
  height: number,
): Promise<RgbImage> {
  const { data, info } = await sharp(path.join(PHOTOS_DIR, name))
    .extract({ left, top, width, height })
    .removeAlpha()
    .toColourspace('srgb')
    .raw()
    .toBuffer({ resolveWithObject: true });
  if (info.channels !== 3) throw new Error(`Expected 3 channels from ${name} but received ${info.channels}`);
  return {
    data: new Uint8Array(data.buffer, data.byteOffset, data.length),
    width: info.width,
    height: info.height,
    channels: 3,
  };
}

export function maxAbsDiff(a: Uint8Array, b: Uint8Array): number {
  if (a.length !== b.length) throw new Error(`Expected equal lengths but received ${a.length} and ${b.length}`);
  let max = 0;
  for (let i = 0; i < a.length; i += 1) {
    const d = Math.abs(a[i]! - b[i]!);
    if (d > max) max = d;
  }
  return max;
}

/**
 * A stand-in network: a (2r+1)^2 box blur with zero padding (like a convolution's), then a
 * nearest-neighbour upscale. Its receptive radius is exactly r, and it sums in the same order
 * wherever a pixel lies, so a tiled run with overlap >= r must be byte-identical to an untiled one.
 */
export function boxBlurModel(
  scale: number,
  radius: number,
  range: readonly [number, number] = [0, 255],
): SrModel & { calls: Nchw[] } {
  const calls: Nchw[] = [];
  return {
    scale,
    range,
    calls,
    async run(input: Float32Array, dims: Nchw): Promise<TensorOutput> {
      calls.push(dims);
      const [n, c, h, w] = dims;
      const oh = h * scale;
      const ow = w * scale;
      const out = new Float32Array(n * c * oh * ow);
      const norm = 1 / ((2 * radius + 1) * (2 * radius + 1));
      for (let p = 0; p < n * c; p += 1) {
        const src = p * h * w;
        const dst = p * oh * ow;
        for (let y = 0; y < h; y += 1) {
          for (let x = 0; x < w; x += 1) {
            let sum = 0;
            for (let dy = -radius; dy <= radius; dy += 1) {
              const yy = y + dy;
              if (yy < 0 || yy >= h) continue;
              for (let dx = -radius; dx <= radius; dx += 1) {
                const xx = x + dx;
                if (xx >= 0 && xx < w) sum += input[src + yy * w + xx]!;
              }
            }
            const v = sum * norm;
            for (let sy = 0; sy < scale; sy += 1) {
              const row = dst + (y * scale + sy) * ow + x * scale;
              for (let sx = 0; sx < scale; sx += 1) out[row + sx] = v;
            }
          }
        }
      }
      return { data: out, dims: [n, c, oh, ow] };
    },
  };
}

/** Records warn calls the way a pino logger would receive them. */
export function warnRecorder(): { warn(obj: object, msg: string): void; lines: { obj: object; msg: string }[] } {
  const lines: { obj: object; msg: string }[] = [];
  return { lines, warn: (obj, msg) => void lines.push({ obj, msg }) };
}
