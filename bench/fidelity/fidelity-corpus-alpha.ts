/**
 * Hard alpha edges (issue 40): a disc of one colour on full transparency, with a contrasting colour
 * stored under the transparent pixels, in every way an image carries alpha (RGBA, grey + alpha,
 * palette with tRNS, WebP), and the measure the issue names: the visible error on the output's edge
 * pixels. Used by the fidelity tests and `bench:fidelity`.
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { deflateSync } from 'node:zlib';
import sharp from 'sharp';
import { crc32 } from '../../src/media/index.js';

export interface HardEdgeCase {
  /** `png-disc-black-under`, ... */
  name: string;
  file: string;
  /** The disc's colour, as the output should show it wherever it is visible. */
  colour: [number, number, number];
  /** The colour stored under the transparent pixels. */
  under: [number, number, number];
}

export const RED: [number, number, number] = [255, 0, 0];
const BLACK: [number, number, number] = [0, 0, 0];
const WHITE: [number, number, number] = [255, 255, 255];
/** The grey + alpha disc's grey: light, so that black under it would show. */
const LIGHT_GREY = 220;

/** Alpha 255 inside the ellipse filling most of the image, 0 outside: no anti-aliasing. */
export function discAlpha(width: number, height: number): Uint8Array {
  const alpha = new Uint8Array(width * height);
  const rx = width * 0.4;
  const ry = height * 0.4;
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const dx = (x + 0.5 - width / 2) / rx;
      const dy = (y + 0.5 - height / 2) / ry;
      alpha[y * width + x] = dx * dx + dy * dy <= 1 ? 255 : 0;
    }
  }
  return alpha;
}

function discRgba(width: number, height: number, colour: readonly number[], under: readonly number[]): Buffer {
  const alpha = discAlpha(width, height);
  const out = Buffer.alloc(width * height * 4);
  for (let i = 0; i < alpha.length; i++) {
    const c = alpha[i] === 0 ? under : colour;
    out.set([c[0]!, c[1]!, c[2]!, alpha[i]!], i * 4);
  }
  return out;
}

