/**
 * Progress for long local runs: a redrawn bar on a terminal, a plain line every few seconds when
 * stderr is a file or pipe (CI logs stay readable). Progress is a value a timer reports, never thrown.
 * On stderr the bar shares the line with the logs (terminal.ts), so a log line never breaks it.
 *
 * One network call can take a minute (a 512x512 photo is one tile on the CPU), several on a busy
 * machine, and the pipeline reports nothing during it. So while a countable stage waits for its next
 * step, a timer moves the line on from the time one step takes (measured once a step is done, the
 * printed estimate before), marked `~` and `(estimate)`, and never past the step it waits for, and
 * says how long the step has run against its estimate (`tile 1 running 48.0s of ~59.0s estimated`):
 * the clock moves though the count does not. A step that outlasts the estimate slows the bar down
 * (still moving) and says by how much it is over and that it is still working.
 *
 * With JSON logs (`--log-format json`, LOG_FORMAT=json, cli/log-format.ts) the same reports are
 * `progress` records of the job's logger instead, the step's clock among them (worker/step-clock.ts,
 * as the daemon's progress messages), and nothing human reaches stderr.
 */
import { definedFields } from '../defined-fields.js';
import type { JobProgress, ProgressReporter, ProgressStep } from '../jobs/index.js';
import type { Logger } from '../logger.js';
import { throttle } from '../throttle.js';
import { stepTiming, withStepClock } from '../worker/index.js';
import { createTerminalLine, stderrTerminal } from './terminal.js';
import { voice } from './voice.js';

export interface TerminalProgressOptions {
  /** Least interval between two drawn reports (default 100 ms on a terminal, 5 s on a pipe). */
  intervalMs?: number;
  /** How often a waiting stage is redrawn from the estimate (default 500 ms on a terminal, 5 s on a pipe). */
  tickMs?: number;
  now?: () => number;
  /** The processing time printed before the run (`estimateUpscale`): the pace of a stage's first step. */
  estimateSeconds?: number;
}

/** Share of the step being waited for that the estimate may fill: the line never claims a step not reported. */
export const ESTIMATE_CAP = 0.99;
/** Share of a step the clock fills at the estimated pace; past it the line slows, still moving, towards the cap. */
export const ESTIMATE_KNEE = 0.9;

/** Figures of a countable stage waiting for its next step, at `sinceStep` seconds after the last one. */
export interface EstimatedProgress {
  /** 0..1 of the stage. */
  fraction: number;
  /** Seconds left by the estimate; negative when the stage runs past it. */
  remaining: number;
}

/**
 * Where a stage stands by the clock: `secondsPerStep` is the measured pace (or the estimate's before
 * the first step). Pure, so the renderer and its tests agree on one formula.
 */
export function estimatedProgress(
  done: number,
  total: number,
  secondsPerStep: number,
  sinceStep: number,
): EstimatedProgress {
  // A step that outlasts the estimate (a busy machine) still moves, ever slower: 1 - 0.1 * 0.9 / t.
  const t = Math.max(0, sinceStep / secondsPerStep);
  const partial = Math.min(ESTIMATE_CAP, t <= ESTIMATE_KNEE ? t : 1 - ((1 - ESTIMATE_KNEE) * ESTIMATE_KNEE) / t);
  return { fraction: Math.min(1, (done + partial) / total), remaining: secondsPerStep * (total - done) - sinceStep };
}

/** `tiles` -> `tile`: the name of one unit of a count. */
export function singularUnit(unit: string | undefined): string {
  if (unit === undefined || unit === '') return 'step';
  return unit.endsWith('s') ? unit.slice(0, -1) : unit;
}

/**
 * A running step against its estimate, in words: `tile 1 running 48.0s of ~59.0s estimated`, past
 * it `tile 1 running 3m29s, 2m30s past its ~59.0s estimate: still working (a busy machine is
 * slower)`, or without an estimate only the clock.
 */
