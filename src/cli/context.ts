import { findUnknownSettings, loadConfig, type Config, type SettingKey } from '../config.js';
import { allowModelFetching } from '../inference/index.js';
import type { Logger } from '../logger.js';
import { chooseLogFormat, logFormat, logLevelFor } from './log-format.js';
import { openVoice } from './voice.js';
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
 * stderr speaks one way (cli/log-format.ts decides, cli/voice.ts speaks): short human lines for a
 * one-off command, warnings and errors only unless LOG_LEVEL says otherwise, on a terminal or a pipe
 * alike; JSON lines for the daemons (`daemon`) or when `--log-format json` or LOG_FORMAT says so.
 */
export function cliContext(
  overrides: Partial<Record<SettingKey, string>> = {},
  opts: { daemon?: boolean } = {},
): CliContext {
  if (opts.daemon === true) chooseLogFormat({ daemon: true });
  // A one-off command runs for the person at the keyboard: networks whose licence forbids commercial
  // use run there with a line naming the licence; MEDIA_WORKER_ALLOW_NONCOMMERCIAL_MODELS binds the daemon.
  const config = loadConfig(
    process.env,
    opts.daemon === true ? overrides : { allowNoncommercialModels: '1', ...overrides },
  );
  const format = logFormat(config.logFormat);
  const { logger } = openVoice(format, logLevelFor(format, config.logLevel));
  allowModelFetching(config.fetchModels);
  for (const unknown of findUnknownSettings(process.env)) {
    logger.warn({ variable: unknown.name, closest: unknown.closest }, unknownSettingMessage(unknown));
  }
  return { config, logger };
}
