import { SettingsError } from '../settings-table.js';
import { givenLogLevel } from '../logging/index.js';
import { errorBody, isJobError } from '../jobs/index.js';
import { UsageError } from './job-arg.js';
import { voice } from './voice.js';

/** Exit statuses shared by every command: 0 done, 2 the job was rejected (spec error code), 1 anything else. */
export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
export const EXIT_REJECTED = 2;

/**
 * Prints a failure the way every command does: a JobError as the spec's error body on stdout (so a
 * script can read the code), anything else as one line on stderr in the process's log format
 * (cli/voice.ts): `media-worker: message`, or an error record.
 */
export function reportFailure(err: unknown): number {
  if (isJobError(err)) {
    process.stdout.write(`${JSON.stringify(errorBody(err))}\n`);
    return EXIT_REJECTED;
  }
  if (err instanceof SettingsError || err instanceof UsageError) {
    voice().say(`media-worker: ${err.message}`, { level: 'error', msg: err.message });
    return EXIT_FAILURE;
  }
  // The stack helps a developer, not an operator: shown with LOG_LEVEL=debug or trace.
  const verbose = ['debug', 'trace'].includes(givenLogLevel() ?? '');
  const message = err instanceof Error ? err.message : String(err);
  const stack = verbose && err instanceof Error ? err.stack : undefined;
  // As a record, the error itself under `err` (pino serializes it, stack included) when the stack is wanted.
  voice().say(`media-worker: ${stack ?? message}`, {
    level: 'error',
    msg: message,
    ...(stack === undefined ? {} : { err }),
  });
  return EXIT_FAILURE;
}
