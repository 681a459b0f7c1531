/**
 * Where things go on the frame, per aspect ratio: one column, the cover in a square box near the
 * top, the title under it, the visualiser band under the title. Pure geometry in whole, even pixels
 * (yuv420p halves the chroma planes, so odd offsets would smear an edge).
 *
 * The cover is fitted into its box without stretching (scaled until its longer side meets the box,
 * centred in it); the whole frame behind it is the same cover scaled to fill, blurred and darkened,
 * so a cover of any shape leaves no black bars (docs/music-video.md, "Output").
 */
import { MUSIC_VIDEO_SIZES, type MusicVideoAspectRatio } from '../../../jobs/index.js';

export interface Box {
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface MusicVideoLayout {
  width: number;
  height: number;
  /** The square the cover is fitted into. */
  cover: Box;
  /** Where the title's lines are centred: the top of the first line, the widest and tallest they may be. */
  title: { y: number; maxWidth: number; maxHeight: number; fontSize: number };
  /** The visualiser band. */
  visualiser: Box;
}

/** Fractions of the frame, by aspect ratio: cover side, cover top, title top, band top, band height. */
const PROPORTIONS: Readonly<
  Record<
    MusicVideoAspectRatio,
    { cover: number; coverTop: number; titleTop: number; bandTop: number; bandHeight: number; fontSize: number }
  >
> = {
  // 1920x1080: a 580 px cover from 60 to 640, the title from 676, the band from 820 to 1020.
  '16:9': { cover: 0.537, coverTop: 0.0556, titleTop: 0.625, bandTop: 0.7593, bandHeight: 0.1852, fontSize: 0.0556 },
  // 1080x1080: a 540 px cover from 60 to 600, the title from 636, the band from 820 to 1020.
  '1:1': { cover: 0.5, coverTop: 0.0556, titleTop: 0.5889, bandTop: 0.7593, bandHeight: 0.1852, fontSize: 0.0519 },
  // 1080x1920: a 900 px cover from 300 to 1200, the title from 1270, the band from 1460 to 1760.
  '9:16': { cover: 0.4688, coverTop: 0.1563, titleTop: 0.6615, bandTop: 0.7604, bandHeight: 0.1563, fontSize: 0.0313 },
};

const even = (n: number): number => 2 * Math.round(n / 2);

export function layoutFor(aspect: MusicVideoAspectRatio): MusicVideoLayout {
  const { width, height } = MUSIC_VIDEO_SIZES[aspect];
  const p = PROPORTIONS[aspect];
  const side = even(p.cover * height);
  const margin = even(width / 18);
  return {
    width,
    height,
    cover: { x: even((width - side) / 2), y: even(p.coverTop * height), width: side, height: side },
    title: {
      y: even(p.titleTop * height),
      maxWidth: width - 2 * margin,
      // Down to a gap of 2 % of the frame above the band.
      maxHeight: even((p.bandTop - p.titleTop - 0.02) * height),
      fontSize: even(p.fontSize * height),
    },
    visualiser: {
      x: margin,
      y: even(p.bandTop * height),
      width: width - 2 * margin,
      height: even(p.bandHeight * height),
    },
  };
}

/**
 * The width of a line of DejaVu Sans Bold as a share of its font size, per character: its widest
 * common glyphs (capitals, `m`, `w`) run about 0.75 em, lower case about 0.62. The fit assumes the
 * wider figure, so a title never runs off the frame; it is at worst drawn a little small.
 */
export const CHAR_WIDTH_EM = 0.72;
/** A line's height as a share of the font size (the gap between two lines of a title). */
export const LINE_HEIGHT_EM = 1.25;
/** Two lines at most: 80 characters fit in two at a size still readable on a phone. */
export const MAX_TITLE_LINES = 2;

export interface TitleLines {
  lines: string[];
  fontSize: number;
}

/**
 * The title as drawn: whitespace (new lines included) collapsed, wrapped at a word boundary into at
 * most two lines when one line would need the font smaller than 70 % of the layout's size, and the
 * font shrunk until the longest line fits `maxWidth` and the lines fit `maxHeight`.
 */
export function fitTitle(title: string, layout: MusicVideoLayout['title']): TitleLines {
  const text = title.replace(/\s+/g, ' ').trim();
  const fits = (chars: number): number => Math.floor(layout.maxWidth / (CHAR_WIDTH_EM * Math.max(1, chars)));
  const one = [text];
  const oneSize = Math.min(layout.fontSize, fits([...text].length), Math.floor(layout.maxHeight / LINE_HEIGHT_EM));
  if (oneSize >= 0.7 * layout.fontSize) return { lines: one, fontSize: Math.max(8, oneSize) };
  const lines = splitInTwo(text);
  const longest = Math.max(...lines.map((l) => [...l].length));
  const tallest = Math.floor(layout.maxHeight / (LINE_HEIGHT_EM * lines.length));
  return { lines, fontSize: Math.max(8, Math.min(layout.fontSize, fits(longest), tallest)) };
}

/** The split at the space that makes the longer half shortest; a text without one is cut in its middle. */
function splitInTwo(text: string): string[] {
  if (!text.includes(' ')) {
    const chars = [...text];
    const half = Math.ceil(chars.length / 2);
    return [chars.slice(0, half).join(''), chars.slice(half).join('')];
  }
  let best: [string, string] = [text, ''];
  let bestLongest = Number.POSITIVE_INFINITY;
  for (let i = text.indexOf(' '); i !== -1; i = text.indexOf(' ', i + 1)) {
    const a = text.slice(0, i);
    const b = text.slice(i + 1);
    const longest = Math.max([...a].length, [...b].length);
    if (longest < bestLongest) {
      best = [a, b];
      bestLongest = longest;
    }
  }
  return best.filter((line) => line !== '');
}
