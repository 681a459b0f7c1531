import { findUnknownSettings, loadConfig, type Config, type SettingKey } from '../config.js';
import { allowModelFetching } from '../inference/npm-tarball.js';
import { createLogger, type Logger } from '../logger.js';
import { unknownSettingMessage } from '../settings-table.js';

export interface CliContext {
  config: Config;
  logger: Logger;
}

/**
 * Config from the environment (flags given as overrides), and the root logger on stderr. Variables
 * with a project prefix that no setting reads (a misspelling, a setting of another name) are warned
 * about, naming the closest setting: they would otherwise be silently ignored.
 */
export function cliContext(overrides: Partial<Record<SettingKey, string>> = {}): CliContext {
  const config = loadConfig(process.env, overrides);
  const logger = createLogger(config.logLevel);
  allowModelFetching(config.fetchModels);
  for (const unknown of findUnknownSettings(process.env)) {
    logger.warn({ variable: unknown.name, closest: unknown.closest }, unknownSettingMessage(unknown));
  }
  return { config, logger };
}
