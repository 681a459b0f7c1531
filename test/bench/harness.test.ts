/**
 * One way to run a benchmark (bench/harness.ts): every benchmark of the catalogue answers --help
 * from its script and from `media-worker bench NAME`, refuses a bad flag in one line without a stack
 * trace, and a --json run compared with itself (--baseline) gives ratios of 1.00 for every figure
 * that is not a timing. Runs the built scripts (dist/, made by `npm test`'s build step); no
 * benchmark runs except one quality run on a 64-pixel crop.
 */
import { execFile } from 'node:child_process';
import { readdir, readFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BENCHMARKS, FAMILIES, benchPath } from '../../bench/catalog.js';
import { compareRuns, formatComparison, numbersOf, tableFigures } from '../../bench/baseline.js';
import { parseBenchArgs } from '../../bench/harness.js';
import { PACKAGE_ROOT } from '../../src/paths.js';

const CLI = path.join(PACKAGE_ROOT, 'dist', 'src', 'cli.js');
const script = (name: string): string => path.join(PACKAGE_ROOT, 'dist', 'bench', `${benchPath(name)}.js`);

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** V8's code cache of the dist/ modules, kept between this file's processes (no behaviour of its own). */
let compileCache: string;
beforeAll(async () => {
  compileCache = await mkdtemp(path.join(tmpdir(), 'bench-compile-cache-'));
});
afterAll(async () => {
  await rm(compileCache, { recursive: true, force: true });
});

function node(args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    const env = { ...process.env, LOG_LEVEL: 'warn', NODE_COMPILE_CACHE: compileCache };
    execFile(process.execPath, args, { cwd: PACKAGE_ROOT, env, timeout: 120_000 }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof err.code === 'number' ? err.code : 1;
      resolve({ code, stdout, stderr });
    });
  });
}

/** Runs `work` over the items, `width` at a time (each is a Node process importing the runtimes). */
async function pooled<T, R>(items: readonly T[], width: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) {
        const i = next++;
        results[i] = await work(items[i]!);
      }
    }),
  );
  return results;
}

function expectUsage(name: string, run: Run): void {
  expect(run.code, `${name}: ${run.stderr}`).toBe(0);
  expect(run.stdout.startsWith(`usage: media-worker bench ${name} [flags]`), run.stdout).toBe(true);
  expect(run.stdout).toContain(BENCHMARKS.find((b) => b.name === name)!.summary);
  for (const flag of ['--json', '--baseline FILE', '--help']) expect(run.stdout).toContain(flag);
}

