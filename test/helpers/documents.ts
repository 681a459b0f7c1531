/** The project's documents: README.md and every Markdown file under docs/ (at any depth), as paths from the package root, sorted. */
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { PACKAGE_ROOT } from '../../src/paths.js';

export async function documents(): Promise<string[]> {
  const entries = await readdir(path.join(PACKAGE_ROOT, 'docs'), { recursive: true });
  const docs = entries
    .map((f) => f.split(path.sep).join('/'))
    .filter((f) => f.endsWith('.md'))
    .sort();
  return ['README.md', ...docs.map((f) => `docs/${f}`)];
}
