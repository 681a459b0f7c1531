/**
 * Whether a file's content really is the format its first bytes claim, for files kept on behalf of
 * a client (uploads): a PNG signature followed by megabytes of zeros passes a sniff but not this.
 * Images are decoded whole (into a thumbnail, so memory stays small; a truncated or corrupt image
 * fails); video and audio go through ffprobe, which reads the container and its streams.
 */
import sharp from 'sharp';
import { DEFAULT_MAX_IMAGE_PIXELS } from './probe-image.js';
import { probeMedia } from './probe-media.js';
import { isImageFormat, type SniffedFormat } from './sniff.js';

export async function checkDecodes(path: string, format: SniffedFormat): Promise<void> {
  if (isImageFormat(format)) {
    await sharp(path, { limitInputPixels: DEFAULT_MAX_IMAGE_PIXELS, failOn: 'truncated' })
      .resize(64, 64, { fit: 'inside' })
      .toBuffer();
    return;
  }
  await probeMedia(path);
}
