/**
 * One voice on stderr per process (issue 47): human lines or JSON lines, never both. Decided here,
 * once per process: the global `--log-format` flag, else LOG_FORMAT, else by the command: human for
 * the one-off commands (on a terminal, a pipe, in CI or under systemd alike), JSON for the daemons
 * (`serve`, `gateway`). cli/voice.ts speaks it; this module imports only logging/index.ts, which
 * imports nothing, so the start-up signal handlers of `serve` can use it before anything is loaded.
 */
import { givenLogFormat, givenLogLevel, type LogFormatSetting } from '../logging/index.js';

export type LogFormat = 'human' | 'json';

/** The values of the flag; LOG_FORMAT also takes `auto` (by the command), its default. */
export const LOG_FORMATS = ['human', 'json'] as const satisfies readonly LogFormat[];

/** The commands that run as daemons: JSON lines unless told otherwise. */
export const DAEMON_COMMANDS: readonly string[] = ['serve', 'gateway'];

let flag: LogFormat | undefined;
let daemon = false;

/**
 * What the command line says before the command runs (its preAction hook): the `--log-format` flag,
 * and whether the command is a daemon. `cliContext({ daemon: true })` says the latter too.
 */
export function chooseLogFormat(choice: { flag?: LogFormat | undefined; daemon?: boolean }): void {
  if ('flag' in choice) flag = choice.flag;
  if (choice.daemon !== undefined) daemon = choice.daemon;
}

/**
 * The process's log format: the flag, else the setting (LOG_FORMAT, read and checked by the caller;
 * by default the variable as it stands, when it is one of its values), `auto` by the command.
 */
export function logFormat(setting: LogFormatSetting | undefined = givenLogFormat()): LogFormat {
  const chosen = flag ?? setting ?? 'auto';
  if (chosen !== 'auto') return chosen;
  return daemon ? 'json' : 'human';
}

/**
 * pino's level for the format: human lines show warnings and errors unless LOG_LEVEL is set (the
 * command's own lines, progress and the estimate, are not records and always show); JSON lines the
 * configured level (LOG_LEVEL, info by default).
 */
export function logLevelFor(format: LogFormat, configured: string, env: NodeJS.ProcessEnv = process.env): string {
  return format === 'human' && (givenLogLevel(env) ?? '') === '' ? 'warn' : configured;
}
