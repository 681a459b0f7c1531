/**
 * The title's font: a file drawtext can open. fontconfig is asked first (`fc-match`, from the
 * fontconfig package), for DejaVu Sans Bold (Debian's fonts-dejavu-core); without fontconfig, the
 * usual Debian path is tried. Latin, Greek and Cyrillic titles draw fully; a script the font lacks
 * draws as empty boxes (docs/music-video.md, "Readiness").
 */
import { access, constants } from 'node:fs/promises';
import { findOnPath, runProcess } from '../../../media/index.js';

export const FONT_PATTERN = 'DejaVu Sans:style=Bold';
export const DEBIAN_FONT_FILE = '/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf';
/** What readiness names when no font is found. */
export const FONT_NEED = 'a TrueType font for the title (Debian: apt-get install fonts-dejavu-core fontconfig)';

/** A readable file named as a font (drawtext would silently fall back to another for anything else). */
async function readable(file: string): Promise<boolean> {
  if (!/\.(ttf|otf|ttc)$/i.test(file)) return false;
  return access(file, constants.R_OK).then(
    () => true,
    () => false,
  );
}

/** A readable font file, or undefined. `explicit` (an operator's choice) is the only candidate when given. */
export async function findFontFile(explicit?: string): Promise<string | undefined> {
  if (explicit !== undefined) return (await readable(explicit)) ? explicit : undefined;
  const fcMatch = findOnPath('fc-match');
  if (fcMatch !== undefined) {
    const found = await runProcess(fcMatch, ['--format=%{file}', FONT_PATTERN], { timeoutMs: 10_000 }).then(
      (r) => r.stdout.toString('utf8').trim(),
      () => '',
    );
    // fontconfig answers with its nearest font when the one asked for is missing: any scalable font will do.
    if (await readable(found)) return found;
  }
  return (await readable(DEBIAN_FONT_FILE)) ? DEBIAN_FONT_FILE : undefined;
}
