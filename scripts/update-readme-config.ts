/**
 * Rewrites the settings reference in docs/configuration.md from the settings tables (src/config.ts
 * lists them), so the docs cannot drift from the code (test/docs.test.ts fails when they differ).
 * Run: npm run docs:config (the file keeps its old name, which package.json's script runs).
 */
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { allSettingsReference } from '../src/config.js';
import { PACKAGE_ROOT } from '../src/paths.js';
import { replaceMarkedBlock } from './marked-block.js';

/** The document that carries the settings reference, relative to the package root. */
export const CONFIG_DOC = 'docs/configuration.md';
export const START = '<!-- config-reference:start -->';
export const END = '<!-- config-reference:end -->';

export function withConfigReference(doc: string, table: string): string {
  return replaceMarkedBlock(doc, START, END, table, CONFIG_DOC);
}

if (process.argv[1] !== undefined && import.meta.url.endsWith(path.basename(process.argv[1]))) {
  const file = path.join(PACKAGE_ROOT, CONFIG_DOC);
  await writeFile(file, withConfigReference(await readFile(file, 'utf8'), allSettingsReference()));
  process.stdout.write(`updated ${CONFIG_DOC}\n`);
}
