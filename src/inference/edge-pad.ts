/**
 * Edge replication around images too small for a network's borders. A convolutional network pads
 * its input with zeros, and on an image a few pixels across that padding reaches every pixel: a 1x1
 * image came out of Real-ESRGAN x4plus up to 100 levels off its colour (docs/contract.md, "Image
 * fidelity"). Replicating the edge pixels out to a minimum side gives the network a flat surround
 * instead of black; the padding's part of the output is cropped off again.
 *
 * Only axes shorter than the minimum are padded, so ordinary images run exactly as before (the
 * tiling keeps the network's own zero padding at image borders: see tile-plan.ts).
 */

export interface InterleavedImage<T extends Uint8Array | Uint16Array> {
  data: T;
  width: number;
  height: number;
  channels: 3;
}

export interface EdgePadding {
  left: number;
  top: number;
  right: number;
  bottom: number;
}

/** Sides below this many pixels are padded (a few times the 3x3 kernels' reach, measured on x4plus and the slim networks). */
export const MIN_NETWORK_SIDE = 32;

/** Padding that centres the image on an axis of at least `min` pixels; zero for axes already that long. */
export function paddingFor(width: number, height: number, min = MIN_NETWORK_SIDE): EdgePadding {
  const x = Math.max(0, min - width);
  const y = Math.max(0, min - height);
  return { left: Math.floor(x / 2), right: x - Math.floor(x / 2), top: Math.floor(y / 2), bottom: y - Math.floor(y / 2) };
}

export function isNoPadding(p: EdgePadding): boolean {
  return p.left === 0 && p.top === 0 && p.right === 0 && p.bottom === 0;
}

/** The image with its edge pixels repeated outwards by `p`. */
export function padEdges<T extends Uint8Array | Uint16Array>(image: InterleavedImage<T>, p: EdgePadding): InterleavedImage<T> {
  const { width, height, data } = image;
  const w = width + p.left + p.right;
  const h = height + p.top + p.bottom;
  const out = new (data.constructor as new (n: number) => T)(w * h * 3);
  for (let y = 0; y < h; y++) {
    const sy = Math.min(height - 1, Math.max(0, y - p.top));
    for (let x = 0; x < w; x++) {
      const sx = Math.min(width - 1, Math.max(0, x - p.left));
      const s = (sy * width + sx) * 3;
      const d = (y * w + x) * 3;
      out[d] = data[s]!;
      out[d + 1] = data[s + 1]!;
      out[d + 2] = data[s + 2]!;
    }
  }
  return { data: out, width: w, height: h, channels: 3 };
}

/** The part of a padded image's `scale` times larger output that belongs to the original image. */
export function cropPadding<T extends Uint8Array | Uint16Array>(image: InterleavedImage<T>, p: EdgePadding, scale: number): InterleavedImage<T> {
  const w = image.width - (p.left + p.right) * scale;
  const h = image.height - (p.top + p.bottom) * scale;
  const out = new (image.data.constructor as new (n: number) => T)(w * h * 3);
  for (let y = 0; y < h; y++) {
    const start = ((y + p.top * scale) * image.width + p.left * scale) * 3;
    out.set(image.data.subarray(start, start + w * 3), y * w * 3);
  }
  return { data: out, width: w, height: h, channels: 3 };
}