export function stepClockText(unit: string | undefined, step: ProgressStep): string {
  const head = `${singularUnit(unit)} ${step.index} running ${formatSeconds(step.elapsedSeconds)}`;
  const estimate = step.estimatedSeconds;
  if (estimate === undefined) return head;
  if (step.elapsedSeconds <= estimate) return `${head} of ~${formatSeconds(estimate)} estimated`;
  return `${head}, ${formatSeconds(step.elapsedSeconds - estimate)} past its ~${formatSeconds(estimate)} estimate: still working (a busy machine is slower)`;
}

/**
 * Progress in the process's log format: the bar or plain lines on stderr (human), `progress` records
 * of `logger` (json). `opts` are the terminal's; the records take `intervalMs` and `now`.
 */
export function createCliProgress(logger: Logger, opts: TerminalProgressOptions = {}): ProgressReporter {
  return voice().format === 'json' ? createJsonProgress(logger, opts) : createTerminalProgress(process.stderr, opts);
}

/**
 * Progress as records: `progress` with the stage's figures (done, total, unit, percent, etaSeconds
 * from the rate so far) at a new stage and the last step at once, at most once per interval between
 * (default 5 s, as on a pipe); the closing message a record of its own with the seconds taken. While
 * one step runs longer than the interval, the same figures again with its clock (`step`: index,
 * elapsedSeconds, estimatedSeconds): the counts stay what the job reported.
 */
export function createJsonProgress(
  logger: Logger,
  opts: Pick<TerminalProgressOptions, 'intervalMs' | 'now' | 'estimateSeconds'> = {},
): ProgressReporter {
  const now = opts.now ?? Date.now;
  const startedAt = now();
  let stageStartedAt = startedAt;
  let lastStage = '';
  let closed = false;
  const intervalMs = opts.intervalMs ?? 5000;
  const sent = throttle(
    (p: JobProgress) => logger.info(progressRecord(p, (now() - stageStartedAt) / 1000), 'progress'),
    intervalMs,
    { now },
  );
  const records: ProgressReporter = {
    report(p) {
      const newStage = p.stage !== lastStage;
      if (newStage) {
        lastStage = p.stage;
        stageStartedAt = now();
      }
      sent.push(p, newStage || (p.done !== undefined && p.done === p.total));
    },
    close(message) {
      sent.close();
      if (message && !closed) logger.info({ seconds: round1((now() - startedAt) / 1000) }, message);
      closed = true;
    },
  };
  return withStepClock(records, {
    tickMs: intervalMs,
    now,
    ...definedFields({ stageEstimateSeconds: opts.estimateSeconds }),
  });
}

/** A progress record's fields: the report's, its percent, and the ETA at the stage's rate so far. */
export function progressRecord(p: JobProgress, stageSeconds: number): Record<string, unknown> {
  const { done, total } = p;
  const countable = done !== undefined && total !== undefined && total > 0;
  const percent = p.percent ?? (countable ? round1((100 * Math.min(done, total)) / total) : undefined);
  const rate = countable && stageSeconds > 0 ? done / stageSeconds : 0;
  const etaSeconds = countable && rate > 0 ? round1(Math.max(0, total - done) / rate) : undefined;
  const step =
    p.step === undefined
      ? undefined
      : definedFields({
          index: p.step.index,
          elapsedSeconds: round1(p.step.elapsedSeconds),
          estimatedSeconds: p.step.estimatedSeconds === undefined ? undefined : round1(p.step.estimatedSeconds),
        });
  return definedFields({ stage: p.stage, done, total, unit: p.unit, percent, etaSeconds, step });
}

function round1(n: number): number {
  return Math.round(n * 10) / 10;
}

