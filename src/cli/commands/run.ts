import type { Command } from 'commander';
import { parseJob } from '../../jobs/index.js';
import { cliContext } from '../context.js';
import { EXIT_OK, reportFailure } from '../exit.js';
import { readJobArgument } from '../job-arg.js';
import { runLocally } from '../local-run.js';
import { definedFields } from '../../defined-fields.js';

export function registerRun(program: Command): void {
  program
    .command('run')
    .summary('quote and process a job locally, printing the completed task object')
    .description(
      'Quotes JOB (as `quote` does), processes it on this machine and prints the completed task ' +
        'object of the spec ({"id","model","status":"completed","result":{"url",...},"creditsUsed","createdAt"}) ' +
        'with the local path of the result as its url. A rejected or failed job prints ' +
        '{"error":{"code","status","message"}} and exits 2.',
    )
    .argument('<JOB>', 'job JSON inline, @file.json, or - for standard input')
    .option('-o, --output <PATH>', 'result file, or a directory for it (default: current directory)')
    .action(async (jobArg: string, opts: { output?: string }) => {
      try {
        const ctx = cliContext();
        const job = parseJob(await readJobArgument(jobArg));
        const task = await runLocally(job, ctx, {
          defaultStem: job.id ?? `${job.model}-${Date.now()}`,
          ...definedFields({ output: opts.output }),
        });
        process.stdout.write(`${JSON.stringify(task)}\n`);
        process.exitCode = EXIT_OK;
      } catch (err) {
        process.exitCode = reportFailure(err);
      }
    });
}
