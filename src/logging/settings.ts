/**
 * The logging settings: the level and the format of the lines on stderr. The command line opens its
 * logger with them (cli/context.ts); before the settings are loaded it reads the two variables
 * through index.ts.
 */
import { oneOfSetting, setting } from '../settings-table.js';
import { LOG_FORMAT_SETTINGS, LOG_LEVELS } from './index.js';

export { LOG_LEVELS } from './index.js';

export const LOGGING_SETTINGS = {
  logLevel: setting({
    env: 'LOG_LEVEL',
    schema: oneOfSetting(LOG_LEVELS),
    default: 'info',
    doc: 'pino log level.',
  }),
  logFormat: setting({
    env: 'LOG_FORMAT',
    schema: oneOfSetting(LOG_FORMAT_SETTINGS),
    default: 'auto',
    doc: 'Log lines on stderr, one format at a time: `json` (pino records; progress and messages as records too), `human` (short lines that keep the progress bar whole; level warn unless LOG_LEVEL is set), `auto`: human for the one-off commands, on a terminal or a pipe alike, json for `serve` and `gateway`. The `--log-format` flag overrides it.',
  }),
} as const;
