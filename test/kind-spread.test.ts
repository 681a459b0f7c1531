/**
 * The spread of a kind (issue 37, docs/architecture.md "The spread"): source files under src/
 * whose path does not name the kind but whose text does. Each kind's knowledge lives in its own
 * folder (src/kinds/<kind>/) and a few registry lines; a kind named in more than ten other files is
 * spreading again. And the registries are the only ways in: outside a kind's folder, at most three
 * files of src/ import into it (issue 55, item 1). The rule
 * is the documented commands', e.g. for lip-sync:
 *   grep -rliE 'lip-?sync' src --include=*.ts | grep -viE 'lip-?sync' | wc -l
 * A shared setting's documentation that names the kinds it serves ("upscale and lip-sync") counts
 * too: since each setting lives in its room (issue 55, item 2), those are the shared rooms' settings files.
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
      { path: 'src/jobs/settings.ts', text: "doc: 'upscale and lip-sync'" },
    ];
    expect(spreadOf(files, KINDS[0]!.pattern)).toEqual([
      'src/errors.ts',
      'src/jobs/pricing.ts',
      'src/jobs/settings.ts',
    ]);
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

/** Relative specifiers of `text` (import, export ... from, import()), resolved against `file` (`.js` read as `.ts`). */
export function importTargets(file: string, text: string): string[] {
  const specifiers = [...text.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|^import\s+)'(\.{1,2}\/[^']+)'/gm)].map(
    (m) => m[1]!,
  );
  return specifiers.map((s) => path.posix.join(path.posix.dirname(file), s).replace(/\.js$/, '.ts'));
}

/** The files of src/ outside a kind's folder that import into it, sorted. */
export function importersOfKinds(files: readonly SourceFile[]): string[] {
  const kindOf = (p: string): string | undefined => /^src\/kinds\/([^/]+)\//.exec(p)?.[1];
  const importers = files.filter((f) =>
    importTargets(f.path, f.text).some((target) => {
      const kind = kindOf(target);
      return kind !== undefined && kind !== kindOf(f.path);
    }),
  );
  return importers.map((f) => f.path).sort();
}

describe('the ways into a kind (issue 55, item 1)', () => {
  it('finds an import into a kind from outside it, not one inside the kind', () => {
    const files = [
      { path: 'src/jobs/kinds.ts', text: "import { lipsyncKind } from '../kinds/lipsync/contract/contract.js';" },
      { path: 'src/kinds/lipsync/runtime.ts', text: "import { lipsyncFile } from './pipeline/index.js';" },
      { path: 'src/gateway/x.ts', text: "export * from '../kinds/music/contract/price.js';" },
      { path: 'src/app/x.ts', text: "const m = await import('../kinds/music/runtime.js');" },
      { path: 'src/kinds/music-video/runtime.ts', text: "import { x } from '../music/pipeline/index.js';" },
    ];
    expect(importersOfKinds(files)).toEqual([
      'src/app/x.ts',
      'src/gateway/x.ts',
      'src/jobs/kinds.ts',
      'src/kinds/music-video/runtime.ts',
    ]);
  });

  it('at most three files of src/ import into a kind from outside its folder: the registries', async () => {
    const importers = importersOfKinds(await sourceFiles());
    expect(importers).toEqual(['src/app/kinds.ts', 'src/cli/program.ts', 'src/jobs/kinds.ts']);
  });
});
