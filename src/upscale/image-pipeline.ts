/**
 * Image upscaling, file in, file out: decode once with sharp (EXIF orientation applied, embedded
 * ICC profiles converted to sRGB, grey and 16-bit inputs brought to 8-bit RGB), run the colour
 * channels through the tiled super-resolution network, upscale alpha separately, and encode in the
 * input's format at exactly input size x factor.
 *
 * The network may scale further than the factor (the default x4 network serves "2" and "1"): its
 * output is then brought to exactly input size x factor by a Lanczos-3 downscale, as Real-ESRGAN's
 * own --outscale does. Factor "1" so enhances without changing resolution: the network's detail
 * recovery and denoising survive the downscale.
 */
import sharp, { type Sharp } from 'sharp';
import { type UpscaleFactor, JobError } from '../jobs/index.js';
import { type RgbImage, upscaleRgb, type SrModelLoader } from '../inference/index.js';
import type { ImageFormat, ImageInfo } from '../media/index.js';
import { definedFields } from '../defined-fields.js';

export interface ImageUpscaleRequest {
  inputPath: string;
  outputPath: string;
  factor: UpscaleFactor;
  /** From probing: format and displayed size. */
  info: ImageInfo;
  /** Model name override (e.g. `esrgan-thick-x4`); default per factor. */
  modelName?: string;
  /** Tile side override in input pixels. */
  tile?: number;
  signal?: AbortSignal;
  onProgress?: (done: number, total: number) => void;
}

export interface ImageUpscaleOutcome {
  outputPath: string;
  format: ImageFormat;
  width: number;
  height: number;
  model: string;
  /** Tile side that finished (smaller than asked after running out of memory). */
  tile: number;
}


export function outputSize(info: Pick<ImageInfo, 'width' | 'height'>, factor: UpscaleFactor): { width: number; height: number } {
  const f = Number(factor);
  return { width: info.width * f, height: info.height * f };
}

export async function upscaleImageFile(req: ImageUpscaleRequest, loadModel: SrModelLoader): Promise<ImageUpscaleOutcome> {
  const target = outputSize(req.info, req.factor);
  const loaded = await loadModel('image', req.factor, req.modelName);

  const source = decoder(req.inputPath, req.info);
  const rgb = await decodeRgb(source).catch((error: unknown) => {
    throw error instanceof JobError ? error : new JobError('PROBE_FAILED', `The image could not be decoded as quoted: ${(error as Error).message}`, { cause: error });
  });
  if (rgb.width !== req.info.width || rgb.height !== req.info.height) {
    // The probe and the decoder must agree on orientation; a mismatch would mis-price the job.
    throw new JobError('PROBE_FAILED', `Expected the decoded image to be ${req.info.width}×${req.info.height} but it is ${rgb.width}×${rgb.height}`);
  }

  const upscaled = await upscaleRgb(loaded.model, rgb, {
    ...loaded.tiling,
    ...definedFields({ tile: req.tile, signal: req.signal, onProgress: req.onProgress }),
  });

  let out = sharp(upscaled.data, { raw: { width: upscaled.width, height: upscaled.height, channels: 3 }, limitInputPixels: false });
  if (upscaled.width !== target.width || upscaled.height !== target.height) {
    out = out.resize(target.width, target.height, { kernel: 'lanczos3', fit: 'fill' });
  }
  // Materialise the colour result before joining alpha so both sides have the target size.
  const colour = await out.raw().toBuffer();
  let composed = sharp(colour, { raw: { width: target.width, height: target.height, channels: 3 }, limitInputPixels: false });
  if (isGrey(req.info)) composed = composed.toColourspace('b-w');
  if (req.info.hasAlpha) composed = composed.joinChannel(await upscaleAlpha(source, target), {
    raw: { width: target.width, height: target.height, channels: 1 },
  });
  await encode(composed, req.info.format).toFile(req.outputPath);

  return {
    outputPath: req.outputPath,
    format: req.info.format,
    width: target.width,
    height: target.height,
    model: loaded.name,
    tile: upscaled.tile,
  };
}

/**
 * The backstop (docs/contract.md, "The bill is what runs"): sharp refuses, before decoding, any
 * image of more pixels than the quote measured, so a file replaced after its quote is never decoded
 * at a size it was not priced for; the decoded size is then checked against the quote's exactly.
 */
function decoder(path: string, quoted: Pick<ImageInfo, 'width' | 'height'>): Sharp {
  return sharp(path, { limitInputPixels: quoted.width * quoted.height, failOn: 'truncated', autoOrient: true });
}

/**
 * 8-bit interleaved sRGB. sharp converts an embedded ICC profile to sRGB when the pipeline leaves
 * the profile behind (the default), maps grey to three equal channels and 16-bit samples to 8 bits.
 */
async function decodeRgb(source: Sharp): Promise<RgbImage> {
  const { data, info } = await source
    .clone()
    .removeAlpha()
    .toColourspace('srgb')
    .raw({ depth: 'uchar' })
    .toBuffer({ resolveWithObject: true });
  if (info.channels !== 3) throw new JobError('PROBE_FAILED', `Expected 3 colour channels after decoding but received ${info.channels}`);
  return { data: new Uint8Array(data.buffer, data.byteOffset, data.byteLength), width: info.width, height: info.height, channels: 3 };
}

/**
 * Alpha is a mask, not a photo: a Lanczos-3 resize keeps its edges crisp without running a
 * network trained on natural images over it.
 */
async function upscaleAlpha(source: Sharp, target: { width: number; height: number }): Promise<Buffer> {
  return source
    .clone()
    .extractChannel('alpha')
    .resize(target.width, target.height, { kernel: 'lanczos3', fit: 'fill' })
    .raw({ depth: 'uchar' })
    .toBuffer();
}

function isGrey(info: ImageInfo): boolean {
  return info.channels - (info.hasAlpha ? 1 : 0) === 1;
}

/** The input's format out, at settings that keep the network's detail. */
function encode(image: Sharp, format: ImageFormat): Sharp {
  switch (format) {
    case 'jpeg':
      return image.jpeg({ quality: 92, chromaSubsampling: '4:4:4' });
    case 'png':
      return image.png({ compressionLevel: 6 });
    case 'webp':
      return image.webp({ quality: 92, alphaQuality: 100 });
  }
}
