/**
 * What every benchmark shares on its command line (bench/catalog.ts lists them):
 *
 * - strict flags (node:util parseArgs): an unknown or malformed flag prints one line naming it and
 *   the usage, exit 2; --help prints the usage, exit 0; a failure while running prints one line, exit 1;
 * - common flags with one meaning wherever they apply: --model, --providers, --threads, --tile,
 *   --repeat (COMMON_FLAGS), and on every benchmark --json (one JSON document on stdout, everything
 *   else on stderr), --baseline FILE (a saved --json run: each figure beside the baseline's, with
 *   the ratio) and, where the benchmark has blocks in its family's page (docs/benchmarks/), --write-docs.
 *
 * A benchmark declares its own flags and picks common ones with their defaults, then reports its
 * figures through `done` (tables as in the docs, and any data): see bench/inference/quality.ts.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { PACKAGE_ROOT } from '../src/paths.js';
import { compareRuns, formatComparison, type BenchRun } from './baseline.js';
import { BLOCKS } from './blocks.js';
import { benchPath, findBenchmark } from './catalog.js';
import { machineInfo } from './common.js';
import type { DocTable } from './doc-block.js';

export interface StringFlag {
  type: 'string';
  /** Placeholder of the value in the usage: `N`, `FILE`, `NAME[,NAME]`. */
  arg: string;
  help: string;
  default?: string;
  /** Internal (a benchmark's child process): accepted, left out of the usage. */
  hidden?: boolean;
}

export interface BooleanFlag {
  type: 'boolean';
  help: string;
  hidden?: boolean;
}

export type Flag = StringFlag | BooleanFlag;

/** The flags with one meaning in every benchmark that takes them. */
export const COMMON_FLAGS = {
  model: {
    type: 'string',
    arg: 'NAME[,NAME]',
    help: 'networks to run, by manifest name (`media-worker models list`), comma-separated',
  },
  providers: {
    type: 'string',
    arg: 'LIST',
    help: 'ONNX Runtime execution providers in order of preference (cpu, cuda, tensorrt, webgpu)',
  },
  threads: { type: 'string', arg: 'N', help: "ONNX Runtime intra-op threads (0: ONNX Runtime's default)" },
  tile: { type: 'string', arg: 'PX', help: "tile edge in input pixels (default: each network's manifest)" },
  repeat: { type: 'string', arg: 'N', help: 'runs of each measurement (the fastest and the median are reported)' },
} as const satisfies Record<string, StringFlag>;

export type CommonFlag = keyof typeof COMMON_FLAGS;

const OUTPUT_FLAGS = {
  json: { type: 'boolean', help: 'print one JSON document of the results on stdout (progress goes to stderr)' },
  baseline: {
    type: 'string',
    arg: 'FILE',
    help: "a saved --json run: print each figure beside that run's, with the ratio (this / baseline)",
  },
  help: { type: 'boolean', help: 'print this usage and exit' },
} as const satisfies Record<string, Flag>;

const DOCS_FLAGS = {
  'write-docs': {
    type: 'boolean',
    help: "also put the tables in its family's page of docs/benchmarks/ between the markers of its block",
  },
  'docs-block': { type: 'string', arg: 'NAME', help: 'with --write-docs: which of its blocks (bench/blocks.ts)' },
} as const satisfies Record<string, Flag>;

/** A common flag as one benchmark takes it: its default there, and a help line of its own if it means more. */
export interface CommonUse {
  default?: string;
  help?: string;
}

type FlagValue<F> = F extends { type: 'boolean' }
  ? boolean
  : F extends { default: string }
    ? string
    : string | undefined;

export type BenchValues<O extends Record<string, Flag>, C extends Partial<Record<CommonFlag, CommonUse>>> = {
  [K in keyof O]: FlagValue<O[K]>;
} & { [K in keyof C]: C[K] extends { default: string } ? string : string | undefined } & {
  json: boolean;
  baseline: string | undefined;
  'write-docs': boolean;
  'docs-block': string | undefined;
};

