/**
 * One job from start to result, the same for `media-worker run` and the daemon: a temp directory,
 * quote (fetch, probe, price), the pipeline for the job's kind, then `store` moves the output to
 * where results live and names it. Nothing here knows NATS or the terminal.
 */
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { definedFields } from '../defined-fields.js';
import { SessionCache, createSrModelLoader, type SrModelLoader } from '../inference/index.js';
import { JOB_KINDS, JobError, pipelineFailure, quoteJob, type Job, type JobKind, type JobProgress, type Quote, type QuoteDeps, type QuotedJob, type QuotedOf, type TaskResult } from '../jobs/index.js';
import { quotePolicy, timeLimitsFromEnv, type TimeLimitsMs } from './quote-policy.js';
import { createMediaDeps, withJobDir } from '../media/index.js';
import { tracingOn, withSpan } from '../telemetry/index.js';
import { mediaDepsOptions, registryOptions } from './layer-options.js';
import { srHardwareOptions } from './hardware.js';
import type { PipelineContext } from './kind-runtime.js';
import { RUNTIMES, openKindStates, type KindStates } from './kinds/index.js';

/** Long-lived state shared by every job of a process: sessions are created once and reused. */
export interface Engine {
  config: Config;
  sessions: SessionCache;
  /** Sessions on the calling thread, for networks of several inputs or outputs (face detection, mouth synchronisation). */
  inlineSessions: SessionCache;
  loadSrModel: SrModelLoader;
  /** What the kinds keep open between jobs, opened once here (src/app/kinds/index.ts). */
  kinds: KindStates;
  /** Processing time limit per kind (the daemon's watchdog): the quote refuses what could not finish in it. */
  timeLimitsMs: TimeLimitsMs;
  /** Releases every session, and what each kind's runtime keeps open (shutdown). */
  release(): Promise<void>;
}

/** `timeLimitsMs`: the daemon passes its watchdog settings; the CLI reads the same variable (WORKER_WATCHDOG_MS). */
export function createEngine(config: Config, logger: Logger, timeLimitsMs: TimeLimitsMs = timeLimitsFromEnv()): Engine {
  const settings = { executionProviders: config.executionProviders, threads: config.threads, deviceIndex: config.deviceIndex, logger };
  const sessions = new SessionCache(settings);
  const inlineSessions = new SessionCache({ ...settings, thread: false });
  const kinds = openKindStates(config, logger);
  return {
    config,
    sessions,
    inlineSessions,
    timeLimitsMs,
    loadSrModel: createSrModelLoader({ sessions, choices: config.srModels, ...srHardwareOptions(config), ...registryOptions(config), logger }),
    kinds,
    async release() {
      await Promise.all([sessions.release(), inlineSessions.release(), ...JOB_KINDS.map((kind) => RUNTIMES[kind].release?.(kinds))]);
    },
  };
}

/**
 * Moves a finished file to where results live and says where it can be fetched: a public URL
 * (the daemon's results store) or a local path (the command line). `name` (file name without
 * extension) is set for tasks with several files: `song-1`, `cover-1`, ...
 */
export type StoreFile = (localPath: string, meta: { taskId: string; ext: string; kind: QuotedJob['kind']; name?: string }) => Promise<{ url: string }>;

export interface ExecuteOptions {
  taskId: string;
  logger: Logger;
  signal?: AbortSignal;
  onProgress?: (p: JobProgress) => void;
  /** CLI only: job inputs may be local paths. */
  allowLocalPaths: boolean;
  store: StoreFile;
  /** CLI overrides for the upscalers. */
  modelName?: string;
  tile?: number;
}

export interface ExecutedJob {
  quote: Quote;
  result: TaskResult;
}

/**
 * Quote only (the quote service and `media-worker quote`): fetched inputs live in a temp directory
 * that is gone when the price is known.
 */
export async function quoteOnly(
  job: Job,
  config: Config,
  opts: { taskId: string; allowLocalPaths: boolean; signal?: AbortSignal; timeLimitsMs?: TimeLimitsMs; modelName?: string },
): Promise<Quote> {
  return withJobDir(opts.taskId, async (dir) => (await quoteInDir(dir, job, config, opts)).quote, { root: config.tmpDir });
}

interface QuoteInDirOptions {
  allowLocalPaths: boolean;
  signal?: AbortSignal;
  /** Default: WORKER_WATCHDOG_MS from the environment, as the daemon would read it. */
  timeLimitsMs?: TimeLimitsMs;
  /** The network the job will run (CLI `--model`): the estimate is for it. */
  modelName?: string;
}

