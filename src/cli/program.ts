/**
 * media-worker command line: one module per command under cli/commands/. Loaded by src/cli.ts.
 */
import { Command } from 'commander';
import { PACKAGE_VERSION } from '../paths.js';
import { registerAccounts } from './commands/accounts.js';
import { registerBench } from './commands/bench.js';
import { registerConfig } from './commands/config.js';
import { registerGateway } from './commands/gateway.js';
import { registerLipsync } from './commands/lipsync.js';
import { registerModels } from './commands/models.js';
import { registerProvision } from './commands/provision.js';
import { registerMusic } from './commands/music.js';
import { registerMusicVideo } from './commands/music-video.js';
import { registerQuote } from './commands/quote.js';
import { registerRun } from './commands/run.js';
import { registerServe } from './commands/serve.js';
import { registerTasks } from './commands/tasks.js';
import { registerUpscaleCommands } from './commands/upscale.js';

const program = new Command('media-worker')
  .description('Media jobs on a GPU host: image and video upscaling, lip-sync, music; from the command line or NATS JetStream.')
  .version(PACKAGE_VERSION)
  .showHelpAfterError('(add --help for usage)')
  // Options after a command name are that command's: `bench NAME` passes them all to the benchmark.
  .enablePositionalOptions();

registerQuote(program);
registerRun(program);
registerServe(program);
registerGateway(program);
registerTasks(program);
registerAccounts(program);
registerProvision(program);
registerUpscaleCommands(program);
registerLipsync(program);
registerMusic(program);
registerMusicVideo(program);
registerModels(program);
registerConfig(program);
registerBench(program);

await program.parseAsync(process.argv);