/** A palette PNG written by hand, so that the palette entry under the transparency is the colour asked (tRNS: entry 0 transparent). */
export function palettePng(width: number, height: number, colour: readonly number[], under: readonly number[]): Buffer {
  const alpha = discAlpha(width, height);
  const rows = Buffer.alloc((width + 1) * height);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) rows[y * (width + 1) + 1 + x] = alpha[y * width + x] === 0 ? 0 : 1;
  }
  const chunk = (type: string, data: Buffer): Buffer => {
    const head = Buffer.alloc(8);
    head.writeUInt32BE(data.length, 0);
    head.write(type, 4, 'latin1');
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])), 0);
    return Buffer.concat([head, data, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.set([8, 3, 0, 0, 0], 8);
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('PLTE', Buffer.from([...under, ...colour])),
    chunk('tRNS', Buffer.from([0, 255])),
    chunk('IDAT', deflateSync(rows)),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

/** The discs at `width` x `height`: RGBA with black and with white under, 16-bit RGBA, palette + tRNS, grey + alpha, lossless WebP. */
export async function makeHardEdgeCases(dir: string, width = 200, height = 120): Promise<HardEdgeCase[]> {
  const at = (name: string): string => path.join(dir, name);
  const raw = (data: Buffer, channels: 2 | 4) => sharp(data, { raw: { width, height, channels } });
  const cases: HardEdgeCase[] = [];
  const add = async (c: HardEdgeCase, data: Buffer | Promise<Buffer>): Promise<void> => {
    await writeFile(c.file, await data);
    cases.push(c);
  };
  await add(
    { name: 'png-disc-black-under', file: at('disc-black-under.png'), colour: RED, under: BLACK },
    raw(discRgba(width, height, RED, BLACK), 4)
      .png()
      .toBuffer(),
  );
  await add(
    { name: 'png-disc-white-under', file: at('disc-white-under.png'), colour: RED, under: WHITE },
    raw(discRgba(width, height, RED, WHITE), 4)
      .png()
      .toBuffer(),
  );
  const deep = new Uint16Array(width * height * 4);
  discRgba(width, height, RED, BLACK).forEach((v, i) => (deep[i] = v * 257));
  await add(
    { name: 'png16-disc-black-under', file: at('disc-16bit.png'), colour: RED, under: BLACK },
    sharp(deep, { raw: { width, height, channels: 4 } })
      .toColourspace('rgb16')
      .png()
      .toBuffer(),
  );
  await add(
    { name: 'png-palette-trns-disc', file: at('disc-palette.png'), colour: RED, under: BLACK },
    palettePng(width, height, RED, BLACK),
  );
  const alpha = discAlpha(width, height);
  const greyAlpha = Buffer.alloc(width * height * 2);
  for (let i = 0; i < alpha.length; i++) greyAlpha.set([alpha[i] === 0 ? 0 : LIGHT_GREY, alpha[i]!], i * 2);
  const grey: [number, number, number] = [LIGHT_GREY, LIGHT_GREY, LIGHT_GREY];
  await add(
    { name: 'png-grey-alpha-disc', file: at('disc-grey-alpha.png'), colour: grey, under: BLACK },
    raw(greyAlpha, 2).toColourspace('b-w').png().toBuffer(),
  );
  // exact: libwebp would otherwise rewrite the colour under the transparency as it likes.
  await add(
    { name: 'webp-alpha-disc', file: at('disc.webp'), colour: RED, under: BLACK },
    raw(discRgba(width, height, RED, BLACK), 4)
      .webp({ lossless: true, exact: true })
      .toBuffer(),
  );
  return cases;
}

export interface EdgeError {
  /**
   * |colour - expected| x alpha / 255 per channel, each edge pixel (0 < alpha < 255) by its worst
   * channel: the mean over the edge pixels, and the largest.
   */
  mean: number;
  max: number;
  /** How many edge pixels there were. */
  pixels: number;
}

/**
 * The visible error of an image's edge: how far each partly transparent pixel's colour is from
 * `colour`, weighted by how much of it shows. It is exactly how far the image composited over any
 * background is from the same image with the right colour, so a rim over white and one over black
 * both count. Read as 8-bit RGBA (grey repeated).
 */
export async function edgeError(file: string, colour: readonly number[]): Promise<EdgeError> {
  const data = await sharp(file).ensureAlpha().toColourspace('srgb').raw().toBuffer();
  const errors = partlyVisibleErrors(data, data, (_, k) => colour[k]!);
  return { mean: meanOf(errors), max: Math.max(0, ...errors), pixels: errors.length };
}

/**
 * A soft edge's visible error: the output brought back to the input's size (Lanczos-3, which sharp
 * runs on premultiplied colour) against the input, on the input's partly transparent pixels, each
 * by its worst channel weighted by its alpha; the mean, in 8-bit levels.
 */
export async function softEdgeError(
  input: string,
  output: string,
  size: { width: number; height: number },
): Promise<number> {
  const read = (file: string, resize: boolean) => {
    const image = sharp(file).ensureAlpha();
    return (resize ? image.resize(size.width, size.height, { kernel: 'lanczos3', fit: 'fill' }) : image)
      .toColourspace('srgb')
      .raw()
      .toBuffer();
  };
  const [was, got] = [await read(input, false), await read(output, true)];
  return meanOf(partlyVisibleErrors(got, was, (i, k) => was[i + k]!));
}

/**
 * For each pixel that `alpha` (RGBA; its alpha read) shows partly: the worst channel of
 * |got - want| x alpha / 255, RGBA `got` at value offset i against `want(i, channel)`.
 */
function partlyVisibleErrors(got: Buffer, alpha: Buffer, want: (i: number, k: number) => number): number[] {
  const errors: number[] = [];
  for (let i = 0; i < alpha.length; i += 4) {
    const a = alpha[i + 3]!;
    if (a === 0 || a === 255) continue;
    let worst = 0;
    for (let k = 0; k < 3; k++) worst = Math.max(worst, (Math.abs(got[i + k]! - want(i, k)) * a) / 255);
    errors.push(worst);
  }
  return errors;
}

function meanOf(xs: readonly number[]): number {
  return xs.length === 0 ? 0 : xs.reduce((a, b) => a + b, 0) / xs.length;
}

/** The image composited over a flat background (for looking at). */
export function composite(file: string, background: readonly number[], out: string): Promise<unknown> {
  return sharp(file)
    .flatten({ background: { r: background[0]!, g: background[1]!, b: background[2]! } })
    .png()
    .toFile(out);
}
