/**
 * Local ESLint plugin that keeps the folder boundaries of src/ (README, "Boundaries").
 * One rule, `boundaries/imports`, checks every relative import that lands in another top-level
 * folder of src/:
 *   - through the index: a file outside src/B/ imports src/B/index.ts (or another entry the
 *     config names: settings.ts, a folder's pure settings for src/config.ts), never a file behind
 *     it (a test under test/B/ may reach into src/B/, whose internals it unit-tests);
 *   - direction: a folder of src/ imports only folders of lower layers; folders of one layer
 *     (the pipelines, say) never import each other.
 * Paths come from the import specifier alone, without a resolver, so the rule also works on
 * in-memory code at virtual paths (test/lint-boundaries.test.ts).
 */
import path from 'node:path';

const rule = {
  meta: {
    type: 'problem',
    docs: { description: 'Other folders of src/ are entered through their index.ts, and imports point down the layers' },
    schema: [
      {
        type: 'object',
        properties: {
          root: { type: 'string' },
          layers: { type: 'array', items: { type: 'array', items: { type: 'string' } } },
          entries: { type: 'array', items: { type: 'string' } },
          withoutIndex: { type: 'array', items: { type: 'string' } },
        },
        required: ['root', 'layers'],
        additionalProperties: false,
      },
    ],
    messages: {
      throughIndex: '{{from}} imports {{target}}: enter src/{{to}}/ through {{entries}}',
      direction: 'src/{{from}}/ must not import src/{{to}}/ ({{target}}): imports point down the layers {{order}}',
      unlisted: 'src/{{folder}}/ is in no layer of the boundaries rule: give it one in eslint.config.js',
    },
  },
  create(context) {
    const { root, layers, entries = ['index.ts'], withoutIndex = [] } = context.options[0];
    const layerOf = new Map(layers.flatMap((names, rank) => names.map((name) => [name, rank])));
    const order = layers.map((names) => names.join('|')).reverse().join(' > ');
    const importer = areaOf(toPosix(path.relative(root, context.filename)));

    function check(sourceNode) {
      const specifier = sourceNode?.type === 'Literal' ? sourceNode.value : undefined;
      if (importer === undefined || typeof specifier !== 'string' || !specifier.startsWith('.')) return;
      const target = toPosix(path.relative(root, path.resolve(path.dirname(context.filename), specifier)))
        .replace(/\.js$/, '.ts');
      const parts = target.split('/');
      if (parts[0] !== 'src' || parts.length < 3) return; // outside src/, or a file at src/'s top
      const to = parts[1];
      if (importer.folder === to) return;
      const data = { from: importer.folder ?? importer.name, to, target };

      if (importer.folder !== undefined) {
        const fromRank = layerOf.get(importer.folder);
        const toRank = layerOf.get(to);
        if (fromRank === undefined || toRank === undefined) {
          const folder = fromRank === undefined ? importer.folder : to;
          context.report({ node: sourceNode, messageId: 'unlisted', data: { folder } });
          return;
        }
        if (toRank >= fromRank) {
          context.report({ node: sourceNode, messageId: 'direction', data: { ...data, order } });
          return;
        }
      }
      // An entry is a file name every folder may offer (index.ts) or one folder's file ('inference/tile-plan.ts').
      const isEntry = (parts.length === 3 && entries.includes(parts[2])) || entries.includes(parts.slice(1).join('/'));
      if (!isEntry && !withoutIndex.includes(to) && importer.tests !== to) {
        const names = entries.flatMap((entry) => (entry.includes('/') ? [] : [`src/${to}/${entry}`])).join(' or ');
        context.report({ node: sourceNode, messageId: 'throughIndex', data: { ...data, from: importer.name, entries: names } });
      }
    }

    return {
      ImportDeclaration: (node) => check(node.source),
      ExportNamedDeclaration: (node) => check(node.source),
      ExportAllDeclaration: (node) => check(node.source),
      ImportExpression: (node) => check(node.source),
    };
  },
};

/**
 * Where a file sits: `name` is how the allow-list and messages call its area (`src/worker`, `src`
 * for src/'s top-level files, `scripts`, `test`), `folder` the src/ folder it belongs to, `tests`
 * the src/ folder a test under test/B/ tests. Undefined for files the rule does not govern.
 */
function areaOf(file) {
  const parts = file.split('/');
  if (parts[0] === 'src') {
    return parts.length > 2 ? { name: `src/${parts[1]}`, folder: parts[1] } : { name: 'src' };
  }
  if (parts[0] === 'test') return { name: 'test', tests: parts.length > 2 ? parts[1] : undefined };
  if (parts[0] === 'scripts' || parts[0] === 'bench') return { name: parts[0] };
  return undefined;
}

function toPosix(file) {
  return file.split(path.sep).join('/');
}

export default { meta: { name: 'boundaries' }, rules: { imports: rule } };
