import { pino, type Logger } from 'pino';

/**
 * The one root logger. Logs go to stderr so that commands printing JSON on stdout (quote, run)
 * stay machine-readable; jobs log through `logger.child({ taskId, model })`. With `lines`, each
 * JSON record is handed over as a string instead (the command line turns them into human lines).
 */
export function createLogger(
  level: string,
  destination: 'stderr' | 'stdout' = 'stderr',
  lines?: (json: string) => void,
): Logger {
  const base = { level, base: { service: 'media-worker' } };
  if (lines !== undefined) {
    // pino writes one record per call, ending in a newline.
    return pino(base, {
      write: (chunk: string) =>
        chunk
          .split('\n')
          .filter((l) => l !== '')
          .forEach(lines),
    });
  }
  return pino(base, pino.destination(destination === 'stderr' ? 2 : 1));
}

export type { Logger };
