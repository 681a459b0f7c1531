/**
 * The image half of `bench:fidelity`: every case of the image corpus (bench/fidelity/fidelity-corpus-images.ts)
 * through the real pipeline, measured the way the issue asks:
 *
 * - mean CIEDE2000 of the output brought back to the input's size (Lanczos-3) against the input, on
 *   the stored values read in the input's own colour space (Display P3 and Adobe RGB cases in those
 *   spaces; CMYK against sharp's own conversion of the input to sRGB, which the output is), over the
 *   input's opaque pixels and, on the patch chart, the patches' interiors;
 * - bits per sample in and out;
 * - streams in and out: colour channels, alpha, the ICC profile (by its description), EXIF (with
 *   GPS and orientation when present), and a WebP's coding.
 *
 * Cases with alpha also note their soft edge's visible error, with and without the transparent fill
 * (issue 40), and the hard-edge discs of bench/fidelity/fidelity-corpus-alpha.ts are rows of their own: the
 * visible error on their edge pixels, with and without the fill, with the default network.
 *
 * Refused cases are rows too: their note is the refusal. Channel and metadata cases run the compact
 * network the corpus names; colour cases run what the pipeline picks (Real-ESRGAN x4plus).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import sharp, { type Metadata } from 'sharp';
import { SessionCache, createSrModelLoader } from '../../src/inference/index.js';
import { type ImageInfo, iccDescription, probeImage, readImageLayout, summariseExif } from '../../src/media/index.js';
import { upscaleImageFile } from '../../src/kinds/image-upscale/pipeline/index.js';
import { meanCiede2000 } from './colour-difference.js';
import { type ImageCase, makeImageCorpus } from './fidelity-corpus-images.js';
import {
  type EdgeError,
  type HardEdgeCase,
  edgeError,
  makeHardEdgeCases,
  softEdgeError,
} from './fidelity-corpus-alpha.js';
import type { FidelityRow } from './fidelity-row.js';

const BITS: Record<string, number> = { uchar: 8, char: 8, ushort: 16, short: 16 };

/** What a file carries, as FidelityRow's stream names. */
async function streamsOf(file: string, meta: Metadata): Promise<string[]> {
  const streams: string[] = [
    meta.space === 'cmyk' ? 'cmyk' : meta.channels - (meta.hasAlpha ? 1 : 0) === 1 ? 'grey' : 'rgb',
  ];
  if (meta.hasAlpha) streams.push(meta.isPalette === true ? 'alpha(palette)' : 'alpha');
  if (meta.icc !== undefined) streams.push(`icc:${iccDescription(meta.icc) ?? 'unnamed'}`);
  if (meta.exif !== undefined) {
    const exif = summariseExif(meta.exif);
    const parts =
      exif === null
        ? ['unreadable']
        : [
            ...(exif.orientation === undefined ? [] : [`orientation ${exif.orientation}`]),
            ...(exif.hasGps ? ['gps'] : []),
          ];
    streams.push(parts.length === 0 ? 'exif' : `exif(${parts.join(', ')})`);
  }
  if (meta.format === 'webp') {
    const layout = await readImageLayout(file, 'webp');
    streams.push(layout.lossless === true ? 'webp:lossless' : 'webp:lossy');
  }
  return streams;
}

/** Stored values as 3-channel RGB at `depth` (grey repeated, alpha dropped), upright, optionally resized. */
async function storedRgb(
  file: string,
  depth: 8 | 16,
  size?: { width: number; height: number },
  convert = false,
): Promise<Uint8Array | Uint16Array> {
  let image = sharp(file, { ignoreIcc: !convert, autoOrient: true }).removeAlpha();
  if (size !== undefined) image = image.resize(size.width, size.height, { kernel: 'lanczos3', fit: 'fill' });
  const data = Buffer.from(
    await image
      .toColourspace(depth === 16 ? 'rgb16' : 'srgb')
      .raw({ depth: depth === 16 ? 'ushort' : 'uchar' })
      .toBuffer(),
  );
  return depth === 16 ? new Uint16Array(data.buffer, data.byteOffset, data.length / 2) : new Uint8Array(data);
}

