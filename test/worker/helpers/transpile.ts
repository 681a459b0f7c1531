/**
 * Node before 22.18 cannot run TypeScript (and never the project's `.js` import specifiers), and vitest only transforms what runs inside it; a worker in a
 * child process needs plain JavaScript. This transpiles an entry file and every relative module it
 * reaches (with TypeScript's own transpiler, no type check, so a colleague's half-edited file
 * elsewhere in the tree cannot break these tests) into a temp directory that mirrors the repo, with
 * `node_modules` linked back. Faster and more robust than a full `tsc` build.
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

export interface TranspiledEntry {
  /** Absolute path of the entry's .js file. */
  entry: string;
  dir: string;
  cleanup(): Promise<void>;
}

export async function transpileForNode(entryTs: string): Promise<TranspiledEntry> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'media-worker-fixture-'));
  await fs.writeFile(path.join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
  await fs.symlink(path.join(REPO_ROOT, 'node_modules'), path.join(dir, 'node_modules'), 'dir');

  const seen = new Set<string>();
  const queue = [path.resolve(entryTs)];
  while (queue.length > 0) {
    const file = queue.pop() as string;
    if (seen.has(file)) continue;
    seen.add(file);
    const rel = path.relative(REPO_ROOT, file);
    const out = path.join(dir, rel);
    await fs.mkdir(path.dirname(out), { recursive: true });
    if (file.endsWith('.json')) {
      await fs.copyFile(file, out);
      continue;
    }
    const source = await fs.readFile(file, 'utf8');
    const { outputText } = ts.transpileModule(source, {
      fileName: file,
      compilerOptions: {
        module: ts.ModuleKind.ESNext,
        target: ts.ScriptTarget.ES2022,
        sourceMap: false,
        verbatimModuleSyntax: false,
      },
    });
    await fs.writeFile(out.replace(/\.ts$/, '.js'), outputText);
    for (const ref of ts.preProcessFile(source, true, true).importedFiles) {
      if (!ref.fileName.startsWith('.')) continue;
      const target = path.resolve(path.dirname(file), ref.fileName);
      queue.push(target.endsWith('.js') ? target.replace(/\.js$/, '.ts') : target);
    }
  }
  return {
    entry: path.join(dir, path.relative(REPO_ROOT, entryTs)).replace(/\.ts$/, '.js'),
    dir,
    cleanup: () => fs.rm(dir, { recursive: true, force: true }),
  };
}
