/**
 * The project's ESLint config keeps the folder boundaries of src/ (README "Boundaries"): small
 * snippets linted at virtual paths through ESLint's Node API must be refused or let through by
 * `boundaries/imports`, and an import cycle between two files on disk by `import-x/no-cycle`.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ESLint } from 'eslint';
import { afterAll, describe, expect, it } from 'vitest';
import { PACKAGE_ROOT } from '../src/paths.js';

const CONFIG = path.join(PACKAGE_ROOT, 'eslint.config.js');
const eslint = new ESLint({ cwd: PACKAGE_ROOT, overrideConfigFile: CONFIG });

/** The boundary messages for `code` placed at `filePath` (relative to the repository root). */
async function boundaryMessages(filePath: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath });
  return result!.messages.filter((m) => m.ruleId === 'boundaries/imports').map((m) => m.message);
}

describe('boundaries/imports', () => {
  it.each([
    ['src/upscale/x.ts', '../lipsync/timeline.js', 'src/upscale/ must not import src/lipsync/'],
    ['src/lipsync/x.ts', '../upscale/video-pipeline.js', 'src/lipsync/ must not import src/upscale/'],
    ['src/media/x.ts', '../jobs/index.js', 'src/media/ must not import src/jobs/'],
    ['src/video/x.ts', '../inference/session.js', 'src/video/ must not import src/inference/'],
    ['src/music/x.ts', '../worker/index.js', 'src/music/ must not import src/worker/'],
    ['src/upscale/deeper/x.ts', '../../gateway/index.js', 'src/upscale/ must not import src/gateway/'],
    // The gateway stands on the protocol beside the worker, never on the worker itself.
    ['src/gateway/x.ts', '../worker/index.js', 'src/gateway/ must not import src/worker/'],
    ['src/worker/x.ts', '../gateway/index.js', 'src/worker/ must not import src/gateway/'],
    ['src/protocol/x.ts', '../worker/index.js', 'src/protocol/ must not import src/worker/'],
    // The application layer sits above the worker; the worker reaches the pipelines only through it.
    ['src/worker/x.ts', '../app/index.js', 'src/worker/ must not import src/app/'],
    ['src/worker/x.ts', '../upscale/index.js', 'src/worker/ must not import src/upscale/'],
    // The files at src/'s top have layers too: a pipeline does not reach up to the settings' composition.
    ['src/music/x.ts', '../config.js', 'src/music/ must not import src/config.ts'],
    ['src/errors.ts', './jobs/index.js', 'src/errors.ts must not import src/jobs/'],
    ['src/config.ts', './app/index.js', 'src/config.ts must not import src/app/'],
  ])('refuses %s importing %s', async (file, specifier, expected) => {
    const messages = await boundaryMessages(file, `export { x } from '${specifier}';\n`);
    expect(messages).toHaveLength(1);
    expect(messages[0]).toContain(expected);
  });

  it.each([
    ['src/worker/x.ts', '../media/sniff.js', 'src/worker imports src/media/sniff.ts: enter src/media/ through src/media/index.ts or src/media/settings.ts'],
    ['src/config.ts', './video/frame-queue.js', 'src/config.ts imports src/video/frame-queue.ts: enter src/video/ through src/video/index.ts or src/video/settings.ts'],
    ['scripts/x.ts', '../src/jobs/quote.js', 'scripts imports src/jobs/quote.ts: enter src/jobs/ through src/jobs/index.ts or src/jobs/settings.ts'],
    ['test/worker/x.test.ts', '../../src/media/sniff.js', 'test imports src/media/sniff.ts: enter src/media/ through src/media/index.ts or src/media/settings.ts'],
  ])('refuses %s importing %s past the index', async (file, specifier, expected) => {
    expect(await boundaryMessages(file, `import { x } from '${specifier}';\nexport { x };\n`)).toEqual([expected]);
  });

  it('refuses a file behind the index of a folder that now has one', async () => {
    expect(await boundaryMessages('src/upscale/x.ts', "export { x } from '../inference/session.js';\n")).toEqual([
      'src/upscale imports src/inference/session.ts: enter src/inference/ through src/inference/index.ts or src/inference/settings.ts',
    ]);
  });

  it('sees dynamic imports and re-exports too', async () => {
    const code = "export * from '../media/sniff.js';\nexport const later = () => import('../media/process.js');\n";
    expect(await boundaryMessages('src/worker/x.ts', code)).toHaveLength(2);
  });

  it('refuses a folder or a file at src/\'s top that has no layer', async () => {
    expect(await boundaryMessages('src/extras/x.ts', "export { x } from '../media/index.js';\n")).toEqual([
      'src/extras/ is in no layer of the boundaries rule: give it one in eslint.config.js',
    ]);
    expect(await boundaryMessages('src/loose.ts', "export { x } from './media/index.js';\n")).toEqual([
      'src/loose.ts is in no layer of the boundaries rule: give it one in eslint.config.js',
    ]);
  });

  it.each([
    ['src/worker/x.ts', '../media/index.js'],
    ['src/upscale/x.ts', '../video/index.js'],
    ['src/upscale/x.ts', '../inference/index.js'],
    ['src/config.ts', './media/settings.js'], // a folder's pure settings, for src/config.ts
    ['src/jobs/x.ts', '../inference/tile-plan.js'], // one folder's light entry, named in the config
    ['src/cli.ts', './cli/program.js'], // cli/ has no barrel: src/cli.ts loads it lazily
    ['src/gateway/x.ts', '../protocol/index.js'],
    ['src/worker/x.ts', '../protocol/index.js'],
    ['src/app/x.ts', '../worker/index.js'],
    ['src/app/x.ts', '../upscale/index.js'],
    ['src/cli/x.ts', '../app/index.js'],
    ['src/cli/x.ts', '../protocol/index.js'],
    ['src/cli/x.ts', '../gateway/index.js'],
    ['src/media/x.ts', './sniff.js'],
    ['src/lipsync/rooms/x.ts', '../pipeline.js'],
    ['src/config.ts', './worker/settings.js'],
    ['src/app/x.ts', '../config.js'],
    ['src/media/x.ts', '../errors.js'],
    ['test/media/x.test.ts', '../../src/media/sniff.js'], // a test may reach into the folder it tests
    ['scripts/x.ts', '../src/media/index.js'],
    ['src/worker/x.ts', 'pino'],
  ])('lets %s import %s', async (file, specifier) => {
    expect(await boundaryMessages(file, `export { x } from '${specifier}';\n`)).toEqual([]);
  });
});