/**
 * The pixels measured: the input's fully opaque ones (colour under transparency is not part of the
 * picture) and, on a patch chart, those at least 2 pixels inside a patch (the colour of a patch, not
 * the edge between two).
 */
async function measuredPixels(input: ImageCase, meta: Metadata, width: number): Promise<(i: number) => boolean> {
  const alpha = meta.hasAlpha
    ? await sharp(input.file, { autoOrient: true }).extractChannel('alpha').raw().toBuffer()
    : undefined;
  const side = input.patchSide;
  const inside = (v: number): boolean => side === undefined || (v % side >= 2 && v % side < side - 2);
  return (i) => (alpha === undefined || alpha[i] === 255) && inside(i % width) && inside(Math.floor(i / width));
}

/** Only the pixels `keep` selects, three values each. */
function select(data: Uint8Array | Uint16Array, keep: (i: number) => boolean): number[] {
  const out: number[] = [];
  for (let i = 0; i < data.length / 3; i++) if (keep(i)) out.push(data[i * 3]!, data[i * 3 + 1]!, data[i * 3 + 2]!);
  return out;
}

type Upscale = typeof upscaleImageFile;

async function measure(
  input: ImageCase,
  dir: string,
  loadModel: ReturnType<typeof createSrModelLoader>,
  upscale: Upscale,
): Promise<FidelityRow> {
  let info;
  try {
    info = await probeImage(input.file);
  } catch (error) {
    const code = (error as { code?: string }).code ?? 'error';
    // A refused file may not even have a header libvips reads (the HEIC stand-in).
    const meta = await sharp(input.file)
      .metadata()
      .catch(() => undefined);
    const streamsIn =
      meta === undefined ? [] : [`${meta.format}${(meta.pages ?? 1) > 1 ? `, ${meta.pages} frames` : ''}`];
    return {
      case: input.name,
      bitDepthIn: BITS[meta?.depth ?? ''] ?? 8,
      bitDepthOut: 0,
      streamsIn,
      streamsOut: [],
      notes: `refused at quote: ${code}: ${(error as Error).message}`,
    };
  }
  const inMeta = await sharp(input.file).metadata();
  const streamsIn = await streamsOf(input.file, inMeta);
  const bitDepthIn = BITS[inMeta.depth] ?? 8;
  const output = path.join(dir, `out-${path.basename(input.file)}`);
  const started = performance.now();
  const outcome = await upscale(
    {
      inputPath: input.file,
      outputPath: output,
      factor: input.factor,
      info,
      ...(input.model === undefined ? {} : { modelName: input.model }),
    },
    loadModel,
  );
  const ms = performance.now() - started;
  const outMeta = await sharp(output).metadata();
  const bitDepthOut = BITS[outMeta.depth] ?? 8;
  const depth = bitDepthIn === 16 && bitDepthOut === 16 ? 16 : 8;
  const size = { width: info.width, height: info.height };
  // CMYK came out as sRGB: the reference is the input converted through its profile.
  const reference = await storedRgb(input.file, depth, undefined, inMeta.space === 'cmyk');
  const back = await storedRgb(output, depth, size);
  const keep = await measuredPixels(input, inMeta, info.width);
  const deltaE2000 = meanCiede2000(select(back, keep), select(reference, keep), {
    channels: 3,
    space: input.space,
    maxValue: depth === 16 ? 65535 : 255,
  });
  const soft = inMeta.hasAlpha ? `; ${await softEdgeNote(input, info, dir, loadModel, upscale, output)}` : '';
  return {
    case: input.name,
    deltaE2000: Number(deltaE2000.toFixed(3)),
    bitDepthIn,
    bitDepthOut,
    streamsIn,
    streamsOut: await streamsOf(output, outMeta),
    notes: `${info.width}x${info.height} x${input.factor} -> ${outcome.width}x${outcome.height}, ${outcome.model}, ${Math.round(ms)} ms${soft}`,
  };
}

