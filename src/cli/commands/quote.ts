import type { Command } from 'commander';
import { quoteOnly } from '../../app/index.js';
import { parseJob } from '../../jobs/index.js';
import { cliContext } from '../context.js';
import { EXIT_OK, reportFailure } from '../exit.js';
import { readJobArgument } from '../job-arg.js';

export function registerQuote(program: Command): void {
  program
    .command('quote')
    .summary('validate, probe and price a job without processing it')
    .description(
      'Validates JOB against the spec, fetches and probes its inputs, and prints the price as JSON: ' +
        '{"model","creditsUsed","input":{...spec echo fields}}. A rejected job prints ' +
        '{"error":{"code","status","message"}} and exits 2; any other failure exits 1. ' +
        'Local file paths are accepted for inputs here (jobs from NATS only take https URLs).',
    )
    .argument('<JOB>', 'job JSON inline, @file.json, or - for standard input')
    .action(async (jobArg: string) => {
      process.exitCode = await quoteCommand(jobArg);
    });
}

async function quoteCommand(jobArg: string): Promise<number> {
  try {
    const { config } = cliContext();
    const job = parseJob(await readJobArgument(jobArg));
    const quote = await quoteOnly(job, config, { taskId: job.id ?? 'quote', allowLocalPaths: true });
    process.stdout.write(`${JSON.stringify(quote)}\n`);
    return EXIT_OK;
  } catch (err) {
    return reportFailure(err);
  }
}