export function createTerminalProgress(
  stream: NodeJS.WriteStream = process.stderr,
  opts: TerminalProgressOptions = {},
): ProgressReporter {
  const now = opts.now ?? Date.now;
  const term = stream === process.stderr ? stderrTerminal() : createTerminalLine(stream);
  const isTty = term.isTty;
  const interval = opts.intervalMs ?? (isTty ? 100 : 5000);
  const tickMs = opts.tickMs ?? (isTty ? 500 : 5000);
  const startedAt = now();
  let stageStartedAt = startedAt;
  let stepAt = startedAt;
  let lastStage = '';
  let current: JobProgress | undefined;
  let lastDrawnAt = Number.NEGATIVE_INFINITY;
  let ticker: NodeJS.Timeout | undefined;

  const draw = (text: string): void => {
    lastDrawnAt = now();
    if (isTty) term.bar(text);
    else term.line(text);
  };
  // A new stage and the last step are drawn at once; the rest at most once per interval.
  const drawn = throttle((p: JobProgress) => draw(line(p)), interval, { now });

  function bar(fraction: number): string {
    return isTty ? `[${'#'.repeat(Math.round(fraction * 24)).padEnd(24, '.')}] ` : '';
  }

  function counts(p: JobProgress & { done: number; total: number }): string {
    const unit = p.unit ?? '';
    return `${p.done}/${p.total}${unit ? ` ${unit}` : ''}`;
  }

  function line(p: JobProgress): string {
    const elapsed = (now() - stageStartedAt) / 1000;
    if (p.done === undefined || !p.total) return `${p.stage}…`;
    const fraction = Math.min(1, p.done / p.total);
    const rate = elapsed > 0 ? p.done / elapsed : 0;
    const eta = rate > 0 ? (p.total - p.done) / rate : undefined;
    const unit = p.unit ?? '';
    return (
      `${p.stage} ${bar(fraction)}${(fraction * 100).toFixed(1)}% ${counts({ ...p, done: p.done, total: p.total })}` +
      ` ${rate.toFixed(rate < 10 ? 2 : 1)} ${unit || 'items'}/s` +
      (eta === undefined ? '' : ` ETA ${formatSeconds(eta)}`)
    );
  }

  /** The pace of one step: measured once one is done, else the estimate's share, else unknown. */
  function secondsPerStep(done: number, total: number): number | undefined {
    if (done > 0) return (stepAt - stageStartedAt) / 1000 / done;
    if (opts.estimateSeconds !== undefined && opts.estimateSeconds > 0) return opts.estimateSeconds / total;
    return undefined;
  }

  function estimatedLine(p: JobProgress & { done: number; total: number }): string | undefined {
    const sinceStep = (now() - stepAt) / 1000;
    const pace = secondsPerStep(p.done, p.total);
    const step = stepTiming({
      done: p.done,
      total: p.total,
      countedSeconds: (stepAt - stageStartedAt) / 1000,
      sinceStep,
      ...definedFields({ stageEstimateSeconds: pace === undefined ? undefined : pace * p.total }),
    });
    if (step === undefined) return undefined;
    const clock = stepClockText(p.unit, step);
    // Without a pace there is no estimate to move the bar by: the counts as reported, and the clock.
    if (pace === undefined || !(pace > 0))
      return `${p.stage} ${bar(p.done / p.total)}${((100 * p.done) / p.total).toFixed(1)}% ${counts(p)}, ${clock}`;
    const { fraction, remaining } = estimatedProgress(p.done, p.total, pace, sinceStep);
    const tail = remaining >= 0 ? `, ETA ~${formatSeconds(remaining)}` : '';
    return `${p.stage} ${bar(fraction)}~${(fraction * 100).toFixed(1)}% (estimate) ${counts(p)}, ${clock}${tail}`;
  }

  function tick(): void {
    const p = current;
    if (p === undefined || now() - lastDrawnAt < tickMs) return;
    // A stage that does not count (fetching, converting weights on first use): how long it has run.
    if (p.done === undefined || !p.total) {
      if (now() - stageStartedAt >= tickMs) draw(`${p.stage}… ${formatSeconds((now() - stageStartedAt) / 1000)}`);
      return;
    }
    if (p.done >= p.total) return;
    const text = estimatedLine({ ...p, done: p.done, total: p.total });
    if (text !== undefined) draw(text);
  }

  return {
    report(p) {
      const newStage = p.stage !== lastStage;
      if (newStage) {
        lastStage = p.stage;
        stageStartedAt = now();
        stepAt = stageStartedAt;
      } else if (p.done !== undefined && p.done !== current?.done) {
        stepAt = now();
      }
      current = p;
      // unref: a waiting bar never keeps the process alive.
      ticker ??= setInterval(tick, Math.max(50, Math.min(tickMs, 1000))).unref();
      drawn.push(p, newStage || p.done === p.total);
    },
    close(message) {
      clearInterval(ticker);
      ticker = undefined;
      current = undefined;
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
