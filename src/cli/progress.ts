/**
 * Progress for long local runs: a redrawn bar on a terminal, a plain line every few seconds when
 * stderr is a file or pipe (CI logs stay readable). Progress is a value a timer reports, never thrown.
 * On stderr the bar shares the line with the logs (terminal.ts), so a log line never breaks it.
 */
import type { JobProgress, ProgressReporter } from '../jobs/index.js';
import { throttle } from '../throttle.js';
import { createTerminalLine, stderrTerminal } from './terminal.js';

export function createTerminalProgress(
  stream: NodeJS.WriteStream = process.stderr,
  opts: { intervalMs?: number; now?: () => number } = {},
): ProgressReporter {
  const now = opts.now ?? Date.now;
  const term = stream === process.stderr ? stderrTerminal() : createTerminalLine(stream);
  const isTty = term.isTty;
  const interval = opts.intervalMs ?? (isTty ? 100 : 5000);
  const startedAt = now();
  let stageStartedAt = startedAt;
  let lastStage = '';
  // A new stage and the last step are drawn at once; the rest at most once per interval.
  const drawn = throttle((p: JobProgress) => (isTty ? term.bar(line(p)) : term.line(line(p))), interval, { now });

  function line(p: JobProgress): string {
    const elapsed = (now() - stageStartedAt) / 1000;
    if (p.done === undefined || !p.total) return `${p.stage}…`;
    const fraction = Math.min(1, p.done / p.total);
    const rate = elapsed > 0 ? p.done / elapsed : 0;
    const eta = rate > 0 ? (p.total - p.done) / rate : undefined;
    const unit = p.unit ?? '';
    const bar = isTty ? `[${'#'.repeat(Math.round(fraction * 24)).padEnd(24, '.')}] ` : '';
    return (
      `${p.stage} ${bar}${(fraction * 100).toFixed(1)}% ${p.done}/${p.total}${unit ? ` ${unit}` : ''}` +
      ` ${rate.toFixed(rate < 10 ? 2 : 1)} ${unit || 'items'}/s` +
      (eta === undefined ? '' : ` ETA ${formatSeconds(eta)}`)
    );
  }

  return {
    report(p) {
      const newStage = p.stage !== lastStage;
      if (newStage) {
        lastStage = p.stage;
        stageStartedAt = now();
      }
      drawn.push(p, newStage || p.done === p.total);
    },
    close(message) {
      drawn.close();
      term.clearBar();
      if (message) term.line(`${message} (${formatSeconds((now() - startedAt) / 1000)})`);
    },
  };
}

export function formatSeconds(seconds: number): string {
  if (!Number.isFinite(seconds)) return '?';
  if (seconds < 60) return `${seconds.toFixed(1)}s`;
  const m = Math.floor(seconds / 60);
  const s = Math.round(seconds % 60);
  return `${m}m${String(s).padStart(2, '0')}s`;
}
