/**
 * Cover art without an image model: a 1024x1024 JPEG per song, a gradient and a few translucent
 * shapes whose colours and places come from a hash of the title, tags, task id and song index,
 * with the title set in type. The same inputs give the same bytes (sharp renders the SVG).
 */
import { createHash } from 'node:crypto';
import sharp from 'sharp';

export const COVER_SIZE = 1024;

export interface CoverInput {
  title: string;
  tags: string;
  taskId: string;
  /** 0 or 1: the two songs of a task get different covers. */
  index: number;
}

/** A stream of numbers in [0, 1) from the hash (each 4 bytes; rehashed when used up). */
function hashStream(seed: string): () => number {
  let block = createHash('sha256').update(seed).digest();
  let offset = 0;
  return () => {
    if (offset + 4 > block.length) {
      block = createHash('sha256').update(block).digest();
      offset = 0;
    }
    const value = block.readUInt32LE(offset) / 2 ** 32;
    offset += 4;
    return value;
  };
}

function escapeXml(text: string): string {
  return text.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' })[c] ?? c,
  );
}

/** Lines of at most `width` characters, broken at spaces, at most `maxLines` (the last ends in "..."). */
export function wrapTitle(title: string, width: number, maxLines: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of title.split(/\s+/).filter(Boolean)) {
    const piece = word.length > width ? `${word.slice(0, width - 1)}-` : word;
    if (line === '') line = piece;
    else if (line.length + 1 + piece.length <= width) line = `${line} ${piece}`;
    else {
      lines.push(line);
      line = piece;
    }
  }
  if (line !== '') lines.push(line);
  if (lines.length > maxLines) {
    const kept = lines.slice(0, maxLines);
    kept[maxLines - 1] = `${(kept[maxLines - 1] ?? '').slice(0, width - 3)}...`;
    return kept;
  }
  return lines;
}

export function coverSvg(input: CoverInput): string {
  const next = hashStream(`${input.taskId}\0${input.index}\0${input.title}\0${input.tags}`);
  const hue = Math.floor(next() * 360);
  const hue2 = (hue + 40 + Math.floor(next() * 100)) % 360;
  const angle = Math.floor(next() * 360);
  const shapes: string[] = [];
  const count = 5 + Math.floor(next() * 6);
  for (let i = 0; i < count; i += 1) {
    const h = (hue + Math.floor(next() * 180)) % 360;
    const x = Math.round(next() * COVER_SIZE);
    const y = Math.round(next() * COVER_SIZE);
    const r = Math.round(60 + next() * 260);
    const opacity = (0.15 + next() * 0.35).toFixed(2);
    shapes.push(
      next() < 0.5
        ? `<circle cx="${x}" cy="${y}" r="${r}" fill="hsl(${h},70%,60%)" fill-opacity="${opacity}"/>`
        : `<rect x="${x - r}" y="${y - r / 2}" width="${2 * r}" height="${r}" transform="rotate(${Math.floor(next() * 180)} ${x} ${y})" fill="hsl(${h},65%,55%)" fill-opacity="${opacity}"/>`,
    );
  }
  const lines = wrapTitle(input.title, 18, 3);
  const fontSize = 84;
  const top = 760 - (lines.length - 1) * fontSize;
  const text = lines
    .map(
      (l, i) =>
        `<text x="72" y="${top + i * fontSize}" font-family="DejaVu Sans, sans-serif" font-weight="bold" font-size="${fontSize}" fill="#ffffff">${escapeXml(l)}</text>`,
    )
    .join('');
  const tags = escapeXml(input.tags.slice(0, 60));
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" width="${COVER_SIZE}" height="${COVER_SIZE}">` +
    `<defs><linearGradient id="g" gradientTransform="rotate(${angle} 0.5 0.5)">` +
    `<stop offset="0" stop-color="hsl(${hue},60%,28%)"/><stop offset="1" stop-color="hsl(${hue2},70%,48%)"/></linearGradient></defs>` +
    `<rect width="100%" height="100%" fill="url(#g)"/>${shapes.join('')}` +
    `<rect x="0" y="${top - fontSize - 40}" width="${COVER_SIZE}" height="${COVER_SIZE}" fill="#000" fill-opacity="0.35"/>` +
    `${text}<text x="72" y="${top + lines.length * fontSize}" font-family="DejaVu Sans, sans-serif" font-size="34" fill="#ffffffcc">${tags}</text></svg>`
  );
}

/** Writes the cover JPEG; returns its path. */
export async function writeCover(input: CoverInput, outputPath: string): Promise<string> {
  await sharp(Buffer.from(coverSvg(input)))
    .resize(COVER_SIZE, COVER_SIZE)
    .jpeg({ quality: 88, mozjpeg: false })
    .toFile(outputPath);
  return outputPath;
}

/** A provider's cover, re-encoded as JPEG so that only a decodable image is ever served. */
export async function normaliseCover(imagePath: string, outputPath: string): Promise<string> {
  await sharp(imagePath, { limitInputPixels: 64 * 1024 * 1024 })
    .rotate()
    .jpeg({ quality: 90 })
    .toFile(outputPath);
  return outputPath;
}
