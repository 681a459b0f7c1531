/**
 * Reading the settings loads no runtime: src/config.ts enters every folder through its settings.ts
 * (docs/architecture.md, "Boundaries"), so a bad setting is reported without waiting for ONNX Runtime or sharp.
 * Checked on the built modules (dist/, made by `npm test`'s build step), each in a fresh process.
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { PACKAGE_ROOT } from '../src/paths.js';

const RUNTIMES = /node_modules[\\/](onnxruntime-node|sharp)[\\/]/;

/** The native runtimes a module loads when imported on its own. */
function runtimesLoadedBy(module: string): string[] {
  const url = pathToFileURL(path.join(PACKAGE_ROOT, 'dist', 'src', module)).href;
  const script = [
    "import { createRequire } from 'node:module';",
    `await import(${JSON.stringify(url)});`,
    'console.log(JSON.stringify(Object.keys(createRequire(import.meta.url).cache)));',
  ].join('\n');
  const loaded = JSON.parse(
    execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' }),
  ) as string[];
  return [...new Set(loaded.flatMap((file) => RUNTIMES.exec(file)?.[1] ?? []))].sort();
}

describe('settings without runtimes', () => {
  it('src/config.ts loads neither onnxruntime-node nor sharp', () => {
    expect(runtimesLoadedBy('config.js')).toEqual([]);
  });

  it('while the folders behind it do (the check sees them)', () => {
    expect(runtimesLoadedBy('inference/index.js')).toContain('onnxruntime-node');
    expect(runtimesLoadedBy('media/index.js')).toContain('sharp');
  });
});