export interface BenchSpec<O extends Record<string, Flag>, C extends Partial<Record<CommonFlag, CommonUse>>> {
  /** bench/FAMILY/NAME.ts, listed in bench/catalog.ts. */
  name: string;
  /** Lines after the flags: what the benchmark prints and anything a flag's line cannot say. */
  notes?: string;
  /** Positional arguments, `ARG...` in the usage; none when absent. */
  positionals?: string;
  options: O;
  common?: C;
}

/** What a benchmark measured: the tables it prints (the docs' tables), and any data for --json. */
export interface BenchResult {
  tables?: readonly DocTable[];
  data?: unknown;
}

export interface BenchCli<V> {
  values: V;
  positionals: string[];
  /** Reports the results: the JSON document with --json, the comparison with --baseline. */
  done(result: BenchResult): Promise<void>;
}

/** A command-line mistake: one line and the usage, exit 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

const EXIT_USAGE = 2;

export function usageText(spec: BenchSpec<Record<string, Flag>, Partial<Record<CommonFlag, CommonUse>>>): string {
  const flags = allFlags(spec);
  const entry = findBenchmark(spec.name);
  const lines = [
    `usage: media-worker bench ${spec.name} [flags]${spec.positionals === undefined ? '' : ` ${spec.positionals}`}`,
    `       (or npm run bench:${spec.name} -- [flags], node dist/bench/${entry === undefined ? spec.name : benchPath(spec.name)}.js [flags])`,
    '',
    entry?.summary ?? '',
    '',
    'flags:',
  ];
  const shown = Object.entries(flags).filter(([, f]) => f.hidden !== true);
  const left = (name: string, f: Flag): string => `  --${name}${f.type === 'string' ? ` ${f.arg}` : ''}`;
  const width = Math.max(...shown.map(([name, f]) => left(name, f).length)) + 2;
  for (const [name, f] of shown) {
    const fallback =
      f.type === 'string' && f.default !== undefined && f.default !== ''
        ? ` (default ${f.default.replace(`${PACKAGE_ROOT}${path.sep}`, '')})`
        : '';
    lines.push(`${left(name, f).padEnd(width)}${f.help}${fallback}`);
  }
  if (spec.notes !== undefined) lines.push('', spec.notes.trim());
  return `${lines.join('\n')}\n`;
}

function allFlags(spec: BenchSpec<Record<string, Flag>, Partial<Record<CommonFlag, CommonUse>>>): Record<string, Flag> {
  const common = Object.fromEntries(
    Object.entries(spec.common ?? {}).map(([name, use]) => {
      const base = COMMON_FLAGS[name as CommonFlag];
      const flag: StringFlag = {
        ...base,
        help: use?.help ?? base.help,
        ...(use?.default === undefined ? {} : { default: use.default }),
      };
      return [name, flag];
    }),
  );
  const hasDocs = Object.values(BLOCKS).some((b) => b.bench === spec.name);
  return { ...spec.options, ...common, ...OUTPUT_FLAGS, ...(hasDocs ? DOCS_FLAGS : {}) };
}

/**
 * Parses argv for a benchmark, pure except for what it returns: the values, or the text to print
 * and the exit code (help, a usage error).
 */
export function parseBenchArgs<O extends Record<string, Flag>, C extends Partial<Record<CommonFlag, CommonUse>>>(
  spec: BenchSpec<O, C>,
  argv: readonly string[],
): { values: BenchValues<O, C>; positionals: string[] } | { exit: number; stdout?: string; stderr?: string } {
  const flags = allFlags(spec);
  const usage = usageText(spec);
  const options = Object.fromEntries(
    Object.entries(flags).map(([name, f]) => [
      name,
      f.type === 'string'
        ? { type: 'string' as const, ...(f.default === undefined ? {} : { default: f.default }) }
        : { type: 'boolean' as const, default: false },
    ]),
  );
  if (argv.includes('--help') || argv.includes('-h')) return { exit: 0, stdout: usage };
  try {
    const parsed = parseArgs({
      args: [...argv],
      options,
      strict: true,
      allowPositionals: spec.positionals !== undefined,
    });
    const values = parsed.values as Record<string, unknown>;
    if (values['docs-block'] !== undefined && values['write-docs'] !== true)
      throw new UsageError('--docs-block goes only with --write-docs');
    return { values: values as BenchValues<O, C>, positionals: parsed.positionals };
  } catch (err) {
    return { exit: EXIT_USAGE, stderr: `${spec.name}: ${usageLine(err)}\n\n${usage}` };
  }
}

