/**
 * Image upscaling, file in, file out: decode once with sharp (EXIF orientation applied), run the
 * colour channels through the tiled super-resolution network, upscale alpha separately, and encode
 * in the input's format at exactly input size x factor, keeping what the input was
 * (docs/contract.md, "Image fidelity"):
 *
 * - colour in the source's own encoding with its ICC profile embedded again (media/image-colour.ts;
 *   CMYK is the exception, converted to sRGB), 16-bit samples kept 16-bit end to end;
 * - alpha for grey + alpha, RGBA, palette and WebP; grey stays grey; the colour stored under fully
 *   transparent pixels never reaches the picture: it is filled from the visible pixels before the
 *   network (upscale/transparent-fill.ts), so a hard alpha edge gets no rim of that colour;
 * - EXIF kept, cleaned (orientation reset, GPS and thumbnail removed: media/image-metadata.ts) and
 *   written back with the profile byte for byte (media/image-container.ts);
 * - a lossless WebP stays lossless; tiny images are edge-padded for the network and every output's
 *   colours are anchored to the input's (inference/edge-pad.ts, inference/colour-anchor.ts).
 *
 * The network may scale further than the factor (the default x4 network serves "2" and "1"): its
 * output is then brought to exactly input size x factor by a Lanczos-3 downscale, as Real-ESRGAN's
 * own --outscale does. Factor "1" so enhances without changing resolution: the network's detail
 * recovery and denoising survive the downscale.
 */
import { writeFile } from 'node:fs/promises';
import sharp, { type Metadata, type Sharp } from 'sharp';
import { type UpscaleFactor, JobError } from '../../../jobs/index.js';
import {
  anchorColours,
  anchorSigma,
  cropPadding,
  type InterleavedImage,
  isNoPadding,
  padEdges,
  paddingFor,
  type RgbImage,
  type RgbImage16,
  type LoadedSrModel,
  type UpscaleOptions,
  upscaleRgb,
  upscaleRgb16,
  type SrModelLoader,
} from '../../../inference/index.js';
import {
  type ImageColourPlan,
  type ImageFormat,
  type ImageInfo,
  cleanExif,
  embedMetadata,
  imageColourPlan,
  readImageLayout,
} from '../../../media/index.js';
import { definedFields } from '../../../defined-fields.js';
import { withSpan } from '../../../telemetry/index.js';
import { fillTransparent } from './transparent-fill.js';

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
  /**
   * Fill the colour under fully transparent pixels from the visible ones before the network
   * (default true). False runs the stored colour as it is: only for measuring the fill (bench).
   */
  transparentFill?: boolean;
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

export function outputSize(
  info: Pick<ImageInfo, 'width' | 'height'>,
  factor: UpscaleFactor,
): { width: number; height: number } {
  const f = Number(factor);
  return { width: info.width * f, height: info.height * f };
}

export async function upscaleImageFile(
  req: ImageUpscaleRequest,
  loadModel: SrModelLoader,
): Promise<ImageUpscaleOutcome> {
  const target = outputSize(req.info, req.factor);
  const loaded = await loadModel('image', req.factor, req.modelName);

  const header = await readHeader(req.inputPath);
  const plan = imageColourPlan(header);
  const source = decoder(req.inputPath, req.info, plan);
  const stored = await decodeColour(source, plan).catch((error: unknown) => {
    throw error instanceof JobError
      ? error
      : new JobError('PROBE_FAILED', `The image could not be decoded as quoted: ${(error as Error).message}`, {
          cause: error,
        });
  });
  const max = plan.depth === 16 ? 65535 : 255;
  // The filled colour is what the network sees and what the output is anchored to.
  const colour =
    plan.alpha && req.transparentFill !== false
      ? fillColour(stored, await decodeAlpha(source, plan.depth), max)
      : stored;
  if (colour.width !== req.info.width || colour.height !== req.info.height) {
    // The probe and the decoder must agree on orientation; a mismatch would mis-price the job.
    throw new JobError(
      'PROBE_FAILED',
      `Expected the decoded image to be ${req.info.width}×${req.info.height} but it is ${colour.width}×${colour.height}`,
    );
  }

  const options: UpscaleOptions = {
    ...loaded.tiling,
    ...definedFields({ tile: req.tile, signal: req.signal, onProgress: req.onProgress }),
  };
  const upscaled = await withSpan(
    'tiles',
    { attributes: { 'media.model': loaded.name, 'media.image.pixels': colour.width * colour.height } },
    async (span) => {
      const ran = await runNetwork(loaded, colour, options);
      span.setAttributes({ 'media.tile.side': ran.tile });
      return ran;
    },
  );
  const sized =
    upscaled.image.width === target.width && upscaled.image.height === target.height
      ? upscaled.image
      : await resize(upscaled.image, target);
  anchorColours(colour, sized, Number(req.factor), max, anchorSigma(colour.width, colour.height));
  const alpha = plan.alpha ? await upscaleAlpha(source, target, plan.depth) : undefined;

  await withSpan('encode', { attributes: { 'media.format': req.info.format } }, async (span) => {
    const pixels = interleave(sized, alpha, plan.grey);
    const layout = req.info.format === 'webp' ? await readImageLayout(req.inputPath, 'webp') : { animated: false };
    const encoded = await encode(rawImage(pixels, target, plan), req.info.format, layout.lossless === true).toBuffer();
    const exif = header.exif === undefined ? null : cleanExif(header.exif, target);
    const file = embedMetadata(
      encoded,
      req.info.format,
      { ...(plan.icc === undefined ? {} : { icc: plan.icc }), ...(exif === null ? {} : { exif }) },
      target,
    );
    await writeFile(req.outputPath, file);
    span.setAttributes({ 'media.output.bytes': file.length });
  });

  return {
    outputPath: req.outputPath,
    format: req.info.format,
    width: target.width,
    height: target.height,
    model: loaded.name,
    tile: upscaled.tile,
  };
}

