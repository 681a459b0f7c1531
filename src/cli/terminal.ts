/**
 * stderr shared by the progress bar and log lines: a log line printed while a bar is drawn first
 * clears the bar, then the bar is drawn again below it, so neither breaks the other.
 */
export interface TerminalLine {
  readonly isTty: boolean;
  /** Draws (or replaces) the progress bar on the current line. */
  bar(text: string): void;
  /** Removes the bar; later lines start at the margin. */
  clearBar(): void;
  /** A whole line above the bar. */
  line(text: string): void;
}

const CLEAR = '\r\x1b[2K';

export function createTerminalLine(stream: Pick<NodeJS.WriteStream, 'write' | 'isTTY'>): TerminalLine {
  let current = '';
  const isTty = Boolean(stream.isTTY);
  return {
    isTty,
    bar(text) {
      current = text;
      stream.write(`${CLEAR}${text}`);
    },
    clearBar() {
      if (current !== '') stream.write(CLEAR);
      current = '';
    },
    line(text) {
      stream.write(current === '' ? `${text}\n` : `${CLEAR}${text}\n${current}`);
    },
  };
}

let stderrLine: TerminalLine | undefined;

/** The process's stderr as a TerminalLine (one per process, so the bar and the logs share it). */
export function stderrTerminal(): TerminalLine {
  stderrLine ??= createTerminalLine(process.stderr);
  return stderrLine;
}
