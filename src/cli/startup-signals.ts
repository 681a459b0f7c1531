/**
 * SIGTERM and SIGINT while `serve` starts: no job has been taken yet, so there is nothing to drain
 * or hand back, and the right answer is to exit 0 at once (what systemd and Kubernetes expect of a
 * stop), whatever start-up is doing (loading modules, converting a model, connecting to NATS).
 * Once the worker runs, `endStartup` hands the signals over to the drain. Imports nothing heavy.
 */
const SIGNALS = ['SIGTERM', 'SIGINT'] as const;

function onStartupSignal(signal: NodeJS.Signals): void {
  // The logger may not exist yet: one line in pino's shape, on stderr like every log.
  process.stderr.write(
    `${JSON.stringify({ level: 30, time: Date.now(), service: 'media-worker', signal, msg: 'Stopping during start-up: no job taken yet, nothing to drain' })}\n`,
  );
  process.exit(0);
}

let installed = false;

export function installStartupSignalHandlers(): void {
  if (installed) return;
  installed = true;
  for (const signal of SIGNALS) process.on(signal, onStartupSignal);
}

/** Start-up is over: the caller's handlers take the signals from now on. */
export function endStartup(): void {
  if (!installed) return;
  installed = false;
  for (const signal of SIGNALS) process.off(signal, onStartupSignal);
}
