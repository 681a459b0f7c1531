import { Option, type Command } from 'commander';
import path from 'node:path';
import { parseJob, UPSCALE_FACTORS } from '../../jobs/index.js';
import { DEFAULT_SAMPLE_IMAGE } from '../../paths.js';
import { cliContext } from '../context.js';
import { EXIT_OK, reportFailure } from '../exit.js';
import { parsePositiveInt } from '../flags.js';
import { runLocally } from '../local-run.js';

export function registerUpscaleImage(program: Command): void {
  program
    .command('upscale-image')
    .summary('upscale one image (JPEG, PNG or WebP) with the super-resolution network')
    .description(
      'Upscales INPUT by 1, 2 or 4 and writes the result in the same format. Factor 1 enhances at the\n' +
        'same resolution (x2 network, then a Lanczos downscale). Without INPUT, the bundled sample photo\n' +
        `is used (${path.relative(process.cwd(), DEFAULT_SAMPLE_IMAGE)}). Prints the completed task object as JSON.`,
    )
    .argument('[INPUT]', 'image file or https URL', DEFAULT_SAMPLE_IMAGE)
    .addOption(new Option('-f, --factor <FACTOR>', 'upscale factor').choices([...UPSCALE_FACTORS]).default('2'))
    .option('-m, --model <NAME>', 'super-resolution model (see `media-worker models list`); default per factor')
    .option('-t, --tile <N>', 'tile side in input pixels (default: the model manifest\'s)', parsePositiveInt('--tile'))
    .option('-o, --output <PATH>', 'result file, or a directory for it (default: <input name>-x<factor>.<ext> here)')
    .action(async (input: string, opts: { factor: string; model?: string; tile?: number; output?: string }) => {
      try {
        const ctx = cliContext();
        const job = parseJob({ model: 'vendor-image-upscale', input: { image_url: input, upscale_factor: opts.factor } });
        const stem = `${path.parse(new URL(input, 'file:///').pathname).name || 'image'}-x${opts.factor}`;
        const task = await runLocally(job, ctx, {
          defaultStem: stem,
          ...(opts.output === undefined ? {} : { output: opts.output }),
          ...(opts.model === undefined ? {} : { modelName: opts.model }),
          ...(opts.tile === undefined ? {} : { tile: opts.tile }),
        });
        process.stdout.write(`${JSON.stringify(task)}\n`);
        process.exitCode = EXIT_OK;
      } catch (err) {
        process.exitCode = reportFailure(err);
      }
    });
}
