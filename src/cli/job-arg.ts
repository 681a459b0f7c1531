import { readFile } from 'node:fs/promises';

/**
 * A JOB argument is inline JSON, `@path/to/job.json`, or `-` for standard input. Returns the parsed
 * value untouched: the job schemas decide whether it is a job.
 */
export async function readJobArgument(arg: string, stdin: NodeJS.ReadableStream = process.stdin): Promise<unknown> {
  const text = arg === '-' ? await readAll(stdin) : arg.startsWith('@') ? await readFile(arg.slice(1), 'utf8') : arg;
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    const where = arg === '-' ? 'standard input' : arg.startsWith('@') ? arg.slice(1) : 'the JOB argument';
    throw new UsageError(`Expected JSON in ${where} but it did not parse: ${(err as Error).message}`);
  }
}

async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  return Buffer.concat(chunks).toString('utf8');
}

/** A mistake in how the command was called (exit 1, message on stderr). */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}