describe('no-restricted-imports', () => {
  it.each([
    ['src/music/x.ts', '../protocol/index.js'],
    ['src/app/x.ts', '../protocol/index.js'],
    ['src/upscale/x.ts', '@nats-io/jetstream'],
  ])('keeps the wire away from %s (%s)', async (filePath, specifier) => {
    const [result] = await eslint.lintText(`export { x } from '${specifier}';\n`, { filePath });
    expect(result!.messages.map((m) => m.ruleId)).toContain('no-restricted-imports');
  });
});

describe('import-x/no-cycle', () => {
  const dirs: string[] = [];
  afterAll(async () => {
    await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
  });

  it('refuses two modules that import each other', async () => {
    // The rule follows imports on disk, so the two files are real (outside the repository, linted with its config).
    const dir = await mkdtemp(path.join(tmpdir(), 'lint-cycle-'));
    dirs.push(dir);
    await mkdir(path.join(dir, 'src', 'media'), { recursive: true });
    await writeFile(path.join(dir, 'src', 'media', 'a.ts'), "import { b } from './b.js';\nexport const a = (): number => b() + 1;\n");
    await writeFile(path.join(dir, 'src', 'media', 'b.ts'), "import { a } from './a.js';\nexport const b = (): number => a() - 1;\n");
    const inDir = new ESLint({ cwd: dir, overrideConfigFile: CONFIG });
    const results = await inDir.lintFiles(['src/media/a.ts']);
    expect(results[0]!.messages.map((m) => m.ruleId)).toEqual(['import-x/no-cycle']);
  });
});
