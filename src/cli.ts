#!/usr/bin/env node
/**
 * media-worker command line: one entry, one module per command under cli/commands/.
 */
import { Command } from 'commander';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { PACKAGE_ROOT } from './paths.js';
import { registerConfig } from './cli/commands/config.js';
import { registerModels } from './cli/commands/models.js';
import { registerQuote } from './cli/commands/quote.js';
import { registerRun } from './cli/commands/run.js';
import { registerUpscaleImage } from './cli/commands/upscale-image.js';

const pkg = JSON.parse(readFileSync(path.join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string };

const program = new Command('media-worker')
  .description('Media jobs on a GPU host: image and video upscaling, lip-sync, music; from the command line or NATS JetStream.')
  .version(pkg.version)
  .showHelpAfterError('(add --help for usage)');

registerQuote(program);
registerRun(program);
registerUpscaleImage(program);
registerModels(program);
registerConfig(program);

await program.parseAsync(process.argv);
