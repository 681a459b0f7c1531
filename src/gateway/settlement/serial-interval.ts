/**
 * A pass run every `intervalMs`, one at a time (a slow pass delays the next instead of overlapping
 * it), and at once when `now` is set. The timer does not keep the process alive; `stop` ends it and
 * waits for the pass in flight. `pass` tells its own failures: it must not reject.
 */
export function serialInterval(
  pass: () => Promise<void>,
  intervalMs: number,
  o: { now?: boolean } = {},
): { stop(): Promise<void> } {
  let running: Promise<void> = o.now === true ? pass() : Promise.resolve();
  const timer = setInterval(() => {
    running = running.then(pass);
  }, intervalMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