function quoteInDir(dir: string, job: Job, config: Config, opts: QuoteInDirOptions): Promise<QuotedJob> {
  const deps = createMediaDeps(
    mediaDepsOptions(config, { dir, allowLocalPaths: opts.allowLocalPaths, ...definedFields({ signal: opts.signal }) }),
  );
  return withSpan('quote', { attributes: { 'media.model': job.model } }, async (span) => {
    const quoted = await quoteJob(job, tracingOn() ? tracedDeps(deps) : deps, opts.signal, quotePolicy(config, opts.timeLimitsMs ?? timeLimitsFromEnv(), opts.modelName));
    span.setAttributes({ 'media.kind': quoted.kind, 'media.credits': quoted.quote.creditsUsed });
    return quoted;
  });
}

/** The quote's fetches and probes, each in a span of its own (only while tracing). Input URLs are not recorded: they may carry tokens. */
function tracedDeps(deps: QuoteDeps): QuoteDeps {
  return {
    ...deps,
    localize: (source, kind, signal) => withSpan('fetch', { kind: 'client', attributes: { 'media.input.kind': kind } }, () => deps.localize(source, kind, signal)),
    probeImage: (file) => withSpan('probe', { attributes: { 'media.probe': 'image' } }, () => deps.probeImage(file)),
    probeMedia: (file) => withSpan('probe', { attributes: { 'media.probe': 'media' } }, () => deps.probeMedia(file)),
  };
}

export async function executeJob(job: Job, engine: Engine, opts: ExecuteOptions): Promise<ExecutedJob> {
  return withJobDir(
    opts.taskId,
    async (dir) => {
      opts.onProgress?.({ stage: 'fetching and probing' });
      const quoted = await quoteInDir(dir, job, engine.config, { ...opts, timeLimitsMs: engine.timeLimitsMs });
      opts.logger.info({ quote: quoted.quote }, 'job quoted');
      refuseUndercharged(job, quoted.quote);
      // The contract's edge: pipelines raise processing failures, and here, once, they take the
      // kind's code. A stop (the caller's signal: deadline, drain, interruption) keeps its own reason.
      const run = tracingOn() ? { ...opts, store: tracedStore(opts.store) } : opts;
      const result = await withSpan(`run ${quoted.kind}`, { attributes: { 'media.kind': quoted.kind, 'media.model': job.model } }, () =>
        runPipeline(quoted, dir, engine, run).catch((err: unknown) => {
          throw opts.signal?.aborted === true ? err : pipelineFailure(err, quoted.kind);
        }),
      );
      return { quote: quoted.quote, result };
    },
    { root: engine.config.tmpDir },
  );
}

/** Storing a result file, in a span of its own. */
function tracedStore(store: StoreFile): StoreFile {
  return (localPath, meta) => withSpan('store', { attributes: { 'media.result.ext': meta.ext } }, () => store(localPath, meta));
}

/**
 * The control plane deducts credits upfront from its own probe or estimate and sends the amount as
 * `credits`. The price measured here is the one that counts: a job charged less than it costs is
 * refused before processing (402, so the control plane refunds and may resubmit at the right price).
 */
function refuseUndercharged(job: Job, quote: Quote): void {
  if (job.credits !== undefined && job.credits < quote.creditsUsed) {
    throw new JobError(
      'INSUFFICIENT_CREDITS',
      `Expected at least ${quote.creditsUsed} credits charged for this job but received ${job.credits}`,
    );
  }
}

function runPipeline(quoted: QuotedJob, dir: string, engine: Engine, opts: ExecuteOptions): Promise<TaskResult> {
  const { config } = engine;
  const context: PipelineContext = {
    dir,
    engine,
    opts,
    binaries: definedFields({ ffmpegPath: config.ffmpegPath, ffprobePath: config.ffprobePath }),
    withSignal: definedFields({ signal: opts.signal }),
    upscaleChoices: definedFields({ modelName: opts.modelName, tile: opts.tile, signal: opts.signal }),
  };
  return runOfKind(quoted.kind, quoted, context);
}

/** The kind's pipeline binding (its runtime's `run`, src/app/kinds/). */
function runOfKind<K extends JobKind>(kind: K, quoted: QuotedOf<K>, context: PipelineContext): Promise<TaskResult> {
  return RUNTIMES[kind].run(quoted, context);
}
