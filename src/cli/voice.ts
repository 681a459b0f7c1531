/**
 * The process's one voice on stderr, in the format cli/log-format.ts decides: pino's records and the
 * command line's own lines (the estimate, a failure, a warning) as short human lines that keep the
 * progress bar whole, or every one of them as a JSON line through the same pino logger. Progress
 * goes the same way (cli/progress.ts, `createCliProgress`).
 */
import { givenLogLevel, LOG_LEVELS } from '../logging/index.js';
import { createLogger, type Logger } from '../logger.js';
import { formatLogLine } from './human-log.js';
import { logFormat, logLevelFor, type LogFormat } from './log-format.js';
import { stderrTerminal } from './terminal.js';

/** A line's record in JSON mode: its message and fields, at info unless said. */
export interface VoiceRecord {
  msg: string;
  level?: 'info' | 'warn' | 'error';
  [field: string]: unknown;
}

export interface Voice {
  readonly format: LogFormat;
  /** The root logger: JSON lines (json), or each record as a short human line (human). */
  readonly logger: Logger;
  /** `human` as it is (human mode), or `record` as a JSON line (json mode): never both. */
  say(human: string, record: VoiceRecord): void;
}

let current: Voice | undefined;

/** The process's voice from now on, with its root logger (cliContext opens it once the settings are read). */
export function openVoice(format: LogFormat, level: string): Voice {
  const logger =
    format === 'human'
      ? createLogger(level, 'stderr', (json) => stderrTerminal().line(formatLogLine(json)))
      : createLogger(level);
  current = {
    format,
    logger,
    say(human, { msg, level: recordLevel = 'info', ...fields }) {
      if (format === 'human') stderrTerminal().line(human);
      // An error said here is why the command fails: LOG_LEVEL=silent or fatal must not hide it.
      else
        (recordLevel === 'error' && !logger.isLevelEnabled('error') ? createLogger('error') : logger)[recordLevel](
          fields,
          msg,
        );
    },
  };
  return current;
}

/**
 * The voice cliContext opened; before it (a setting that does not parse) or without it (a command
 * that reads no settings), one from the flag and the variables as they stand.
 */
export function voice(): Voice {
  if (current !== undefined) return current;
  const format = logFormat();
  const given = givenLogLevel();
  return openVoice(
    format,
    logLevelFor(format, given !== undefined && (LOG_LEVELS as readonly string[]).includes(given) ? given : 'info'),
  );
}
