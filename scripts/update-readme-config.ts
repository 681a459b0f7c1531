/**
 * Rewrites the configuration table in README.md from src/config.ts, so the docs cannot drift from
 * the code (test/docs.test.ts fails when they differ). Run: npm run docs:config
 */
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { allSettingsReference } from '../src/config.js';
import { PACKAGE_ROOT } from '../src/paths.js';

export const START = '<!-- config-reference:start -->';
export const END = '<!-- config-reference:end -->';

export function withConfigReference(readme: string, table: string): string {
  const start = readme.indexOf(START);
  const end = readme.indexOf(END);
  if (start < 0 || end < start) throw new Error(`Expected README.md to contain ${START} … ${END}`);
  return `${readme.slice(0, start + START.length)}\n${table}\n${readme.slice(end)}`;
}

if (process.argv[1] !== undefined && import.meta.url.endsWith(path.basename(process.argv[1]))) {
  const file = path.join(PACKAGE_ROOT, 'README.md');
  await writeFile(file, withConfigReference(await readFile(file, 'utf8'), allSettingsReference()));
  process.stdout.write(`updated ${file}\n`);
}
