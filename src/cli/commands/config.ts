import type { Command } from 'commander';
import { allSettingsReference } from '../../config.js';
import { cliContext } from '../context.js';
import { EXIT_OK, reportFailure } from '../exit.js';

export function registerConfig(program: Command): void {
  program
    .command('config')
    .summary('print the effective settings, or the reference of all settings')
    .description('Prints the settings read from the environment as JSON (exits 1 naming the variable when one is invalid).')
    .option('--reference', 'print the Markdown table of every setting instead')
    .action((opts: { reference?: boolean }) => {
      if (opts.reference === true) {
        process.stdout.write(`${allSettingsReference()}\n`);
        return;
      }
      try {
        process.stdout.write(`${JSON.stringify(cliContext().config, null, 2)}\n`);
        process.exitCode = EXIT_OK;
      } catch (err) {
        process.exitCode = reportFailure(err);
      }
    });
}