type Pixels = InterleavedImage<Uint8Array> | InterleavedImage<Uint16Array>;

async function readHeader(path: string): Promise<Metadata> {
  try {
    return await sharp(path, { limitInputPixels: false }).metadata();
  } catch (error) {
    throw new JobError('PROBE_FAILED', `The image could not be decoded as quoted: ${(error as Error).message}`, {
      cause: error,
    });
  }
}

/**
 * The backstop (docs/contract.md, "The bill is what runs"): sharp refuses, before decoding, any
 * image of more pixels than the quote measured, so a file replaced after its quote is never decoded
 * at a size it was not priced for; the decoded size is then checked against the quote's exactly.
 * Kept encoding: no ICC transform at all, the stored values are what the network sees.
 */
function decoder(path: string, quoted: Pick<ImageInfo, 'width' | 'height'>, plan: ImageColourPlan): Sharp {
  const image = sharp(path, { limitInputPixels: quoted.width * quoted.height, failOn: 'truncated', autoOrient: true });
  return plan.keepEncoding ? image.keepIccProfile() : image;
}

/**
 * Interleaved RGB at the plan's depth: grey is three equal channels, CMYK is converted to sRGB
 * through its profile, anything else is the stored values untouched.
 */
async function decodeColour(source: Sharp, plan: ImageColourPlan): Promise<Pixels> {
  const sixteen = plan.depth === 16;
  const { data, info } = await source
    .clone()
    .removeAlpha()
    .toColourspace(sixteen ? 'rgb16' : 'srgb')
    .raw({ depth: sixteen ? 'ushort' : 'uchar' })
    .toBuffer({ resolveWithObject: true });
  if (info.channels !== 3)
    throw new JobError('PROBE_FAILED', `Expected 3 colour channels after decoding but received ${info.channels}`);
  const size = { width: info.width, height: info.height, channels: 3 as const };
  return sixteen ? { data: toUint16(data), ...size } : { data: toUint8(data), ...size };
}

/** The network at the image's depth, on an edge-padded copy when the image is too small for its borders. */
async function runNetwork(
  loaded: LoadedSrModel,
  image: Pixels,
  options: UpscaleOptions,
): Promise<{ image: Pixels; tile: number }> {
  const padding = paddingFor(image.width, image.height);
  const scale = loaded.model.scale;
  if (image.data instanceof Uint16Array) {
    const input = image as RgbImage16;
    const result = await upscaleRgb16(loaded.model, isNoPadding(padding) ? input : padEdges(input, padding), options);
    return { image: isNoPadding(padding) ? result : cropPadding(result, padding, scale), tile: result.tile };
  }
  const input = image as RgbImage;
  const result = await upscaleRgb(loaded.model, isNoPadding(padding) ? input : padEdges(input, padding), options);
  return { image: isNoPadding(padding) ? result : cropPadding(result, padding, scale), tile: result.tile };
}

/** Lanczos-3 to the target size at the image's depth. */
async function resize(image: Pixels, target: { width: number; height: number }): Promise<Pixels> {
  const sixteen = image.data instanceof Uint16Array;
  const data = await sharp(rawInput(image.data), {
    raw: { width: image.width, height: image.height, channels: 3 },
    limitInputPixels: false,
  })
    .resize(target.width, target.height, { kernel: 'lanczos3', fit: 'fill' })
    .toColourspace(sixteen ? 'rgb16' : 'srgb')
    .raw({ depth: sixteen ? 'ushort' : 'uchar' })
    .toBuffer();
  const size = { width: target.width, height: target.height, channels: 3 as const };
  return sixteen ? { data: toUint16(data), ...size } : { data: toUint8(data), ...size };
}

