/**
 * One wording for every rejection message of the jobs layer:
 *   Expected <what> to be <expectation> but received <what came>
 * so that a reader (and a test) can rely on the shape, e.g.
 *   Expected upscale_factor to be one of "1", "2", "4" but received 2 (number)
 */

const MAX_QUOTED_CHARS = 40;

/** A short, unambiguous rendering of a JSON value for a message. */
export function describeValue(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  switch (typeof value) {
    case 'string': {
      const chars = [...value];
      const shown = chars.length > MAX_QUOTED_CHARS ? `${chars.slice(0, MAX_QUOTED_CHARS).join('')}…` : value;
      return `${JSON.stringify(shown)} (string)`;
    }
    case 'number':
    case 'boolean':
    case 'bigint':
      return `${String(value)} (${typeof value})`;
    case 'object':
      return 'an object';
    default:
      return `a ${typeof value}`;
  }
}

/** `one of "a", "b", "c"` */
export function oneOf(values: readonly string[]): string {
  return `one of ${values.map((v) => JSON.stringify(v)).join(', ')}`;
}

/** The message for a value that did not meet an expectation. */
export function expectedValue(subject: string, expectation: string, received: unknown): string {
  return expectedText(subject, expectation, describeValue(received));
}

/** The same wording when what was received is better described in words (a count, a measurement). */
export function expectedText(subject: string, expectation: string, received: string): string {
  return `Expected ${subject} to be ${expectation} but received ${received}`;
}

/** Length in characters as a person counts them: Unicode code points, so an emoji is one. */
export function charCount(text: string): number {
  let count = 0;
  // Iterating a string walks code points, not UTF-16 units.
  for (const _ of text) count += 1;
  return count;
}