/** parseArgs' message, which names the flag, without its advice to pass '--' (no benchmark takes positionals that look like flags). */
function usageLine(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  return message
    .split('\n')[0]!
    .replace(/\. To specify a positional argument.*$/, '')
    .replace(/\.$/, '');
}

/**
 * The command line of the running benchmark. Exits on --help or a usage error; with --json, sends
 * whatever the benchmark prints to stderr so that stdout holds the one document. A failure after
 * this prints its message (and causes) in one line each, exit 1; BENCH_STACK=1 prints the stack.
 */
export function benchCli<
  const O extends Record<string, Flag>,
  const C extends Partial<Record<CommonFlag, CommonUse>> = Record<never, never>,
>(spec: BenchSpec<O, C>, argv: readonly string[] = process.argv.slice(2)): BenchCli<BenchValues<O, C>> {
  const parsed = parseBenchArgs(spec, argv);
  if ('exit' in parsed) {
    if (parsed.stdout !== undefined) process.stdout.write(parsed.stdout);
    if (parsed.stderr !== undefined) process.stderr.write(parsed.stderr);
    process.exit(parsed.exit);
  }
  reportFailuresBriefly(spec.name);
  const machine = machineInfo();
  const writeStdout = process.stdout.write.bind(process.stdout);
  if (parsed.values.json) {
    // Progress, tables and whatever a library prints go to stderr; the document alone to stdout.
    process.stdout.write = process.stderr.write.bind(process.stderr) as typeof process.stdout.write;
  }
  return {
    values: parsed.values,
    positionals: parsed.positionals,
    async done(result) {
      const run: BenchRun = {
        bench: spec.name,
        args: [...argv],
        machine,
        tables: result.tables ?? [],
        ...(result.data === undefined ? {} : { data: result.data }),
      };
      if (parsed.values.baseline !== undefined) {
        const baseline = await readBaseline(parsed.values.baseline);
        const text = `\ncompared with ${parsed.values.baseline} (${baseline.machine.date.slice(0, 16).replace('T', ' ')} UTC, ${baseline.args.join(' ') || 'no flags'}):\n${formatComparison(compareRuns(run, baseline))}\n`;
        process.stdout.write(text);
      }
      if (parsed.values.json) writeStdout(`${JSON.stringify(run, null, 2)}\n`);
    },
  };
}

async function readBaseline(file: string): Promise<BenchRun> {
  let json: unknown;
  try {
    json = JSON.parse(await readFile(path.resolve(file), 'utf8'));
  } catch (cause) {
    throw new Error(
      `Expected --baseline ${file} to be a saved --json run but reading it failed: ${cause instanceof Error ? cause.message : String(cause)}`,
    );
  }
  const run = json as Partial<BenchRun>;
  if (
    typeof run !== 'object' ||
    run === null ||
    typeof run.bench !== 'string' ||
    !Array.isArray(run.tables) ||
    !Array.isArray(run.args)
  ) {
    throw new Error(
      `Expected --baseline ${file} to be a saved --json run (bench, args, machine, tables) but it is not`,
    );
  }
  return run as BenchRun;
}

function reportFailuresBriefly(name: string): void {
  const report = (err: unknown): void => {
    if (process.env.BENCH_STACK === '1' && err instanceof Error) process.stderr.write(`${err.stack ?? err.message}\n`);
    const lines: string[] = [];
    for (let e: unknown = err; e !== undefined && lines.length < 5; e = e instanceof Error ? e.cause : undefined) {
      lines.push(e instanceof Error ? e.message : String(e));
    }
    process.stderr.write(`${name}: ${lines.join('\n  caused by: ')}\n`);
    process.exit(1);
  };
  process.on('uncaughtException', report);
  process.on('unhandledRejection', report);
}
