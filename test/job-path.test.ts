/**
 * docs/architecture.md, "A job's path", stays true: every step names a file that exists and
 * defines what the step names, and every file is reached from a step above it: the same file, a
 * file that imports it, or one that imports its folder's index.ts, which re-exports it.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PACKAGE_ROOT } from '../src/paths.js';

interface Step {
  file: string;
  name: string;
}

/** The steps of the section's code block: `<file>  <name>()  <what happens>`. */
function stepsOf(doc: string): Step[] {
  const section = doc.split(/^## A job's path$/m)[1]?.split(/^## /m)[0] ?? '';
  const block = section.split('```')[1] ?? '';
  return block
    .split('\n')
    .map((line) => /^(src\/\S+\.ts)\s+(\w+)\(\)(?:\s|$)/.exec(line))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ file: m[1]!, name: m[2]! }));
}

const sources = new Map<string, Promise<string>>();
function source(file: string): Promise<string> {
  let text = sources.get(file);
  if (text === undefined) {
    text = readFile(path.join(PACKAGE_ROOT, file), 'utf8');
    sources.set(file, text);
  }
  return text;
}

/** Repository paths of the relative modules `file` imports or re-exports (`./x.js` read as `./x.ts`). */
async function importsOf(file: string): Promise<string[]> {
  const text = await source(file);
  const specifiers = [...text.matchAll(/(?:from|import\()\s*'(\.[^']+)'/g)].map((m) => m[1]!);
  return specifiers.map((s) => path.posix.join(path.posix.dirname(file), s).replace(/\.js$/, '.ts'));
}

/** Whether `from` imports `to` itself, or the index.ts of `to`'s folder (or a parent's) that re-exports it. */
async function reaches(from: string, to: string): Promise<boolean> {
  for (const target of await importsOf(from)) {
    if (target === to) return true;
    if (
      path.posix.basename(target) === 'index.ts' &&
      to.startsWith(path.posix.dirname(target) + '/') &&
      (await reaches(target, to))
    )
      return true;
  }
  return false;
}

function defines(text: string, name: string): boolean {
  return new RegExp(`(?:function\\*?|const|class)\\s+${name}\\b|^\\s+(?:async\\s+)?${name}\\(`, 'm').test(text);
}

describe('docs/architecture.md, "A job\'s path"', () => {
  it('names files that exist, define the named step and are reached from a step above', async () => {
    const steps = stepsOf(await readFile(path.join(PACKAGE_ROOT, 'docs', 'architecture.md'), 'utf8'));
    expect(steps.length).toBeGreaterThanOrEqual(10);
    expect(steps[0]!.file).toBe('src/cli/commands/serve.ts');
    for (const [i, step] of steps.entries()) {
      expect(defines(await source(step.file), step.name), `${step.file} defines ${step.name}`).toBe(true);
      if (i === 0) continue;
      const above = steps.slice(0, i).map((s) => s.file);
      const reached =
        above.includes(step.file) || (await Promise.all(above.map((file) => reaches(file, step.file)))).some(Boolean);
      expect(reached, `${step.file} is imported by a step above it`).toBe(true);
    }
  });

  it('would notice a step that nothing above reaches', async () => {
    const doc = "## A job's path\n\n```\nsrc/cli/commands/serve.ts  serve()  x\nsrc/media/sniff.ts  sniff()  y\n```\n";
    const [first, second] = stepsOf(doc);
    expect(first).toEqual({ file: 'src/cli/commands/serve.ts', name: 'serve' });
    expect(await reaches(first!.file, second!.file)).toBe(false);
  });
});
