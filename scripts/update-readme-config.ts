/**
 * Rewrites the configuration table in README.md from src/config.ts, so the docs cannot drift from
 * the code (test/docs.test.ts fails when they differ). Run: npm run docs:config
 */
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { allSettingsReference } from '../src/config.js';
import { PACKAGE_ROOT } from '../src/paths.js';
import { replaceMarkedBlock } from './marked-block.js';

export const START = '<!-- config-reference:start -->';
export const END = '<!-- config-reference:end -->';

export function withConfigReference(readme: string, table: string): string {
  return replaceMarkedBlock(readme, START, END, table, 'README.md');
}

if (process.argv[1] !== undefined && import.meta.url.endsWith(path.basename(process.argv[1]))) {
  const file = path.join(PACKAGE_ROOT, 'README.md');
  await writeFile(file, withConfigReference(await readFile(file, 'utf8'), allSettingsReference()));
  process.stdout.write(`updated ${file}\n`);
}