/**
 * A soft alpha edge's visible error (bench/fidelity/fidelity-corpus-alpha.ts, softEdgeError) with the
 * transparent fill (`output`, already made) and, in the same run, without it.
 */
async function softEdgeNote(
  input: ImageCase,
  info: ImageInfo,
  dir: string,
  loadModel: ReturnType<typeof createSrModelLoader>,
  upscale: Upscale,
  output: string,
): Promise<string> {
  const stored = path.join(dir, `out-stored-${path.basename(input.file)}`);
  const model = input.model === undefined ? {} : { modelName: input.model };
  await upscale(
    { inputPath: input.file, outputPath: stored, factor: input.factor, info, transparentFill: false, ...model },
    loadModel,
  );
  const size = { width: info.width, height: info.height };
  const [filled, before] = [
    await softEdgeError(input.file, output, size),
    await softEdgeError(input.file, stored, size),
  ];
  return `soft edge error ${filled.toFixed(2)} (colour under the transparency as stored: ${before.toFixed(2)})`;
}

/**
 * A hard alpha edge (issue 40), with the pipeline's default network at x2: the visible error on the
 * output's edge pixels (bench/fidelity/fidelity-corpus-alpha.ts), with the transparent fill and, in the same
 * run, without it (the colour under the transparency as stored, as before the fill).
 */
async function measureHardEdge(
  input: HardEdgeCase,
  dir: string,
  loadModel: ReturnType<typeof createSrModelLoader>,
  upscale: Upscale,
): Promise<FidelityRow> {
  const info = await probeImage(input.file);
  const inMeta = await sharp(input.file).metadata();
  const outputs = [true, false].map((fill) =>
    path.join(dir, `out-${fill ? 'fill' : 'stored'}-${path.basename(input.file)}`),
  );
  const errors: EdgeError[] = [];
  for (const [i, output] of outputs.entries()) {
    await upscale(
      { inputPath: input.file, outputPath: output, factor: '2', info, transparentFill: i === 0 },
      loadModel,
    );
    errors.push(await edgeError(output, input.colour));
  }
  const [filled, stored] = errors as [EdgeError, EdgeError];
  const outMeta = await sharp(outputs[0]!).metadata();
  const figures = (e: EdgeError): string => `mean ${e.mean.toFixed(1)} max ${e.max.toFixed(0)}`;
  return {
    case: `hard-edge ${input.name}`,
    bitDepthIn: BITS[inMeta.depth] ?? 8,
    bitDepthOut: BITS[outMeta.depth] ?? 8,
    streamsIn: await streamsOf(input.file, inMeta),
    streamsOut: await streamsOf(outputs[0]!, outMeta),
    notes: `edge error over ${filled.pixels} px: ${figures(filled)} (colour under the transparency as stored: ${figures(stored)})`,
  };
}

export interface ImageFidelityOptions {
  /** Another build's pipeline, to measure before and after side by side (default: this one's). */
  upscale?: Upscale;
  /** Rows of the 3-pixel-wide column (default the issue's 500). */
  columnRows?: number;
}

export async function imageFidelityRows(options: ImageFidelityOptions = {}): Promise<FidelityRow[]> {
  const dir = await mkdtemp(path.join(tmpdir(), 'media-worker-fidelity-images-'));
  const sessions = new SessionCache({ executionProviders: ['cpu'] });
  try {
    const loadModel = createSrModelLoader({ sessions });
    const corpus = await makeImageCorpus(dir, { columnRows: options.columnRows ?? 500 });
    const rows: FidelityRow[] = [];
    for (const input of corpus) rows.push(await measure(input, dir, loadModel, options.upscale ?? upscaleImageFile));
    for (const input of await makeHardEdgeCases(dir))
      rows.push(await measureHardEdge(input, dir, loadModel, options.upscale ?? upscaleImageFile));
    return rows;
  } finally {
    await sessions.release();
    await rm(dir, { recursive: true, force: true });
  }
}
