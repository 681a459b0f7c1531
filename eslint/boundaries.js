/**
 * Local ESLint plugin that keeps the folder boundaries of src/ (docs/architecture.md, "Boundaries";
 * the layers are the table in docs/layers.md, which eslint/layers.js reads).
 * One rule, `boundaries/imports`, checks every relative import that lands in another area of src/:
 * a top-level folder, or one of the files at src/'s top (config.ts, errors.ts, ...), which are
 * areas of their own and have their layers like the folders:
 *   - through the index: a file outside src/B/ imports src/B/index.ts (or another entry the
 *     config names: settings.ts, a folder's pure settings for src/config.ts), never a file behind
 *     it (a test under test/B/ or test/scenarios/B/ may reach into src/B/, whose internals it tests);
 *   - direction: an area of src/ imports only areas of lower layers; areas of one layer
 *     (the pipelines, say) never import each other. Every area has a layer.
 *   - the job kinds: src/kinds/<kind>/ holds one kind's parts (contract/, settings.ts, pipeline/,
 *     runtime.ts, command.ts), each placed in a layer by the table as `kinds/*\/<part>`; a part in a
 *     layer of one other room belongs to that room (`joins`: a kind's contract is part of jobs/), else it
 *     is a room of its own. A kind never imports another kind; a kind's parts import each other freely
 *     (downwards), and from outside a kind a part is entered through its index.ts or is a file of its own.
 * Paths come from the import specifier alone, without a resolver, so the rule also works on
 * in-memory code at virtual paths (test/lint-boundaries.test.ts).
 */
import path from 'node:path';

const rule = {
  meta: {
    type: 'problem',
    docs: {
      description: 'Other folders of src/ are entered through their index.ts, and imports point down the layers',
    },
    schema: [
      {
        type: 'object',
        properties: {
          root: { type: 'string' },
          layers: { type: 'array', items: { type: 'array', items: { type: 'string' } } },
          entries: { type: 'array', items: { type: 'string' } },
          withoutIndex: { type: 'array', items: { type: 'string' } },
          joins: { type: 'object', additionalProperties: { type: 'string' } },
        },
        required: ['root', 'layers'],
        additionalProperties: false,
      },
    ],
    messages: {
      throughIndex: '{{from}} imports {{target}}: enter src/{{to}}/ through {{entries}}',
      direction: '{{from}} must not import {{to}} ({{target}}): imports point down the layers {{order}}',
      unlisted: '{{area}} is in no layer of the boundaries rule: give it one in eslint.config.js',
      sideways: '{{from}} imports {{target}}: one job kind never imports another (src/kinds/{{kind}}/)',
    },
  },
  create(context) {
    const { root, layers, entries = ['index.ts'], withoutIndex = [], joins = {} } = context.options[0];
    const layerOf = new Map(layers.flatMap((names, rank) => names.map((name) => [name, rank])));
    const order = layers
      .map((names) => names.join('|'))
      .reverse()
      .join(' > ');
    const importer = areaOf(toPosix(path.relative(root, context.filename)), joins);

    function check(sourceNode) {
      const specifier = sourceNode?.type === 'Literal' ? sourceNode.value : undefined;
      if (importer === undefined || typeof specifier !== 'string' || !specifier.startsWith('.')) return;
      const target = toPosix(path.relative(root, path.resolve(path.dirname(context.filename), specifier))).replace(
        /\.js$/,
        '.ts',
      );
      const parts = target.split('/');
      if (parts[0] !== 'src' || parts.length < 2) return; // outside src/
      const destination = areaOf(target, joins);
      const to = destination.area; // a folder, a file at src/'s top, or a kind's part
      if (importer.kind !== undefined && destination.kind !== undefined && importer.kind !== destination.kind) {
        context.report({
          node: sourceNode,
          messageId: 'sideways',
          data: { from: importer.name, target, kind: destination.kind },
        });
        return;
      }
      if (importer.area === to) return;

      if (importer.area !== undefined) {
        const fromRank = layerOf.get(importer.room);
        const toRank = layerOf.get(destination.room);
        if (fromRank === undefined || toRank === undefined) {
          const area = fromRank === undefined ? importer.room : destination.room;
          context.report({ node: sourceNode, messageId: 'unlisted', data: { area: shown(area) } });
          return;
        }
        if (toRank >= fromRank) {
          context.report({
            node: sourceNode,
            messageId: 'direction',
            data: { from: shown(importer.area), to: shown(to), target, order },
          });
          return;
        }
      }
      if (parts.length === 2) return; // a file at src/'s top is its own way in
      if (destination.kind !== undefined) {
        // A kind's parts see each other; from outside, a part that is a file is its own way in, a folder has its index.
        if (
          importer.kind === destination.kind ||
          importer.tests === `kinds/${destination.kind}` ||
          parts.length === 4 ||
          (parts.length === 5 && parts[4] === 'index.ts')
        )
          return;
        context.report({
          node: sourceNode,
          messageId: 'throughIndex',
          data: {
            from: importer.name,
            to: parts.slice(1, 4).join('/'),
            target,
            entries: `src/${parts.slice(1, 4).join('/')}/index.ts`,
          },
        });
        return;
      }
      // An entry is a file name every folder may offer (index.ts) or one folder's file ('inference/tile-plan.ts').
      const isEntry = (parts.length === 3 && entries.includes(parts[2])) || entries.includes(parts.slice(1).join('/'));
      if (!isEntry && !withoutIndex.includes(to) && importer.tests !== to) {
        const names = entries.flatMap((entry) => (entry.includes('/') ? [] : [`src/${to}/${entry}`])).join(' or ');
        context.report({
          node: sourceNode,
          messageId: 'throughIndex',
          data: { from: importer.name, to, target, entries: names },
        });
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
 * Where a file sits: `name` is how messages call its area (`src/worker`, `src/config.ts`,
 * `scripts`, `test`), `area` the src/ folder or top-level file it belongs to (or the room a kind's
 * part joins), `room` the table's name for its place (`worker`, `kinds/*\/pipeline`), `kind` the job
 * kind whose folder holds it, `tests` the src/ folder a test under test/B/ tests. Undefined for files
 * the rule does not govern.
 */
function areaOf(file, joins) {
  const parts = file.split('/');
  if (parts[0] === 'src' && parts[1] === 'kinds' && parts.length > 3) {
    const room = `kinds/*/${parts[3]}`;
    const area = joins[room] ?? `kinds/${parts[2]}/${parts[3]}`;
    return { name: `src/kinds/${parts[2]}/${parts[3]}`, area, room, kind: parts[2] };
  }
  if (parts[0] === 'src' && parts.length > 1) return { name: `src/${parts[1]}`, area: parts[1], room: parts[1] };
  if (parts[0] === 'test') {
    // A multi-process scenario under test/scenarios/B/ drives src/B/ as a test under test/B/ does.
    if (parts[1] === 'scenarios') parts.splice(1, 1);
    const tests =
      parts[1] === 'kinds' && parts.length > 3 ? `kinds/${parts[2]}` : parts.length > 2 ? parts[1] : undefined;
    return { name: 'test', tests };
  }
  if (parts[0] === 'scripts' || parts[0] === 'bench') return { name: parts[0] };
  return undefined;
}

/** An area as messages show it: `src/worker/` for a folder, `src/config.ts` for a file. */
function shown(area) {
  return (area.endsWith('.ts') ? `src/${area}` : `src/${area}/`).replace('/*/', '/<kind>/');
}

function toPosix(file) {
  return file.split(path.sep).join('/');
}

export default { meta: { name: 'boundaries' }, rules: { imports: rule } };
