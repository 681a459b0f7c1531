/**
 * media-worker command line: one module per command under cli/commands/. Loaded by src/cli.ts.
 */
import { Command, Help, Option } from 'commander';
import { PACKAGE_VERSION } from '../paths.js';
import { registerAccounts } from './commands/accounts.js';
import { registerBench } from './commands/bench.js';
import { registerConfig } from './commands/config.js';
import { registerGateway } from './commands/gateway.js';
import { registerLipsync } from '../kinds/lipsync/command.js';
import { registerModels } from './commands/models.js';
import { registerProvision } from './commands/provision.js';
import { registerMusic } from '../kinds/music/command.js';
import { registerMusicVideo } from '../kinds/music-video/command.js';
import { registerQuote } from './commands/quote.js';
import { registerRun } from './commands/run.js';
import { registerServe } from './commands/serve.js';
import { registerTasks } from './commands/tasks.js';
import { registerUpscaleCommands } from './commands/upscale.js';
import { chooseLogFormat, DAEMON_COMMANDS, LOG_FORMATS, type LogFormat } from './log-format.js';

const program = new Command('media-worker')
  .description(
    'Media jobs on a GPU host: image and video upscaling, lip-sync, music; from the command line or NATS JetStream.',
  )
  .version(PACKAGE_VERSION)
  .showHelpAfterError('(add --help for usage)')
  // Options after a command name are that command's: `bench NAME` passes them all to the benchmark.
  .enablePositionalOptions()
  .addOption(logFormatOption());

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

// Given after a command's name too (`upscale-image --log-format json`): every command takes it, hidden
// from its help, but `bench`, which hands every flag after its name to the benchmark.
for (const command of descendants(program))
  if (command.name() !== 'bench') command.addOption(logFormatOption().hideHelp());
// A hidden option alone does not make a listed command read "[options]": the help stays as it was.
for (const command of [program, ...descendants(program)])
  command.configureHelp({ subcommandTerm: termWithoutHiddenOptions });
// The one decision of the log format (cli/log-format.ts), before any command's action.
program.hook('preAction', (_program, action) => {
  chooseLogFormat({
    // The command's own flag first (`--log-format json run --log-format human` is human), then the root's.
    flag:
      action.opts<{ logFormat?: LogFormat }>().logFormat ??
      action.optsWithGlobals<{ logFormat?: LogFormat }>().logFormat,
    daemon: action.parent === program && DAEMON_COMMANDS.includes(action.name()),
  });
});

await program.parseAsync(process.argv);

function logFormatOption(): Option {
  return new Option(
    '--log-format <FORMAT>',
    'stderr as human lines or as JSON lines (default: LOG_FORMAT; human, json for serve and gateway)',
  ).choices([...LOG_FORMATS]);
}

function termWithoutHiddenOptions(command: Command): string {
  const term = new Help().subcommandTerm(command);
  return command.options.some((o) => !o.hidden) ? term : term.replace(' [options]', '');
}

function descendants(command: Command): Command[] {
  return command.commands.flatMap((child) => [child, ...descendants(child)]);
}
