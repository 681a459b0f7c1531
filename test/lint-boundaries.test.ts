/**
 * The project's ESLint config keeps the folder boundaries of src/ (docs/layers.md): small snippets
 * linted at virtual paths through ESLint's Node API must be refused or let through by
 * `boundaries/imports`, whose layers are docs/layers.md's table; the generic modules of jobs/ and
 * app/ never import the kinds; and an import cycle planted in a folder of the repository, through
 * `import type` too, fails the lint (`cycles/no-cycle`, and `import-x/no-cycle` for a runtime one).
 */
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ESLint } from 'eslint';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PACKAGE_ROOT } from '../src/paths.js';
import { layersOf, roomsOf } from '../eslint/layers.js';

const CONFIG = path.join(PACKAGE_ROOT, 'eslint.config.js');
const eslint = new ESLint({ cwd: PACKAGE_ROOT, overrideConfigFile: CONFIG });

/** The boundary messages for `code` placed at `filePath` (relative to the repository root). */
async function boundaryMessages(filePath: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath });
  return result!.messages.filter((m) => m.ruleId === 'boundaries/imports').map((m) => m.message);
}

describe('boundaries/imports', () => {
  it.each([
    // One kind never imports another, whichever parts.
    [
      'src/kinds/video-upscale/pipeline/x.ts',
      '../../lipsync/pipeline/timeline.js',
      'src/kinds/video-upscale/pipeline imports src/kinds/lipsync/pipeline/timeline.ts: one job kind never imports another',
    ],
    [
      'src/kinds/lipsync/contract/x.ts',
      '../../music/contract/price.js',
      'src/kinds/lipsync/contract imports src/kinds/music/contract/price.ts: one job kind never imports another',
    ],
    // A kind's parts sit in their layers: the contract is under the pipeline, the pipeline under the runtime half.
    [
      'src/kinds/lipsync/contract/x.ts',
      '../pipeline/index.js',
      'src/jobs/ must not import src/kinds/lipsync/pipeline/',
    ],
    ['src/kinds/lipsync/pipeline/x.ts', '../runtime.js', 'src/kinds/lipsync/pipeline/ must not import src/app/'],
    [
      'src/gateway/x.ts',
      '../kinds/lipsync/pipeline/index.js',
      'src/gateway/ must not import src/kinds/lipsync/pipeline/',
    ],
    ['src/media/x.ts', '../jobs/index.js', 'src/media/ must not import src/jobs/'],
    ['src/video/x.ts', '../inference/session.js', 'src/video/ must not import src/inference/'],
    [
      'src/kinds/music/pipeline/x.ts',
      '../../../worker/index.js',
      'src/kinds/music/pipeline/ must not import src/worker/',
    ],
    [
      'src/kinds/image-upscale/pipeline/deeper/x.ts',
      '../../../../gateway/index.js',
      'src/kinds/image-upscale/pipeline/ must not import src/gateway/',
    ],
    // The gateway stands on the protocol beside the worker, never on the worker itself.
    ['src/gateway/x.ts', '../worker/index.js', 'src/gateway/ must not import src/worker/'],
    ['src/worker/x.ts', '../gateway/index.js', 'src/worker/ must not import src/gateway/'],
    ['src/protocol/x.ts', '../worker/index.js', 'src/protocol/ must not import src/worker/'],
    // The application layer sits above the worker; the worker reaches the pipelines only through it.
    ['src/worker/x.ts', '../app/index.js', 'src/worker/ must not import src/app/'],
    [
      'src/worker/x.ts',
      '../kinds/image-upscale/pipeline/index.js',
      'src/worker/ must not import src/kinds/image-upscale/pipeline/',
    ],
    // The files at src/'s top have layers too: a pipeline does not reach up to the settings' composition.
    ['src/kinds/music/pipeline/x.ts', '../../../config.js', 'src/kinds/music/pipeline/ must not import src/config.ts'],
    ['src/errors.ts', './jobs/index.js', 'src/errors.ts must not import src/jobs/'],
    ['src/config.ts', './app/index.js', 'src/config.ts must not import src/app/'],
  ])('refuses %s importing %s', async (file, specifier, expected) => {
    const messages = await boundaryMessages(file, `export { x } from '${specifier}';\n`);
    expect(messages).toHaveLength(1);
    expect(messages[0]).toContain(expected);
  });

  it.each([
    [
      'src/worker/x.ts',
      '../media/sniff.js',
      'src/worker imports src/media/sniff.ts: enter src/media/ through src/media/index.ts or src/media/settings.ts',
    ],
    [
      'src/config.ts',
      './video/frame-queue.js',
      'src/config.ts imports src/video/frame-queue.ts: enter src/video/ through src/video/index.ts or src/video/settings.ts',
    ],
    [
      'scripts/x.ts',
      '../src/jobs/quote.js',
      'scripts imports src/jobs/quote.ts: enter src/jobs/ through src/jobs/index.ts or src/jobs/settings.ts',
    ],
    [
      'test/worker/x.test.ts',
      '../../src/media/sniff.js',
      'test imports src/media/sniff.ts: enter src/media/ through src/media/index.ts or src/media/settings.ts',
    ],
    [
      'src/gateway/x.ts',
      '../kinds/lipsync/contract/price.js',
      'src/gateway imports src/kinds/lipsync/contract/price.ts: enter src/kinds/lipsync/contract/ through src/kinds/lipsync/contract/index.ts',
    ],
    [
      'test/gateway/x.test.ts',
      '../../src/kinds/lipsync/pipeline/faces/track.js',
      'test imports src/kinds/lipsync/pipeline/faces/track.ts: enter src/kinds/lipsync/pipeline/ through src/kinds/lipsync/pipeline/index.ts',
    ],
  ])('refuses %s importing %s past the index', async (file, specifier, expected) => {
    expect(await boundaryMessages(file, `import { x } from '${specifier}';\nexport { x };\n`)).toEqual([expected]);
  });

  it('refuses a file behind the index of a folder that now has one', async () => {
    expect(
      await boundaryMessages(
        'src/kinds/image-upscale/pipeline/x.ts',
        "export { x } from '../../../inference/session.js';\n",
      ),
    ).toEqual([
      'src/kinds/image-upscale/pipeline imports src/inference/session.ts: enter src/inference/ through src/inference/index.ts or src/inference/settings.ts',
    ]);
  });

  it('sees dynamic imports and re-exports too', async () => {
    const code = "export * from '../media/sniff.js';\nexport const later = () => import('../media/process.js');\n";
    expect(await boundaryMessages('src/worker/x.ts', code)).toHaveLength(2);
  });

  it("refuses a folder or a file at src/'s top that has no layer", async () => {
    expect(await boundaryMessages('src/extras/x.ts', "export { x } from '../media/index.js';\n")).toEqual([
      'src/extras/ is in no layer of the boundaries rule: give it one in eslint.config.js',
    ]);
    expect(await boundaryMessages('src/loose.ts', "export { x } from './media/index.js';\n")).toEqual([
      'src/loose.ts is in no layer of the boundaries rule: give it one in eslint.config.js',
    ]);
    // A kind's folder holds the parts the table places, and nothing loose.
    expect(await boundaryMessages('src/kinds/lipsync/loose.ts', "export { x } from '../../media/index.js';\n")).toEqual(
      ['src/kinds/<kind>/loose.ts is in no layer of the boundaries rule: give it one in eslint.config.js'],
    );
  });

  it.each([
    ['src/worker/x.ts', '../media/index.js'],
    ['src/kinds/video-upscale/pipeline/x.ts', '../../../video/index.js'],
    ['src/kinds/image-upscale/pipeline/x.ts', '../../../inference/index.js'],
    // A kind's parts see each other downwards, whatever the file: the runtime its pipeline, the pipeline its contract.
    ['src/kinds/lipsync/runtime.ts', './pipeline/faces/track.js'],
    ['src/kinds/lipsync/pipeline/x.ts', '../contract/price.js'],
    ['src/kinds/lipsync/pipeline/x.ts', '../settings.js'],
    ['src/kinds/lipsync/contract/x.ts', '../../../jobs/kind-contract.js'], // a kind's contract is part of jobs/
    ['src/kinds/lipsync/runtime.ts', '../../app/kind-runtime.js'], // its runtime half part of app/
    ['src/kinds/lipsync/command.ts', '../../cli/context.js'], // its command part of cli/
    ['src/jobs/kinds.ts', '../kinds/lipsync/contract/contract.js'], // the registries
    ['src/app/kinds.ts', '../kinds/lipsync/runtime.js'],
    ['src/cli/program.ts', '../kinds/lipsync/command.js'],
    ['test/kinds/lipsync/pipeline/x.test.ts', '../../../../src/kinds/lipsync/pipeline/faces/track.js'],
    ['src/config.ts', './media/settings.js'], // a folder's pure settings, for src/config.ts
    ['src/jobs/x.ts', '../inference/tile-plan.js'], // one folder's light entry, named in the config
    ['src/cli.ts', './cli/program.js'], // cli/ has no barrel: src/cli.ts loads it lazily
    ['src/gateway/x.ts', '../protocol/index.js'],
    ['src/worker/x.ts', '../protocol/index.js'],
    ['src/app/x.ts', '../worker/index.js'],
    ['src/app/x.ts', '../kinds/image-upscale/pipeline/index.js'],
    ['src/cli/x.ts', '../app/index.js'],
    ['src/cli/x.ts', '../protocol/index.js'],
    ['src/cli/x.ts', '../gateway/index.js'],
    ['src/media/x.ts', './sniff.js'],
    ['src/kinds/lipsync/pipeline/rooms/x.ts', '../pipeline.js'],
    ['src/config.ts', './worker/settings.js'],
    ['src/app/x.ts', '../config.js'],
    ['src/media/x.ts', '../errors.js'],
    ['test/media/x.test.ts', '../../src/media/sniff.js'], // a test may reach into the folder it tests
    ['test/scenarios/gateway/x.test.ts', '../../../src/gateway/store/ledger.js'], // a scenario too
    ['scripts/x.ts', '../src/media/index.js'],
    ['src/worker/x.ts', 'pino'],
  ])('lets %s import %s', async (file, specifier) => {
    expect(await boundaryMessages(file, `export { x } from '${specifier}';\n`)).toEqual([]);
  });
});

