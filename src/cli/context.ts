import { loadConfig, type Config, type SettingKey } from '../config.js';
import { createLogger, type Logger } from '../logger.js';

export interface CliContext {
  config: Config;
  logger: Logger;
}

/** Config from the environment (flags given as overrides), and the root logger on stderr. */
export function cliContext(overrides: Partial<Record<SettingKey, string>> = {}): CliContext {
  const config = loadConfig(process.env, overrides);
  return { config, logger: createLogger(config.logLevel) };
}
