import type { Command } from 'commander';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { BENCHMARKS, FAMILIES, benchPath, findBenchmark } from '../../../bench/catalog.js';
import { EXIT_REJECTED } from '../exit.js';
import { voice } from '../voice.js';

/** dist/bench/FAMILY/NAME.js beside this build's dist/src/ (the benchmarks ship in the same build). */
function benchScript(name: string): string {
  return fileURLToPath(new URL(`../../../bench/${benchPath(name)}.js`, import.meta.url));
}

/** The benchmarks by family: a heading line per family (its title and folder), then one line each. */
function listing(): string {
  const width = Math.max(...BENCHMARKS.map((b) => b.name.length)) + 2;
  const families = FAMILIES.map((f) => {
    const lines = BENCHMARKS.filter((b) => b.family === f.id).map((b) => `  ${b.name.padEnd(width)}${b.summary}`);
    return [`${f.title} (bench/${f.id}/)`, ...lines].join('\n');
  });
  return `${families.join('\n\n')}\n`;
}

export function registerBench(program: Command): void {
  program
    .command('bench')
    .summary('list the benchmarks, or run one')
    .description(
      'Without NAME, lists the benchmarks by family, one line each. With NAME, runs bench/FAMILY/NAME with the flags that follow ' +
        '(`media-worker bench NAME --help` for them; the same as `npm run bench:NAME -- FLAGS`). Common flags mean the same ' +
        'in every benchmark: --model, --providers, --threads, --tile, --repeat, --json (one JSON document on stdout), ' +
        '--baseline FILE (a saved --json run: each figure beside it, with the ratio), --write-docs.',
    )
    .argument('[NAME]', 'the benchmark')
    .argument('[FLAGS...]', "the benchmark's flags")
    .helpOption(false)
    .allowUnknownOption(true)
    .passThroughOptions(true)
    .action(async (name: string | undefined, flags: string[]) => {
      if (name === undefined || name === '--help' || name === '-h') {
        process.stdout.write(listing());
        return;
      }
      if (findBenchmark(name) === undefined) {
        const message = `Unknown benchmark ${JSON.stringify(name)}`;
        voice().say(`${message}; the benchmarks:\n${listing().trimEnd()}`, {
          level: 'error',
          msg: message,
          benchmarks: BENCHMARKS.map((b) => b.name),
        });
        process.exitCode = EXIT_REJECTED;
        return;
      }
      const script = benchScript(name);
      if (!existsSync(script)) {
        const message = `Expected the built benchmark ${script} (run npm run build) but it is missing`;
        voice().say(message, { level: 'error', msg: message });
        process.exitCode = EXIT_REJECTED;
        return;
      }
      // Its own process, as npm run bench:NAME runs it: the benchmark owns stdout, stderr and the exit code.
      const child = spawn(process.execPath, [script, ...flags], { stdio: 'inherit' });
      process.exitCode = await new Promise<number>((resolve) => {
        child.on('error', () => resolve(1));
        child.on('exit', (code) => resolve(code ?? 1));
      });
    });
}
