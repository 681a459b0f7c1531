/**
 * SIGTERM and SIGINT while `serve` starts: no job has been taken yet, so there is nothing to drain
 * or hand back, and the right answer is to exit 0 at once (what systemd and Kubernetes expect of a
 * stop), whatever start-up is doing (loading modules, converting a model, connecting to NATS).
 * Once the worker runs, `handOverSignals` gives the signals to the drain. The listeners themselves
 * stay installed throughout: removing one and adding another leaves a moment in which a signal
 * already caught by Node finds no listener and is lost. Imports nothing heavy.
 */
import { formatLogLine } from './human-log.js';
import { chooseLogFormat, logFormat } from './log-format.js';

const SIGNALS = ['SIGTERM', 'SIGINT'] as const;

/**
 * The logger may not exist yet: one line in pino's shape, on stderr like every log, or that line
 * as a human one when the logs are (cli/log-format.ts; `serve` is JSON by default).
 */
function logLine(level: number, signal: NodeJS.Signals, msg: string): void {
  const json = JSON.stringify({ level, time: Date.now(), service: 'media-worker', signal, msg });
  process.stderr.write(`${logFormat() === 'human' ? formatLogLine(json) : json}\n`);
}

function onStartupSignal(signal: NodeJS.Signals): void {
  logLine(30, signal, 'Stopping during start-up: no job taken yet, nothing to drain');
  process.exit(0);
}

let current: (signal: NodeJS.Signals) => void = onStartupSignal;
let installed = false;
let handedOver = false;

export function installStartupSignalHandlers(): void {
  if (installed) return;
  installed = true;
  // Only `serve` starts with these: a daemon, JSON lines unless told otherwise.
  chooseLogFormat({ daemon: true });
  for (const signal of SIGNALS) process.on(signal, (s: NodeJS.Signals) => current(s));
}

/**
 * Start-up is over: `handler` gets the first SIGTERM or SIGINT from now on. A second one ends the
 * process at once without waiting for the drain (exit 1; running jobs go back to the queue after
 * their ack wait, as after any kill).
 */
export function handOverSignals(handler: (signal: NodeJS.Signals) => void): void {
  installStartupSignalHandlers();
  current = (signal) => {
    if (handedOver) {
      logLine(40, signal, 'Second signal: exiting without finishing the drain');
      process.exit(1);
    }
    handedOver = true;
    handler(signal);
  };
}