describe('no-restricted-imports', () => {
  it.each([
    ['src/kinds/music/pipeline/x.ts', '../../../protocol/index.js'],
    ['src/app/x.ts', '../protocol/index.js'],
    ['src/kinds/image-upscale/pipeline/x.ts', '@nats-io/jetstream'],
  ])('keeps the wire away from %s (%s)', async (filePath, specifier) => {
    const [result] = await eslint.lintText(`export { x } from '${specifier}';\n`, { filePath });
    expect(result!.messages.map((m) => m.ruleId)).toContain('no-restricted-imports');
  });
});

describe("the kinds' registries in jobs/ and app/ (docs/layers.md)", () => {
  it.each([
    ['src/jobs/kind-contract.ts', '../kinds/lipsync/contract/types.js'],
    ['src/jobs/pricing.ts', './kinds.js'],
    ['src/app/run-job.ts', './kinds.js'],
    ['src/app/hardware.ts', '../kinds/music/runtime.js'],
  ])('keeps the kinds out of the generic %s (%s)', async (filePath, specifier) => {
    const [result] = await eslint.lintText(`export { x } from '${specifier}';\n`, { filePath });
    expect(result!.messages.map((m) => m.message).join('\n')).toContain('a generic module names no kind');
  });

  it.each([
    ['src/jobs/models.ts', './kinds.js'],
    ['src/app/with-kinds.ts', './kinds.js'],
    ['src/app/kinds.ts', '../kinds/lipsync/runtime.js'],
  ])('lets %s import %s: it derives from the registry, or is it', async (filePath, specifier) => {
    const [result] = await eslint.lintText(`export { x } from '${specifier}';\n`, { filePath });
    expect(result!.messages.filter((m) => m.ruleId === 'no-restricted-imports')).toEqual([]);
  });
});

