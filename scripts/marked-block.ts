/**
 * The generated parts of hand-written documents (the settings reference of docs/configuration.md,
 * the benchmark tables of docs/benchmarks/*.md) sit between a start and an end marker; this replaces
 * what is between them and leaves the text around them alone. A missing or repeated marker is an
 * error naming it, so a generator never writes to the wrong place or silently writes nothing.
 */

/** `text` with `body` between `start` and `end` (each on its own line); `where` names the file in errors. */
export function replaceMarkedBlock(text: string, start: string, end: string, body: string, where: string): string {
  const from = text.indexOf(start);
  const to = text.indexOf(end);
  if (from < 0 || to < from) throw new Error(`Expected ${where} to contain ${start} and, after it, ${end}`);
  if (text.includes(start, from + start.length) || text.includes(end, to + end.length)) {
    throw new Error(`Expected ${where} to contain ${start} … ${end} once but it repeats a marker`);
  }
  return `${text.slice(0, from + start.length)}\n${body}\n${text.slice(to)}`;
}
