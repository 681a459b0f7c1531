/**
 * ESLint for src/, scripts/, test/ and bench/: typescript-eslint's recommended
 * rules, no import cycles (type-only imports included: eslint/cycles.js), one logging style, and the
 * folder boundaries of src/ (eslint/boundaries.js), whose layers are the table in docs/layers.md
 * (eslint/layers.js reads it).
 */
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'eslint/config';
import { createNodeResolver, importX } from 'eslint-plugin-import-x';
import tseslint from 'typescript-eslint';
import boundaries from './eslint/boundaries.js';
import cycles from './eslint/cycles.js';
import { joinsOf, repositoryLayers } from './eslint/layers.js';

const ROOT = fileURLToPath(new URL('.', import.meta.url));

const LAYERS = repositoryLayers(ROOT);

const TS_FILES = ['src/**/*.ts', 'scripts/**/*.ts', 'test/**/*.ts', 'bench/**/*.ts', '*.ts'];

/** The wire's imports, refused below the protocol. */
const WIRE = [
  { group: ['@nats-io/*'], message: 'only protocol/, worker/, gateway/ and the command line talk to NATS' },
  {
    group: ['**/protocol/*'],
    message: 'the wire protocol is for worker/ and gateway/; the pipelines and the application layer never see it',
  },
];

export default defineConfig(
  { ignores: ['dist/', 'node_modules/', 'models/', 'coverage/'] },
  { files: TS_FILES, extends: [tseslint.configs.recommended] },
  {
    files: TS_FILES,
    plugins: { 'import-x': importX, cycles },
    settings: {
      'import-x/extensions': ['.ts', '.js'],
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts'] },
      // Sources import each other as './x.js' (NodeNext); the files are './x.ts'.
      'import-x/resolver-next': [
        createNodeResolver({ extensions: ['.ts', '.js', '.json'], extensionAlias: { '.js': ['.ts', '.js'] } }),
      ],
    },
    rules: {
      // import-x's rule finds runtime cycles and names the route; it skips every `import type` by
      // design, so cycles/no-cycle (eslint/cycles.js) counts those too (docs/layers.md, "Cycles").
      'import-x/no-cycle': 'error',
      'cycles/no-cycle': 'error',
      // A leading underscore marks a binding kept unused on purpose; rest siblings drop fields from a copy.
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
    },
  },
  {
    // One logging style: pino's log.level({ ...fields }, 'message'), an error under `err` for pino's serializer.
    files: ['src/**/*.ts'],
    rules: {
      'no-restricted-syntax': ['error', ...restrictedLogging()],
    },
  },
  {
    // "Nothing below the protocol knows NATS exists" (docs/architecture.md "Boundaries"); the
    // application layer joins the worker to the pipelines without touching NATS either.
    files: ['src/{logging,media,video,inference,jobs,kinds,app}/**/*.ts', 'src/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: WIRE }] },
  },
  {
    // The kinds' shape inside jobs/ and app/ (docs/layers.md, "The job kinds"): the generic modules are
    // handed the kinds, they never import a kind's folder (src/kinds/) or the registry.
    // The patterns of a file replace the block's above, so the wire's come along.
    files: ['src/jobs/*.ts', 'src/app/*.ts'],
    ignores: [
      'src/jobs/{index,kinds,models,schemas,quote,failures,wire-schemas}.ts',
      'src/app/{index,kinds,daemon,with-kinds}.ts',
    ],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            ...WIRE,
            {
              group: ['./kinds.js', '../kinds/**'],
              message:
                'a generic module names no kind: the kinds and their registry are handed in as a value (docs/layers.md, "The job kinds")',
            },
          ],
        },
      ],
    },
  },
  {
    files: TS_FILES,
    plugins: { boundaries },
    rules: {
      'boundaries/imports': [
        'error',
        {
          root: ROOT,
          // Lowest first: an area imports only areas of lower layers, never one of its own layer.
          // The table of docs/layers.md is the one list, with why each area sits where it does: it is
          // read here, and a table that does not parse, or does not place every room of src/, fails.
          layers: LAYERS,
          // A kind's contract, runtime half and command join jobs/, app/ and cli/ (eslint/layers.js, joinsOf).
          joins: joinsOf(LAYERS),
          // A folder's pure settings (constants and parsers, no runtime imports) are its second way in,
          // so that src/config.ts reads every setting without loading ONNX Runtime or sharp.
          // The tile plan is pure geometry that the contract prices with (jobs/cost-model.ts): the
          // gateway quotes without loading ONNX Runtime. The format names (media/describe.ts) are a
          // plain table that the contract's messages read without loading sharp, and the Dolby Vision
          // rule (media/dolby-vision.ts) a pure check the contract's input checks run.
          entries: [
            'index.ts',
            'settings.ts',
            'inference/tile-plan.ts',
            'media/describe.ts',
            'media/dolby-vision.ts',
            'media/ffmpeg-light.ts',
          ],
          // src/cli.ts installs its signal handlers before it loads the program (cli/startup-signals.ts):
          // a barrel would load every command first.
          withoutIndex: ['cli'],
        },
      ],
    },
  },
);

/** Logger calls that break the one logging style, each with what to write instead. */
function restrictedLogging() {
  const call =
    "CallExpression[callee.property.name=/^(trace|debug|info|warn|error|fatal)$/][callee.object.name!='console']";
  const fields = `${call} > ObjectExpression.arguments:first-child`;
  return [
    {
      selector: `${fields} > Property[key.name=/^(e|error)$/]`,
      message: 'Log an error under `err`: log.warn({ err }, ...)',
    },
    {
      selector: `${fields} > Property[key.name='err'] > MemberExpression.value[property.name='message']`,
      message: 'Log the error itself under `err` (pino serializes it), not its message',
    },
    {
      selector: `${call} > MemberExpression.arguments[property.name='message']`,
      message: "Log an error as log.warn({ err }, 'what failed'), not as the message",
    },
    {
      selector: `${call} > Identifier.arguments:first-child[name=/^(e|err|error)$/]`,
      message: "Log an error as log.warn({ err }, 'what failed'), not as the message",
    },
  ];
}