describe('the catalogue', () => {
  it('lists every benchmark script of bench/, in its family folder, and each has its npm script', async () => {
    const bench = path.join(PACKAGE_ROOT, 'bench');
    const withCli: string[] = [];
    for (const entry of await readdir(bench, { withFileTypes: true })) {
      const folder = entry.isDirectory() ? entry.name : '';
      const files = entry.isDirectory() ? await readdir(path.join(bench, folder)) : [entry.name];
      for (const file of files.filter((f) => f.endsWith('.ts'))) {
        const relative = folder === '' ? file : `${folder}/${file}`;
        if ((await readFile(path.join(bench, relative), 'utf8')).includes('benchCli({'))
          withCli.push(relative.slice(0, -3));
      }
    }
    expect(withCli.sort()).toEqual(BENCHMARKS.map((b) => `${b.family}/${b.name}`).sort());
    const folders = (await readdir(bench, { withFileTypes: true })).filter((e) => e.isDirectory()).map((e) => e.name);
    expect(folders.sort()).toEqual(FAMILIES.map((f) => f.id).sort());
    const scripts = (
      JSON.parse(await readFile(path.join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }
    ).scripts;
    const benchScripts = Object.keys(scripts).filter((k) => k.startsWith('bench:'));
    expect(benchScripts.sort()).toEqual(BENCHMARKS.map((b) => `bench:${b.name}`).sort());
    for (const b of BENCHMARKS)
      expect(scripts[`bench:${b.name}`]).toBe(`npm run build && node dist/bench/${b.family}/${b.name}.js`);
  });

  it('bench/README.md has a row for each, under its family', async () => {
    const readme = await readFile(path.join(PACKAGE_ROOT, 'bench', 'README.md'), 'utf8');
    const rows: string[] = [];
    let family = '';
    for (const line of readme.split('\n')) {
      const cells = /^\|\s*(.*?)\s*\|\s*`([\w-]+)`\s*\|/.exec(line);
      if (cells === null) continue;
      family = /^`([\w-]+)\/`/.exec(cells[1]!)?.[1] ?? (cells[1] === '' ? family : cells[1]!);
      rows.push(`${family}/${cells[2]!}`);
    }
    expect(rows).toEqual(BENCHMARKS.map((b) => `${b.family}/${b.name}`));
  });

  it('media-worker bench lists them by family: a heading line, then one line each', async () => {
    const run = await node([CLI, 'bench']);
    expect(run.code).toBe(0);
    const groups = run.stdout
      .trimEnd()
      .split('\n\n')
      .map((g) => g.split('\n'));
    expect(groups.map((g) => g[0])).toEqual(FAMILIES.map((f) => `${f.title} (bench/${f.id}/)`));
    groups.forEach((lines, i) => {
      const family = FAMILIES[i]!.id;
      expect(lines.slice(1).map((l) => l.trim().split(/\s+/)[0])).toEqual(
        BENCHMARKS.filter((b) => b.family === family).map((b) => b.name),
      );
    });
    expect(groups.flatMap((g) => g.slice(1)).length).toBe(BENCHMARKS.length);
  });

  it('media-worker bench refuses a benchmark it does not know', async () => {
    const run = await node([CLI, 'bench', 'no-such-bench']);
    expect(run.code).toBe(2);
    expect(run.stderr.split('\n')[0]).toBe('Unknown benchmark "no-such-bench"; the benchmarks:');
  });
});

describe('--help', () => {
  it('every benchmark script prints its usage and exits 0', async () => {
    const runs = await pooled(BENCHMARKS, 3, (b) => node([script(b.name), '--help']));
    BENCHMARKS.forEach((b, i) => expectUsage(b.name, runs[i]!));
  }, 300_000);

  it('media-worker bench NAME --help prints the same usage', async () => {
    const runs = await pooled(BENCHMARKS, 3, (b) => node([CLI, 'bench', b.name, '--help']));
    BENCHMARKS.forEach((b, i) => expectUsage(b.name, runs[i]!));
  }, 300_000);
});

describe('a bad flag', () => {
  it.each([
    [['--no-such-flag'], "quality: Unknown option '--no-such-flag'"],
    [['--max-side'], "quality: Option '--max-side <value>' argument missing"],
    [['--json=yes'], "quality: Option '--json' does not take an argument"],
    [['extra'], "quality: Unexpected argument 'extra'. This command does not take positional arguments"],
  ])(
    '%j gets one line naming it, the usage, exit 2, no stack trace',
    async (args, line) => {
      for (const run of [await node([script('quality'), ...args]), await node([CLI, 'bench', 'quality', ...args])]) {
        expect(run.code).toBe(2);
        expect(run.stdout).toBe('');
        const [first, blank, usage] = run.stderr.split('\n');
        expect(first).toBe(line);
        expect(blank).toBe('');
        expect(usage).toBe('usage: media-worker bench quality [flags]');
        expect(run.stderr).not.toMatch(/^\s+at /m);
      }
    },
    60_000,
  );

  it('is parsed without running anything (parseBenchArgs is pure)', () => {
    const spec = {
      name: 'quality',
      options: { size: { type: 'string', arg: 'PX', help: 'side', default: '8' } },
      common: { repeat: { default: '2' } },
    } as const;
    const ok = parseBenchArgs(spec, ['--size', '16', '--json']);
    expect(ok).toMatchObject({ values: { size: '16', repeat: '2', json: true } });
    expect(parseBenchArgs(spec, ['--reps', '3'])).toMatchObject({ exit: 2 });
    expect(parseBenchArgs(spec, ['-h'])).toMatchObject({ exit: 0 });
    expect(parseBenchArgs(spec, ['--docs-block', 'quality'])).toMatchObject({
      exit: 2,
      stderr: expect.stringMatching(/^quality: --docs-block goes only with --write-docs\n/),
    });
  });
});

describe('--json and --baseline', () => {
  it('a run compared with its own saved --json run gives 1.00 for every figure but the timings', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'bench-baseline-'));
    try {
      const args = [
        script('quality'),
        '--model',
        'realesrgan-x4fast',
        '--photos',
        'astronaut',
        '--scales',
        '4',
        '--max-side',
        '64',
      ];
      const outputs = ['--results', path.join(dir, 'quality.json'), '--chart', path.join(dir, 'chart')];
      const first = await node([...args, ...outputs, '--json']);
      expect(first.code, first.stderr).toBe(0);
      const saved = JSON.parse(first.stdout) as { bench: string; tables: unknown[] };
      expect(saved.bench).toBe('quality');
      expect(first.stderr).toContain('astronaut x4 realesrgan-x4fast');
      const baseline = path.join(dir, 'baseline.json');
      await writeFile(baseline, first.stdout);

      const second = await node([...args, ...outputs, '--baseline', baseline]);
      expect(second.code, second.stderr).toBe(0);
      const lines = second.stdout
        .slice(second.stdout.indexOf(`compared with ${baseline}`))
        .split('\n')
        .slice(3)
        .filter((l) => l.trim() !== '');
      expect(lines.length).toBeGreaterThan(20);
      const figures = lines.filter((l) => !l.includes('output MP/s'));
      for (const line of figures) expect(line, line).toMatch(/ 1\.00$/);
      expect(figures.some((l) => l.includes('› mean › realesrgan-x4fast [1]'))).toBe(true);
      expect(lines.filter((l) => l.includes('output MP/s'))).toHaveLength(2);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it('names figures by caption, row and column and pairs them by name', () => {
    expect(numbersOf('**27.61 / 0.8123**')).toEqual([27.61, 0.8123]);
    expect(numbersOf('-')).toEqual([]);
    const table = {
      caption: 'x4',
      header: ['photo', 'a', 'b'],
      rows: [
        ['cat', '2.00', '1 / 3'],
        ['cat', '4', '-'],
      ],
    };
    expect(tableFigures([table]).map((f) => f.name)).toEqual([
      'x4 › cat › a',
      'x4 › cat › b [1]',
      'x4 › cat › b [2]',
      'x4 › cat #2 › a',
    ]);
    const before = { tables: [{ ...table, rows: [['cat', '1.00', '1 / 3']] }] };
    const compared = compareRuns({ tables: [table] }, before);
    expect(compared.map((c) => c.ratio)).toEqual([2, 1, 1, undefined]);
    expect(formatComparison(compared)).toMatch(/x4 › cat #2 › a\s+4\s+-\s+-/);
  });
});
