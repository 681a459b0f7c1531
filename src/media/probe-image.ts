/**
 * Image probing with sharp. Three steps, cheapest first, so a hostile file costs almost nothing:
 *
 * 1. the format is sniffed from the content (JPEG, PNG or WebP, whatever the file is called);
 * 2. the header is read (sharp's `metadata()` never decodes pixels), and declared sizes over the
 *    limits are refused right there: a PNG claiming 100000x100000 is never decoded;
 * 3. the pixels are decoded once into a tiny thumbnail with `failOn: 'truncated'`, because a header
 *    can be intact while the data behind it is cut off or corrupt. JPEG and WebP decode at a reduced
 *    scale for this (shrink-on-load), PNG has to inflate everything but streams it row by row.
 */
import sharp, { type Metadata } from 'sharp';
import { JobError, firstErrorLine } from '../errors.js';
import { describeFormat } from './describe.js';
import { readImageLayout } from './image-container.js';
import { describeUnsupportedImageFile, isImageFormat, sniffFile } from './sniff.js';
import type { ImageFormat, ImageInfo } from './types.js';

/** The spec's largest output at factor 1 (decimal megapixels) and longest side: any larger input can never be accepted. */
export const DEFAULT_MAX_IMAGE_PIXELS = 96_000_000;
export const DEFAULT_MAX_IMAGE_SIDE = 20_000;

export interface ProbeImageOptions {
  /** Inputs with more pixels than this are refused from the header alone (OUTPUT_TOO_LARGE). */
  maxPixels?: number;
  /** Inputs with a longer side than this are refused from the header alone (OUTPUT_TOO_LARGE). */
  maxSide?: number;
  /** Decode the pixels once to catch truncated or corrupt data (default true). */
  verifyDecode?: boolean;
}

const BITS_BY_DEPTH: Record<string, number> = {
  uchar: 8,
  char: 8,
  ushort: 16,
  short: 16,
  uint: 32,
  int: 32,
  float: 32,
  double: 64,
  complex: 64,
  dpcomplex: 128,
};

function megapixels(pixels: number): string {
  return `${Number((pixels / 1_000_000).toFixed(2))} MP`;
}

export async function probeImage(path: string, opts: ProbeImageOptions = {}): Promise<ImageInfo> {
  const maxPixels = opts.maxPixels ?? DEFAULT_MAX_IMAGE_PIXELS;
  const maxSide = opts.maxSide ?? DEFAULT_MAX_IMAGE_SIDE;

  const sniffed = await sniffFile(path);
  if (!isImageFormat(sniffed)) {
    const named = sniffed === null ? await describeUnsupportedImageFile(path) : undefined;
    throw new JobError(
      'PROBE_FAILED',
      `Expected a JPEG, PNG or WebP image but received ${named ?? describeFormat(sniffed)}`,
    );
  }
  const format: ImageFormat = sniffed;

  let meta: Metadata;
  try {
    // The header only: no pixel limit here, so that the size check below can name the sizes.
    meta = await sharp(path, { limitInputPixels: false }).metadata();
  } catch (err) {
    throw new JobError(
      'PROBE_FAILED',
      `The ${format.toUpperCase()} image header could not be read: ${firstErrorLine(err)}`,
      { cause: err },
    );
  }
  if (meta.format !== format) {
    throw new JobError(
      'PROBE_FAILED',
      `Expected a ${format.toUpperCase()} image but the decoder read it as ${String(meta.format)}`,
    );
  }
  // Animation is refused like a GIF's (docs/contract.md, "Image fidelity"): one frame of it is not what was sent.
  const layout = await readImageLayout(path, format);
  const frames = meta.pages ?? 1;
  if (layout.animated || frames > 1) {
    const count = frames > 1 ? ` of ${frames} frames` : '';
    throw new JobError(
      'PROBE_FAILED',
      `Expected a still image but received an animated ${format === 'png' ? 'PNG (APNG)' : 'WebP'}${count}; animated images are not upscaled, like animated GIF`,
    );
  }
  const { width, height } = meta.autoOrient;
  if (!Number.isInteger(width) || !Number.isInteger(height) || width < 1 || height < 1) {
    throw new JobError('PROBE_FAILED', `The ${format.toUpperCase()} image declares no valid size`);
  }

  const pixels = width * height;
  if (pixels > maxPixels || Math.max(width, height) > maxSide) {
    throw new JobError(
      'OUTPUT_TOO_LARGE',
      `Expected an image of at most ${megapixels(maxPixels)} and ${maxSide} px on its longest side but received ${width}×${height} (${megapixels(pixels)}); it was refused from its header without being decoded`,
    );
  }

  if (opts.verifyDecode ?? true) {
    try {
      await sharp(path, { failOn: 'truncated', limitInputPixels: maxPixels, sequentialRead: true })
        .resize(16, 16, { fit: 'inside' })
        .raw()
        .toBuffer();
    } catch (err) {
      throw new JobError(
        'PROBE_FAILED',
        `The ${format.toUpperCase()} image data is truncated or corrupt: ${firstErrorLine(err)}`,
        { cause: err },
      );
    }
  }

  return {
    format,
    width,
    height,
    channels: meta.channels,
    hasAlpha: meta.hasAlpha,
    bitDepth: BITS_BY_DEPTH[meta.depth] ?? 8,
    orientation:
      meta.orientation !== undefined && meta.orientation >= 1 && meta.orientation <= 8 ? meta.orientation : 1,
    hasIccProfile: meta.hasProfile,
  };
}
