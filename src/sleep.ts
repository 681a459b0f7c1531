/**
 * Waits `ms`, or less when `signal` aborts first; never rejects (a loop checks the signal itself).
 * The timer does not keep the process alive: a daemon lives by its connection and servers, and a
 * wait should never be what holds a stopping process.
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted === true) return resolve();
    const timer = setTimeout(done, ms).unref();
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