/**
 * The alpha band, taken after converting to RGB(A) at the plan's depth, so that grey + alpha gives
 * its alpha band, not its grey one.
 */
function alphaBand(source: Sharp, depth: 8 | 16): Sharp {
  return source
    .clone()
    .toColourspace(depth === 16 ? 'rgb16' : 'srgb')
    .extractChannel('alpha');
}

async function decodeAlpha(source: Sharp, depth: 8 | 16): Promise<Uint8Array | Uint16Array> {
  const data = await alphaBand(source, depth)
    .raw({ depth: depth === 16 ? 'ushort' : 'uchar' })
    .toBuffer();
  return depth === 16 ? toUint16(data) : toUint8(data);
}

/** fillTransparent at the image's depth. */
function fillColour(colour: Pixels, alpha: Uint8Array | Uint16Array, max: number): Pixels {
  return colour.data instanceof Uint16Array
    ? fillTransparent(colour as RgbImage16, alpha, max)
    : fillTransparent(colour as RgbImage, alpha, max);
}

/**
 * Alpha is a mask, not a photo: a Lanczos-3 resize keeps its edges crisp without running a
 * network trained on natural images over it.
 */
async function upscaleAlpha(
  source: Sharp,
  target: { width: number; height: number },
  depth: 8 | 16,
): Promise<Uint8Array | Uint16Array> {
  const data = await alphaBand(source, depth)
    .resize(target.width, target.height, { kernel: 'lanczos3', fit: 'fill' })
    .raw({ depth: depth === 16 ? 'ushort' : 'uchar' })
    .toBuffer();
  return depth === 16 ? toUint16(data) : toUint8(data);
}

/** Colour (grey as Rec. 709 luma of the network's three near-equal channels) and alpha in one interleaved buffer. */
function interleave(
  colour: Pixels,
  alpha: Uint8Array | Uint16Array | undefined,
  grey: boolean,
): Uint8Array | Uint16Array {
  const n = colour.width * colour.height;
  const src = colour.data;
  const channels = (grey ? 1 : 3) + (alpha === undefined ? 0 : 1);
  if (!grey && alpha === undefined) return src;
  const out = src instanceof Uint16Array ? new Uint16Array(n * channels) : new Uint8Array(n * channels);
  for (let i = 0; i < n; i++) {
    const s = i * 3;
    let d = i * channels;
    if (grey) {
      out[d++] = Math.round(0.2126 * src[s]! + 0.7152 * src[s + 1]! + 0.0722 * src[s + 2]!);
    } else {
      out[d++] = src[s]!;
      out[d++] = src[s + 1]!;
      out[d++] = src[s + 2]!;
    }
    if (alpha !== undefined) out[d] = alpha[i]!;
  }
  return out;
}

/** Raw pixels as sharp should read them: the interpretation set so that no colour conversion runs. */
function rawImage(
  pixels: Uint8Array | Uint16Array,
  size: { width: number; height: number },
  plan: ImageColourPlan,
): Sharp {
  const sixteen = pixels instanceof Uint16Array;
  const channels = ((plan.grey ? 1 : 3) + (plan.alpha ? 1 : 0)) as 1 | 2 | 3 | 4;
  const space = plan.grey ? (sixteen ? 'grey16' : 'b-w') : sixteen ? 'rgb16' : 'srgb';
  return sharp(rawInput(pixels), {
    raw: { width: size.width, height: size.height, channels },
    limitInputPixels: false,
  }).toColourspace(space);
}

/** The input's format out, at settings that keep the network's detail; a lossless WebP stays lossless. */
function encode(image: Sharp, format: ImageFormat, lossless: boolean): Sharp {
  switch (format) {
    case 'jpeg':
      return image.jpeg({ quality: 92, chromaSubsampling: '4:4:4' });
    case 'png':
      return image.png({ compressionLevel: 6 });
    case 'webp':
      return lossless ? image.webp({ lossless: true }) : image.webp({ quality: 92, alphaQuality: 100 });
  }
}

/** sharp takes a raw input's sample depth from the array's type: a Buffer would read 16-bit samples as bytes. */
function rawInput(data: Uint8Array | Uint16Array): Buffer | Uint16Array {
  return data instanceof Uint16Array ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
}

function toUint8(data: Buffer): Uint8Array {
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}

/** A Uint16Array view needs an even byte offset; copy in the rare case sharp's buffer has none. */
function toUint16(data: Buffer): Uint16Array {
  if (data.byteOffset % 2 === 0) return new Uint16Array(data.buffer, data.byteOffset, data.byteLength / 2);
  const copy = new Uint16Array(data.byteLength / 2);
  Buffer.from(copy.buffer).set(data);
  return copy;
}
