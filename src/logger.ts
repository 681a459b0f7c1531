import { pino, type Logger } from 'pino';

/**
 * The one root logger. Logs go to stderr so that commands printing JSON on stdout (quote, run)
 * stay machine-readable; jobs log through `logger.child({ taskId, model })`.
 */
export function createLogger(level: string, destination: 'stderr' | 'stdout' = 'stderr'): Logger {
  return pino({ level, base: { service: 'media-worker' } }, pino.destination(destination === 'stderr' ? 2 : 1));
}

export type { Logger };
