/**
 * Local ESLint plugin with one rule, `cycles/no-cycle`: no import cycle, `import type` included
 * (docs/layers.md, "Cycles").
 *
 * import-x/no-cycle (eslint.config.js keeps it on) skips every `import type` and every import whose
 * names are all `type`, by design and without an option to do otherwise ("type-only imports ...
 * have no runtime effect"), so a cycle with one such edge in it passes it: all six cycles of issue
 * 47 did. Here they count: a module that names another's types cannot be read, moved or tested
 * without it, and the edge turns into a runtime one the day a value crosses it.
 *
 * Every relative import counts: `import`, `import type`, `export ... from`, `import()` calls and
 * `import('...')` types, `import x = require(...)`. The linted file's own imports are read from its
 * AST (so that in-memory code is checked as it stands); the files they lead to are read from disk
 * with TypeScript's pre-processor (`ts.preProcessFile`, which lists every import of a file without
 * type-checking it), remembered until their size or modification time changes. Specifiers resolve
 * as the sources write them (NodeNext): './x.js' is './x.ts'.
 */
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const rule = {
  meta: {
    type: 'problem',
    docs: { description: 'No import cycle, through type-only imports too (docs/layers.md, "Cycles")' },
    schema: [],
    messages: {
      cycle:
        'Import cycle: {{cycle}}. Type-only imports count (docs/layers.md, "Cycles"): move the shared names down to a module both can import, or hand the value in',
    },
  },
  create(context) {
    const file = path.resolve(context.physicalFilename ?? context.filename);
    const cwd = context.cwd ?? process.cwd();
    /** Files already seen to have no way back to `file` (the closure of a search that did not find it). */
    const dead = new Set();

    function check(node, specifier) {
      if (typeof specifier !== 'string' || !specifier.startsWith('.')) return;
      const target = resolveImport(file, specifier);
      if (target === undefined) return;
      const route = routeBack(target, file, dead);
      if (route === undefined) return;
      const cycle = [file, ...route].map((f) => toPosix(path.relative(cwd, f))).join(' → ');
      context.report({ node, messageId: 'cycle', data: { cycle } });
    }

    const literal = (source) => (source?.type === 'Literal' ? source.value : undefined);
    return {
      ImportDeclaration: (node) => check(node.source, literal(node.source)),
      ExportNamedDeclaration: (node) => check(node.source, literal(node.source)),
      ExportAllDeclaration: (node) => check(node.source, literal(node.source)),
      ImportExpression: (node) => check(node.source, literal(node.source)),
      // `typeof import('./x.js')` and `import('./x.js').Name` in a type.
      TSImportType: (node) =>
        check(
          node,
          literal(node.source ?? (node.argument?.type === 'TSLiteralType' ? node.argument.literal : undefined)),
        ),
      TSExternalModuleReference: (node) => check(node.expression, literal(node.expression)),
    };
  },
};

/**
 * The shortest chain of imports from `start` back to `goal` (ending with `goal`), or undefined.
 * A search that fails marks everything it reached in `dead`: none of it leads to `goal`.
 */
function routeBack(start, goal, dead) {
  if (start === goal) return [goal];
  if (dead.has(start)) return undefined;
  const cameFrom = new Map([[start, undefined]]);
  const queue = [start];
  for (let i = 0; i < queue.length; i++) {
    const at = queue[i];
    for (const next of importsOf(at)) {
      if (next === goal) {
        const route = [goal];
        for (let step = at; step !== undefined; step = cameFrom.get(step)) route.unshift(step);
        return route;
      }
      if (cameFrom.has(next) || dead.has(next)) continue;
      cameFrom.set(next, at);
      queue.push(next);
    }
  }
  for (const reached of queue) dead.add(reached);
  return undefined;
}

/** A file's relative imports, resolved to files; remembered until the file's size or modification time changes. */
const known = new Map();

function importsOf(file) {
  let stat;
  try {
    stat = fs.statSync(file);
  } catch {
    return [];
  }
  const stamp = `${stat.size}:${stat.mtimeMs}`;
  const seen = known.get(file);
  if (seen?.stamp === stamp) return seen.imports;
  const { importedFiles } = ts.preProcessFile(fs.readFileSync(file, 'utf8'), true, true);
  const imports = [
    ...new Set(
      importedFiles
        .map((f) => f.fileName)
        .filter((s) => s.startsWith('.'))
        .flatMap((s) => resolveImport(file, s) ?? []),
    ),
  ];
  known.set(file, { stamp, imports });
  return imports;
}

/** The file a relative specifier names: './x.js' is './x.ts' when that exists (NodeNext), a folder its index. */
function resolveImport(from, specifier) {
  const base = path.resolve(path.dirname(from), specifier);
  const candidates = /\.[cm]?js$/.test(base)
    ? [base.replace(/js$/, 'ts'), base.replace(/\.([cm]?)js$/, '.$1tsx'), base]
    : [base, `${base}.ts`, `${base}.tsx`, `${base}.js`, path.join(base, 'index.ts'), path.join(base, 'index.js')];
  return candidates.find(isFile);
}

function isFile(file) {
  try {
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

function toPosix(file) {
  return file.split(path.sep).join('/');
}

export default { meta: { name: 'cycles' }, rules: { 'no-cycle': rule } };
