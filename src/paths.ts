/**
 * Where the installed package lives, found by walking up from this module to the first
 * package.json, so the same answer comes from src/ (tests) and dist/src/ (the built CLI).
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

function findPackageRoot(): string {
  const here = path.dirname(fileURLToPath(import.meta.url));
  let dir = here;
  while (!existsSync(path.join(dir, 'package.json'))) {
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`Expected a package.json above ${here} but found none`);
    dir = parent;
  }
  return dir;
}

export const PACKAGE_ROOT = findPackageRoot();

/** The real photos bundled with the project (README's first command, tests, benchmarks). */
export const BUNDLED_PHOTOS_DIR = path.join(PACKAGE_ROOT, 'test', 'fixtures', 'photos');
export const DEFAULT_SAMPLE_IMAGE = path.join(BUNDLED_PHOTOS_DIR, 'astronaut.png');

export const PACKAGE_VERSION = (
  JSON.parse(readFileSync(path.join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string }
).version;