describe('the layers table (docs/layers.md)', () => {
  let doc: string;
  beforeAll(async () => {
    doc = await readFile(path.join(PACKAGE_ROOT, 'docs', 'layers.md'), 'utf8');
  });

  it("is the boundaries rule's layers, and places every room of src/ once", async () => {
    const config = (await eslint.calculateConfigForFile('src/app/run-job.ts')) as {
      rules: Record<string, [unknown, { layers: string[][]; joins: Record<string, string> }]>;
    };
    const layers = layersOf(doc, roomsOf(path.join(PACKAGE_ROOT, 'src')));
    expect(config.rules['boundaries/imports']![1].layers).toEqual(layers);
    expect(layers.flat().sort()).toEqual(roomsOf(path.join(PACKAGE_ROOT, 'src')));
    // What the table says, in the order the rule reads it.
    expect(layers.map((rooms) => rooms.join(' '))).toContain('kinds/*/pipeline worker gateway');
    expect(layers.map((rooms) => rooms.join(' '))).toContain('jobs kinds/*/contract kinds/*/settings.ts');
    // A kind's contract, runtime half and command join the one room beside them.
    expect(config.rules['boundaries/imports']![1]).toMatchObject({
      joins: {
        'kinds/*/contract': 'jobs',
        'kinds/*/settings.ts': 'jobs',
        'kinds/*/runtime.ts': 'app',
        'kinds/*/command.ts': 'cli',
      },
    });
    expect(layers.indexOf(layers.find((rooms) => rooms.includes('jobs'))!)).toBeLessThan(
      layers.indexOf(layers.find((rooms) => rooms.includes('app'))!),
    );
  });

  it.each([
    [
      'a room in two layers',
      (t: string) => t.replace('| 3 | `media/` |', '| 3 | `media/` `telemetry/` |'),
      'telemetry is in layer 2 and in layer 3',
    ],
    [
      'a "May import" that is not every lower layer',
      (t: string) =>
        t.replace('| 9 | `app/` `kinds/*/runtime.ts` | 1–8 |', '| 9 | `app/` `kinds/*/runtime.ts` | 1–7 |'),
      'layer 9 "May import" says "1–7"',
    ],
    [
      'a layer out of order',
      (t: string) => t.replace('| 4 | `video/`', '| 5 | `video/`'),
      'row 4 of the layers table is layer "5"',
    ],
    [
      'a room of src/ left out',
      (t: string) => t.replace(' `sleep.ts`', ''),
      'src/ has rooms the layers table does not place: sleep.ts',
    ],
    [
      'a room src/ does not have',
      (t: string) => t.replace('`cli/` `kinds/*/command.ts` |', '`cli/` `kinds/*/command.ts` `extras/` |'),
      'the layers table names rooms src/ does not have: extras',
    ],
    ['no table', (t: string) => t.replace('<!-- /layers -->', ''), 'no table between'],
  ])('fails the lint on %s', (_what, edit, message) => {
    expect(() => layersOf(edit(doc), roomsOf(path.join(PACKAGE_ROOT, 'src')))).toThrow(message);
  });
});

