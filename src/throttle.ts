/**
 * The one throttle of progress reports (the daemon's progress messages, a pipeline's callbacks, the
 * command line's bar): a value goes out at once when it is urgent (a new stage, the last step) or
 * when the interval has passed since the last one went out; otherwise it is dropped, or with
 * `trailing` held, and the latest held value goes out when the interval ends. Progress is
 * informational: a failing `send` never reaches the caller.
 */
export interface Throttle<T> {
  push(value: T, urgent?: boolean): void;
  /** Drops a held value and stops its timer; nothing goes out after this. */
  close(): void;
}

export function throttle<T>(
  send: (value: T) => void,
  intervalMs: number,
  opts: { trailing?: boolean; now?: () => number } = {},
): Throttle<T> {
  const now = opts.now ?? Date.now;
  let lastSentAt = Number.NEGATIVE_INFINITY;
  let held: { value: T } | undefined;
  let timer: NodeJS.Timeout | undefined;
  let closed = false;

  const emit = (value: T): void => {
    lastSentAt = now();
    held = undefined;
    try {
      send(value);
    } catch {
      // A closed connection, a failing callback: progress must never fail the job.
    }
  };

  return {
    push(value, urgent = false) {
      if (closed) return;
      const elapsed = now() - lastSentAt;
      if (urgent || elapsed >= intervalMs) {
        if (timer !== undefined) clearTimeout(timer);
        timer = undefined;
        emit(value);
        return;
      }
      if (opts.trailing !== true) return;
      held = { value };
      timer ??= setTimeout(() => {
        timer = undefined;
        if (!closed && held !== undefined) emit(held.value);
      }, intervalMs - elapsed);
    },
    close() {
      closed = true;
      held = undefined;
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
    },
  };
}
