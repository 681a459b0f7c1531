#!/usr/bin/env node
/**
 * media-worker command line: one entry, one module per command under cli/commands/.
 */
import { Command } from 'commander';
import { PACKAGE_VERSION } from './paths.js';
import { registerAccounts } from './cli/commands/accounts.js';
import { registerConfig } from './cli/commands/config.js';
import { registerGateway } from './cli/commands/gateway.js';
import { registerLipsync } from './cli/commands/lipsync.js';
import { registerModels } from './cli/commands/models.js';
import { registerMusic } from './cli/commands/music.js';
import { registerQuote } from './cli/commands/quote.js';
import { registerRun } from './cli/commands/run.js';
import { registerServe } from './cli/commands/serve.js';
import { registerUpscaleCommands } from './cli/commands/upscale.js';

const program = new Command('media-worker')
  .description('Media jobs on a GPU host: image and video upscaling, lip-sync, music; from the command line or NATS JetStream.')
  .version(PACKAGE_VERSION)
  .showHelpAfterError('(add --help for usage)');

registerQuote(program);
registerRun(program);
registerServe(program);
registerGateway(program);
registerAccounts(program);
registerUpscaleCommands(program);
registerLipsync(program);
registerMusic(program);
registerModels(program);
registerConfig(program);

await program.parseAsync(process.argv);
