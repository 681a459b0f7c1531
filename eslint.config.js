/**
 * ESLint for src/, scripts/, test/ (and bench/ should it appear): typescript-eslint's recommended
 * rules, no import cycles, one logging style, and the folder boundaries of src/ (eslint/boundaries.js;
 * README "Boundaries").
 */
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'eslint/config';
import { createNodeResolver, importX } from 'eslint-plugin-import-x';
import tseslint from 'typescript-eslint';
import boundaries from './eslint/boundaries.js';

const TS_FILES = ['src/**/*.ts', 'scripts/**/*.ts', 'test/**/*.ts', 'bench/**/*.ts', '*.ts'];

export default defineConfig(
  { ignores: ['dist/', 'node_modules/', 'models/', 'coverage/'] },
  { files: TS_FILES, extends: [tseslint.configs.recommended] },
  {
    files: TS_FILES,
    plugins: { 'import-x': importX },
    settings: {
      'import-x/extensions': ['.ts', '.js'],
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts'] },
      // Sources import each other as './x.js' (NodeNext); the files are './x.ts'.
      'import-x/resolver-next': [createNodeResolver({ extensions: ['.ts', '.js', '.json'], extensionAlias: { '.js': ['.ts', '.js'] } })],
    },
    rules: {
      'import-x/no-cycle': 'error',
      // A leading underscore marks a binding kept unused on purpose; rest siblings drop fields from a copy.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', ignoreRestSiblings: true }],
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
    // "Nothing below worker/ knows NATS exists" (README "Boundaries").
    files: ['src/{media,video,inference,jobs,upscale,lipsync,music}/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ group: ['@nats-io/*'], message: 'only worker/, gateway/ and the command line talk to NATS' }] }],
    },
  },
  {
    files: TS_FILES,
    plugins: { boundaries },
    rules: {
      'boundaries/imports': [
        'error',
        {
          root: fileURLToPath(new URL('.', import.meta.url)),
          // Lowest first: a folder imports only folders of lower layers, never one of its own layer.
          layers: [['media'], ['video', 'inference'], ['jobs'], ['upscale', 'lipsync', 'music'], ['worker'], ['gateway'], ['cli']],
          // No index.ts yet: lipsync/ is being regrouped into sub-folders and SR model loading is moving
          // from upscale/ to inference/; their barrels come after those moves. cli/ and music/ get theirs
          // when they are next reshaped. Until then any file of theirs may be imported.
          withoutIndex: ['cli', 'inference', 'lipsync', 'music', 'upscale'],
          // Imports that break the rule today, as '<importing area> -> <imported file>'. Shrink this list;
          // never grow it. An area is a folder of src/, 'src' (src/'s own files), 'scripts' or 'test'.
          known: [
            // Direction: low-level folders raise plain errors, but these still import the contract ...
            'src/inference -> src/jobs/errors.ts',
            'src/media -> src/jobs/errors.ts',
            'src/video -> src/jobs/errors.ts',
            'src/video -> src/jobs/index.ts',
            // ... inference/ knows the lip-sync test model, and lip-sync borrows the upscaler for mouths.
            'src/inference -> src/lipsync/wav2lip-test-model.ts',
            'src/lipsync -> src/upscale/image-pipeline.ts',
            // ... and media/index.ts re-exports video/'s frame pipe until lip-sync imports it from video/ (issue 13).
            'src/media -> src/video/frame-pipe.ts',
            // Through the index: files behind an index.ts imported directly.
            'src/cli -> src/worker/connection.ts',
            'src/gateway -> src/jobs/messages.ts',
            'src/gateway -> src/media/sniff.ts',
            'src/gateway -> src/worker/connection.ts',
            'src/gateway -> src/worker/events.ts',
            'src/gateway -> src/worker/results.ts',
            'src/gateway -> src/worker/settings.ts',
            'src/gateway -> src/worker/subjects.ts',
            'src/gateway -> src/worker/topology.ts',
            'src/inference -> src/media/owner.ts',
            'src/inference -> src/media/process.ts',
            'src/jobs -> src/media/types.ts',
            'src/lipsync -> src/jobs/errors.ts',
            'src/lipsync -> src/jobs/models.ts',
            'src/lipsync -> src/jobs/pricing.ts',
            'src/lipsync -> src/jobs/types.ts',
            'src/lipsync -> src/media/binaries.ts',
            'src/lipsync -> src/media/ffmpeg-args.ts',
            'src/lipsync -> src/media/process.ts',
            'src/lipsync -> src/media/types.ts',
            'src/music -> src/jobs/limits.ts',
            'src/music -> src/jobs/types.ts',
            'src/music -> src/media/binaries.ts',
            'src/music -> src/media/fetch.ts',
            'src/music -> src/media/ffmpeg-args.ts',
            'src/music -> src/media/probe-media.ts',
            'src/music -> src/media/process.ts',
            'src/music -> src/media/types.ts',
            'src/upscale -> src/jobs/types.ts',
            'src/upscale -> src/media/types.ts',
            'src/video -> src/media/types.ts',
            'src/worker -> src/jobs/errors.ts',
            'src/worker -> src/jobs/limits.ts',
            'src/worker -> src/jobs/messages.ts',
            'src/worker -> src/jobs/models.ts',
            'src/worker -> src/jobs/quote.ts',
            'src/worker -> src/jobs/schemas.ts',
            'src/worker -> src/jobs/types.ts',
            'src/worker -> src/media/owner.ts',
            'src -> src/gateway/settings.ts',
            'src -> src/jobs/hardware-classes.ts',
            'src -> src/jobs/work-limits.ts',
            'src -> src/media/fetch.ts',
            'src -> src/worker/availability.ts',
            'src -> src/worker/disk-space.ts',
            'src -> src/worker/settings.ts',
            'src -> src/worker/types.ts',
            'scripts -> src/media/binaries.ts',
            'scripts -> src/media/owner.ts',
            'scripts -> src/media/probe-image.ts',
            'scripts -> src/media/probe-media.ts',
            'scripts -> src/media/process.ts',
            'scripts -> src/media/types.ts',
            'scripts -> src/video/video-args.ts',
            'scripts -> src/video/video-geometry.ts',
            'scripts -> src/video/video-probe.ts',
            'scripts -> src/worker/events.ts',
            'test -> src/jobs/errors.ts',
            'test -> src/jobs/types.ts',
            'test -> src/jobs/work-limits.ts',
            'test -> src/media/binaries.ts',
            'test -> src/media/probe-image.ts',
            'test -> src/media/types.ts',
            'test -> src/video/frame-queue.ts',
            'test -> src/video/video-args.ts',
            'test -> src/video/video-encoders.ts',
            'test -> src/video/video-errors.ts',
            'test -> src/video/video-frame-reader.ts',
            'test -> src/video/video-geometry.ts',
            'test -> src/video/video-probe.ts',
            'test -> src/worker/events.ts',
            'test -> src/worker/settings.ts',
            'test -> src/worker/subjects.ts',
            'test -> src/worker/topology.ts',
          ],
        },
      ],
    },
  },
);

/** Logger calls that break the one logging style, each with what to write instead. */
function restrictedLogging() {
  const call = "CallExpression[callee.property.name=/^(trace|debug|info|warn|error|fatal)$/][callee.object.name!='console']";
  const fields = `${call} > ObjectExpression.arguments:first-child`;
  return [
    { selector: `${fields} > Property[key.name=/^(e|error)$/]`, message: 'Log an error under `err`: log.warn({ err }, ...)' },
    { selector: `${fields} > Property[key.name='err'] > MemberExpression.value[property.name='message']`, message: 'Log the error itself under `err` (pino serializes it), not its message' },
    { selector: `${call} > MemberExpression.arguments[property.name='message']`, message: "Log an error as log.warn({ err }, 'what failed'), not as the message" },
    { selector: `${call} > Identifier.arguments:first-child[name=/^(e|err|error)$/]`, message: "Log an error as log.warn({ err }, 'what failed'), not as the message" },
  ];
}
