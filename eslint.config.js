/**
 * ESLint for src/, scripts/, test/ (and bench/ should it appear): typescript-eslint's recommended
 * rules and no import cycles.
 */
import { defineConfig } from 'eslint/config';
import { createNodeResolver, importX } from 'eslint-plugin-import-x';
import tseslint from 'typescript-eslint';

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
    // "Nothing below worker/ knows NATS exists."
    files: ['src/{media,video,inference,jobs,upscale,lipsync,music}/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ group: ['@nats-io/*'], message: 'only worker/, gateway/ and the command line talk to NATS' }] }],
    },
  },
);
