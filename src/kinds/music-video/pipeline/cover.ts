/**
 * The cover as the renderer reads it: decoded once by sharp (which the quote's probe already
 * trusted with it), turned upright by its EXIF orientation, flattened onto black if it has
 * transparency, converted to 8-bit sRGB and made no larger than the frame needs, then written as a
 * PNG in the job's directory. ffmpeg then reads one plain format, whatever the customer sent: a
 * CMYK JPEG, a 16-bit PNG, a phone photo stored on its side.
 */
import path from 'node:path';
import sharp from 'sharp';
import { ProcessingError, firstErrorLine } from '../../../errors.js';
import { DEFAULT_MAX_IMAGE_PIXELS } from '../../../media/index.js';

/** The longest side kept: the largest frame is 1920 px on its longest side. */
export const COVER_MAX_SIDE = 1920;

export interface PreparedCover {
  path: string;
  width: number;
  height: number;
}

export async function prepareCover(imagePath: string, dir: string): Promise<PreparedCover> {
  const out = path.join(dir, 'cover-prepared.png');
  try {
    const info = await sharp(imagePath, { limitInputPixels: DEFAULT_MAX_IMAGE_PIXELS, failOn: 'truncated' })
      .rotate()
      .flatten({ background: '#000000' })
      .resize({ width: COVER_MAX_SIDE, height: COVER_MAX_SIDE, fit: 'inside', withoutEnlargement: true })
      .toColourspace('srgb')
      .png({ compressionLevel: 1 })
      .toFile(out);
    return { path: out, width: info.width, height: info.height };
  } catch (err) {
    throw new ProcessingError(`The cover could not be prepared: ${firstErrorLine(err)}`, { cause: err });
  }
}
