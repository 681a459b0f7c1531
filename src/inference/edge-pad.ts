/**
 * Edge replication around an image before a network sees it. A convolutional network pads its
 * input with zeros, so the pixels near an image border see black: on a flat patch Real-ESRGAN x4plus
 * put its border pixels up to 60 levels off (a 1x1 image, all border, up to 100 levels off:
 * docs/contract.md, "Image fidelity"). Replicating the edge pixels outwards gives the network the
 * image's own colours there instead; the padding's part of the output is cropped off again.
 *
 * Every side gets EDGE_PAD pixels, and an axis shorter than MIN_NETWORK_SIDE is padded up to it.
 * The cost is the extra pixels: 3 % on a 1024x1024 image, more on small ones, which are cheap.
 * (The tiling inside keeps the network's own zero padding at the padded image's borders, see
 * tile-plan.ts; those borders are now outside the picture.)
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

/** Pixels replicated on every side. */
export const EDGE_PAD = 8;
/** Axes shorter than this are padded up to it. */
export const MIN_NETWORK_SIDE = 16;

/** EDGE_PAD on every side, more on an axis that would still be shorter than `min`, centring the image. */
export function paddingFor(width: number, height: number, pad = EDGE_PAD, min = MIN_NETWORK_SIDE): EdgePadding {
  const x = Math.max(2 * pad, min - width);
  const y = Math.max(2 * pad, min - height);
  return {
    left: Math.floor(x / 2),
    right: x - Math.floor(x / 2),
    top: Math.floor(y / 2),
    bottom: y - Math.floor(y / 2),
  };
}

export function isNoPadding(p: EdgePadding): boolean {
  return p.left === 0 && p.top === 0 && p.right === 0 && p.bottom === 0;
}

/** The image with its edge pixels repeated outwards by `p`. */
export function padEdges<T extends Uint8Array | Uint16Array>(
  image: InterleavedImage<T>,
  p: EdgePadding,
): InterleavedImage<T> {
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
export function cropPadding<T extends Uint8Array | Uint16Array>(
  image: InterleavedImage<T>,
  p: EdgePadding,
  scale: number,
): InterleavedImage<T> {
  const w = image.width - (p.left + p.right) * scale;
  const h = image.height - (p.top + p.bottom) * scale;
  const out = new (image.data.constructor as new (n: number) => T)(w * h * 3);
  for (let y = 0; y < h; y++) {
    const start = ((y + p.top * scale) * image.width + p.left * scale) * 3;
    out.set(image.data.subarray(start, start + w * 3), y * w * 3);
  }
  return { data: out, width: w, height: h, channels: 3 };
}
