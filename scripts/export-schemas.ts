/**
 * Writes the JSON Schemas of the worker protocol (src/worker/wire-schemas.ts) to docs/schemas/,
 * one file per message, so that a control plane in any language can validate what it sends and
 * receives; test/worker/wire-schemas.test.ts fails when the committed files differ from the code.
 * Run: npm run schemas:export
 */
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { PACKAGE_ROOT } from '../src/paths.js';
import { wireJsonSchemas } from '../src/protocol/index.js';

export const SCHEMAS_DIR = path.join(PACKAGE_ROOT, 'docs', 'schemas');

/** The committed text of one schema file. */
export function schemaFileText(schema: unknown): string {
  return `${JSON.stringify(schema, null, 2)}\n`;
}

async function main(): Promise<void> {
  if (process.argv.includes('--help') || process.argv.includes('-h')) {
    process.stdout.write(
      'Usage: npm run schemas:export\nWrites docs/schemas/<message>.schema.json from the zod schemas of the protocol.\n',
    );
    return;
  }
  await mkdir(SCHEMAS_DIR, { recursive: true });
  const schemas = wireJsonSchemas();
  // Files of messages that no longer exist go too.
  for (const name of await readdir(SCHEMAS_DIR))
    if (name.endsWith('.schema.json') && !(name in schemas)) await rm(path.join(SCHEMAS_DIR, name));
  for (const [name, schema] of Object.entries(schemas))
    await writeFile(path.join(SCHEMAS_DIR, name), schemaFileText(schema));
  process.stdout.write(`wrote ${Object.keys(schemas).length} schemas to ${SCHEMAS_DIR}\n`);
}

if (process.argv[1] !== undefined && import.meta.url.endsWith(path.basename(process.argv[1]))) await main();
