/**
 * The logging variables as the command line reads them when it opens its logger, also before the
 * settings are loaded (a setting that does not parse is reported in the format asked for). Imports
 * nothing, so the start-up signal handlers of `serve` (cli/log-format.ts) can use it before anything
 * is loaded; the rows (schema, default, doc) are in settings.ts.
 */

/** pino's levels, as LOG_LEVEL takes them. */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** The words of LOG_FORMAT (`auto`: by the command). */
export const LOG_FORMAT_SETTINGS = ['auto', 'json', 'human'] as const;
export type LogFormatSetting = (typeof LOG_FORMAT_SETTINGS)[number];

/** LOG_LEVEL as set in `env`, unchecked (undefined when unset). */
export function givenLogLevel(env: NodeJS.ProcessEnv = process.env): string | undefined {
  return env['LOG_LEVEL'];
}

/** LOG_FORMAT as set in `env` when it is one of its words; undefined otherwise (the settings report a bad one). */
export function givenLogFormat(env: NodeJS.ProcessEnv = process.env): LogFormatSetting | undefined {
  const value = env['LOG_FORMAT'];
  return LOG_FORMAT_SETTINGS.find((word) => word === value);
}
