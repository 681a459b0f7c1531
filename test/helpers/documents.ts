/** The project's documents: README.md and every docs/*.md, as paths from the package root, sorted. */
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { PACKAGE_ROOT } from '../../src/paths.js';

export async function documents(): Promise<string[]> {
  const docs = (await readdir(path.join(PACKAGE_ROOT, 'docs'))).filter((f) => f.endsWith('.md')).sort();
  return ['README.md', ...docs.map((f) => `docs/${f}`)];
}
