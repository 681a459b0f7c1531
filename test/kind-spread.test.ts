/**
 * The spread of a kind (issue 37, docs/architecture.md "The spread"): source files under src/
 * whose path does not name the kind but whose text does. Each kind's knowledge lives in its own
 * rooms (src/jobs/kinds/<kind>/, src/<kind>/, src/app/kinds/<kind>.ts, src/cli/commands/<kind>.ts)
 * and a few registry lines; a kind named in more than ten other files is spreading again. The rule
 * is the documented commands', e.g. for lip-sync:
 *   grep -rliE 'lip-?sync' src --include=*.ts | grep -viE 'lip-?sync' | wc -l
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PACKAGE_ROOT } from '../src/paths.js';

/** At most this many files outside a kind's rooms name it. */
const BOUND = 10;

/** Each kind as the commands spell it: what its path and its text are searched for (case-insensitive). */
const KINDS: readonly { kind: string; pattern: RegExp }[] = [
  { kind: 'lip-sync', pattern: /lip-?sync/i },
  { kind: 'music', pattern: /music/i },
  // Its constants are spelled MUSIC_VIDEO_..., which `music-?video` alone does not match.
  { kind: 'music-video', pattern: /music-?video|music_video/i },
];

interface SourceFile {
  /** Relative to the project root, with `/`: `src/jobs/pricing.ts`. */
  path: string;
  text: string;
}

/** Every src/**\/*.ts file, as grep --include=*.ts reads them. */
async function sourceFiles(): Promise<SourceFile[]> {
  const entries = await readdir(path.join(PACKAGE_ROOT, 'src'), { recursive: true, withFileTypes: true });
  const files = entries.filter((e) => e.isFile() && e.name.endsWith('.ts')).map((e) => path.join(e.parentPath, e.name));
  return Promise.all(
    files.map(async (file) => ({
      path: path.relative(PACKAGE_ROOT, file).split(path.sep).join('/'),
      text: await readFile(file, 'utf8'),
    })),
  );
}

/** The files whose path does not name the kind but whose text does, sorted. */
export function spreadOf(files: readonly SourceFile[], pattern: RegExp): string[] {
  return files
    .filter((f) => !pattern.test(f.path) && pattern.test(f.text))
    .map((f) => f.path)
    .sort();
}

describe('the spread of each kind (issue 37)', () => {
  it('counts as the commands do: the path outside the kind, the text naming it', () => {
    const files = [
      { path: 'src/kinds/lipsync/contract/cost.ts', text: 'lip-sync' },
      { path: 'src/jobs/pricing.ts', text: 'LIPSYNC_RATES' },
      { path: 'src/jobs/work-limits.ts', text: 'video limits' },
      { path: 'src/errors.ts', text: 'MUSIC_VIDEO_FAILED, Lip-Sync' },
    ];
    expect(spreadOf(files, KINDS[0]!.pattern)).toEqual(['src/errors.ts', 'src/jobs/pricing.ts']);
    expect(spreadOf(files, KINDS[2]!.pattern)).toEqual(['src/errors.ts']);
  });

  it.each(KINDS)(`$kind: at most ${BOUND} files outside its rooms name it`, async ({ kind, pattern }) => {
    const files = await sourceFiles();
    // The walk found the sources (a wrong root would pass with nothing).
    expect(files.length).toBeGreaterThan(100);
    const spread = spreadOf(files, pattern);
    expect(
      spread.length,
      `${kind} is named in ${spread.length} files outside its rooms:\n  ${spread.join('\n  ')}`,
    ).toBeLessThanOrEqual(BOUND);
  });
});
