import { Option, type Command } from 'commander';
import path from 'node:path';
import { parseJob, UPSCALE_FACTORS, type UpscaleFactor } from '../jobs/index.js';
import { cliContext } from './context.js';
import { EXIT_OK, reportFailure } from './exit.js';
import { parsePositiveInt } from './flags.js';
import { estimateLine, estimateUpscale, expectedSeconds, firstUseLine } from './estimate.js';
import { hardwareFor, runLocally } from './local-run.js';
import { refuseMisnamedOutput } from './output-name.js';
import { voice } from './voice.js';
import { definedFields } from '../defined-fields.js';
import { HDR_MODES } from '../video/settings.js';

/** One upscale command: the image and the video upscale kinds each declare theirs (src/kinds/<kind>/command.ts). */
export interface UpscaleCommandSpec {
  name: 'upscale-image' | 'upscale-video';
  model: 'vendor-image-upscale' | 'vendor-video-upscale';
  urlField: 'image_url' | 'video_url';
  summary: string;
  description: string;
  /** Input used when none is given (the README's first command). */
  defaultInput?: string;
  /** Takes the job's `hdr` field (video only). */
  hdrChoice?: true;
}

/** Registers one upscale command on the program: the flags, the local run and the progress both kinds share. */
export function registerUpscaleCommand(program: Command, spec: UpscaleCommandSpec): void {
  const command = program
    .command(spec.name)
    .summary(spec.summary)
    .description(
      `${spec.description} First prints the estimated processing time on this machine (and the faster network's, ` +
        "when it is much shorter), then runs however long it takes; `run` and the daemon keep the service's limit " +
        '(JOB_TOO_COSTLY). Prints the completed task object as JSON.',
    );
  if (spec.defaultInput === undefined) command.argument('<INPUT>', 'file or https URL');
  else command.argument('[INPUT]', 'file or https URL', spec.defaultInput);
  command
    .addOption(new Option('-f, --factor <FACTOR>', 'upscale factor').choices([...UPSCALE_FACTORS]).default('2'))
    .option('-m, --model <NAME>', 'super-resolution model (see `media-worker models list`); default per factor')
    .option('-t, --tile <N>', "tile side in input pixels (default: the model manifest's)", parsePositiveInt('--tile'))
    .option(
      '-o, --output <PATH>',
      'result file, or a directory for it (an existing one, or any path ending in /, created if missing; default: <input name>-x<factor>.<ext> here)',
    );
  if (spec.hdrChoice === true) {
    command.addOption(
      new Option(
        '--hdr <MODE>',
        'HDR (PQ, HLG) input kept as 10-bit HDR, or tone-mapped to SDR (default: MEDIA_WORKER_VIDEO_HDR)',
      ).choices([...HDR_MODES]),
    );
  }
  command.action(
    async (input: string, opts: { factor: string; model?: string; tile?: number; output?: string; hdr?: string }) => {
      try {
        const ctx = cliContext();
        const job = parseJob({
          model: spec.model,
          input: { [spec.urlField]: input, upscale_factor: opts.factor, ...definedFields({ hdr: opts.hdr }) },
        });
        const stem = `${path.parse(new URL(input, 'file:///').pathname).name || 'output'}-x${opts.factor}`;
        // Before the estimate: a file named for another format is refused before anything is printed.
        await refuseMisnamedOutput(job, opts.output);
        const hardware = await hardwareFor(job, ctx);
        const estimate = await estimateUpscale(job, opts.factor as UpscaleFactor, hardware.config, opts.model);
        const line = estimateLine(estimate);
        voice().say(line, { msg: line, estimate });
        // Making the network's file on first use is a pause of its own: said before it happens.
        const firstUse = await firstUseLine(hardware.config, estimate.model);
        if (firstUse !== undefined) voice().say(firstUse, { msg: firstUse, network: estimate.model });
        const task = await runLocally(job, ctx, {
          hardware,
          estimateSeconds: expectedSeconds(estimate),
          unlimited: true,
          defaultStem: stem,
          ...definedFields({ output: opts.output, modelName: opts.model, tile: opts.tile }),
        });
        process.stdout.write(`${JSON.stringify(task)}\n`);
        process.exitCode = EXIT_OK;
      } catch (err) {
        process.exitCode = reportFailure(err);
      }
    },
  );
}
