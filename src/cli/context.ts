import { findUnknownSettings, loadConfig, type Config, type SettingKey } from '../config.js';
import { allowModelFetching } from '../inference/index.js';
import { createLogger, type Logger } from '../logger.js';
import { formatLogLine } from './human-log.js';
import { stderrTerminal } from './terminal.js';
import { unknownSettingMessage } from '../settings-table.js';

export interface CliContext {
  config: Config;
  logger: Logger;
}

/**
 * Config from the environment (flags given as overrides), and the root logger on stderr. Variables
 * with a project prefix that no setting reads (a misspelling, a setting of another name) are warned
 * about, naming the closest setting: they would otherwise be silently ignored.
 *
 * Logs are JSON for daemons and pipes; a one-off command on an interactive terminal writes short
 * human lines, warnings and errors only unless LOG_LEVEL says otherwise (LOG_FORMAT decides).
 */
export function cliContext(overrides: Partial<Record<SettingKey, string>> = {}, opts: { daemon?: boolean } = {}): CliContext {
  const config = loadConfig(process.env, overrides);
  const human = config.logFormat === 'human' || (config.logFormat === 'auto' && opts.daemon !== true && Boolean(process.stderr.isTTY));
  const level = human && process.env['LOG_LEVEL'] === undefined ? 'warn' : config.logLevel;
  const logger = human ? createLogger(level, 'stderr', (json) => stderrTerminal().line(formatLogLine(json))) : createLogger(level);
  allowModelFetching(config.fetchModels);
  for (const unknown of findUnknownSettings(process.env)) {
    logger.warn({ variable: unknown.name, closest: unknown.closest }, unknownSettingMessage(unknown));
  }
  return { config, logger };
}