describe('no import cycle (cycles/no-cycle, import-x/no-cycle)', () => {
  // The rules follow imports on disk: the files are planted in a folder of the repository, inside the
  // lint's scope (test/**), and linted with the project's own config, then removed.
  let dir: string;
  beforeAll(async () => {
    // A run killed before its afterAll left its cycles behind: they would fail every later lint.
    const test = path.join(PACKAGE_ROOT, 'test');
    for (const name of await readdir(test))
      if (name.startsWith('lint-cycle-')) await rm(path.join(test, name), { recursive: true, force: true });
    dir = await mkdtemp(path.join(test, 'lint-cycle-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  async function plant(files: Record<string, string>): Promise<Record<string, string[]>> {
    const names = Object.keys(files);
    const sub = await mkdtemp(path.join(dir, 'case-'));
    await Promise.all(names.map((name) => writeFile(path.join(sub, name), files[name]!)));
    const results = await eslint.lintFiles(names.map((name) => path.join(sub, name)));
    return Object.fromEntries(
      results.map((r) => [path.basename(r.filePath), r.messages.map((m) => `${m.ruleId}: ${m.message}`)]),
    );
  }

  it('refuses two modules that import each other', async () => {
    const messages = await plant({
      'a.ts': "import { b } from './b.js';\nexport const a = (): number => b() + 1;\n",
      'b.ts': "import { a } from './a.js';\nexport const b = (): number => a() - 1;\n",
    });
    for (const file of ['a.ts', 'b.ts']) {
      expect(messages[file]!.map((m) => m.split(':')[0])).toEqual(['import-x/no-cycle', 'cycles/no-cycle']);
    }
    const other = { 'a.ts': 'b.ts', 'b.ts': 'a.ts' } as const;
    for (const file of ['a.ts', 'b.ts'] as const) {
      expect(messages[file]![1]).toMatch(
        new RegExp(
          `Import cycle: test/lint-cycle-\\w+/case-\\w+/${file} → test/lint-cycle-\\w+/case-\\w+/${other[file]} → test/lint-cycle-\\w+/case-\\w+/${file}\\.`,
        ),
      );
    }
  });

  it('refuses a cycle through `import type`, which import-x/no-cycle lets through by design', async () => {
    const messages = await plant({
      'shape.ts': "import type { Maker } from './maker.js';\nexport interface Shape { made: Maker }\n",
      'maker.ts': "import type { Shape } from './shape.js';\nexport type Maker = () => Shape;\n",
    });
    expect(messages['shape.ts']!.map((m) => m.split(':')[0])).toEqual(['cycles/no-cycle']);
    expect(messages['maker.ts']!.map((m) => m.split(':')[0])).toEqual(['cycles/no-cycle']);
  });

  it('follows every kind of import around a longer cycle: export from, import() types, dynamic import()', async () => {
    const messages = await plant({
      'one.ts': "export type { Two } from './two.js';\nexport const one = 1;\n",
      'two.ts': "export type Two = typeof import('./three.js');\n",
      'three.ts': "export const three = async (): Promise<number> => (await import('./one.js')).one;\n",
    });
    for (const file of ['one.ts', 'two.ts', 'three.ts']) {
      expect(messages[file]!.filter((m) => m.startsWith('cycles/no-cycle'))).toHaveLength(1);
    }
    expect(messages['one.ts']![0]).toMatch(/one\.ts → \S+two\.ts → \S+three\.ts → \S+one\.ts\./);
  });

  it('lets a chain without a way back through', async () => {
    const messages = await plant({
      'top.ts':
        "import type { Low } from './low.js';\nimport { low } from './low.js';\nexport const top = (l: Low): number => low(l);\n",
      'low.ts': 'export type Low = number;\nexport const low = (n: Low): number => n;\n',
    });
    expect(messages).toEqual({ 'top.ts': [], 'low.ts': [] });
  });
});
