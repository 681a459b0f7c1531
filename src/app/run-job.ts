/**
 * One job from start to result, the same for `media-worker run` and the daemon: a temp directory,
 * quote (fetch, probe, price), the pipeline for the job's kind, then `store` moves the output to
 * where results live and names it. Nothing here knows NATS or the terminal, nor any kind: the
 * kinds' runtime halves are handed in (KindRuntimes: to the engine, and to `quoteOnly`), and the
 * job's kind picks its own.
 */
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { definedFields } from '../defined-fields.js';
import { SessionCache, createSrModelLoader } from '../inference/index.js';
import {
  JOB_KINDS,
  JobError,
  pipelineFailure,
  quoteJob,
  type Job,
  type JobKind,
  type Quote,
  type QuoteDeps,
  type QuotedJob,
  type QuotedOf,
  type TaskResult,
} from '../jobs/index.js';
import { quotePolicy, timeLimitsFromEnv } from './quote-policy.js';
import { createMediaDeps, withJobDir } from '../media/index.js';
import { tracingOn, withSpan } from '../telemetry/index.js';
import { mediaDepsOptions, registryOptions } from './layer-options.js';
import { srHardwareOptions } from './hardware.js';
import type { Engine, ExecuteOptions, KindRuntimes, PipelineContext, StoreFile, TimeLimitsMs } from './kind-runtime.js';

export type { Engine, ExecuteOptions, StoreFile } from './kind-runtime.js';

/**
 * The engine of a process: its sessions, the super-resolution loader and what the kinds keep open,
 * with the kinds' runtime halves (`runtimes`, the registry as a value) it runs jobs with.
 * `timeLimitsMs`: the daemon passes its watchdog settings; the CLI reads the same variable (WORKER_WATCHDOG_MS).
 */
export function createEngine<S>(
  runtimes: KindRuntimes<S>,
  config: Config,
  logger: Logger,
  timeLimitsMs: TimeLimitsMs = timeLimitsFromEnv(),
): Engine<S> {
  const settings = {
    executionProviders: config.executionProviders,
    threads: config.threads,
    deviceIndex: config.deviceIndex,
    logger,
  };
  const sessions = new SessionCache(settings);
  const inlineSessions = new SessionCache({ ...settings, thread: false });
  const kinds = runtimes.openStates(config, logger);
  return {
    config,
    sessions,
    inlineSessions,
    timeLimitsMs,
    loadSrModel: createSrModelLoader({
      sessions,
      choices: config.srModels,
      ...srHardwareOptions(config),
      ...registryOptions(config),
      logger,
    }),
    kinds,
    runtimes,
    async release() {
      await Promise.all([
        sessions.release(),
        inlineSessions.release(),
        ...JOB_KINDS.map((kind) => runtimes.byKind[kind].release?.(kinds)),
      ]);
    },
  };
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
  runtimes: Pick<KindRuntimes, 'policies'>,
  job: Job,
  config: Config,
  opts: QuoteOnlyOptions,
): Promise<Quote> {
  return withJobDir(opts.taskId, async (dir) => (await quoteInDir(runtimes, dir, job, config, opts)).quote, {
    root: config.tmpDir,
  });
}

export interface QuoteOnlyOptions extends QuoteInDirOptions {
  taskId: string;
}

interface QuoteInDirOptions {
  allowLocalPaths: boolean;
  signal?: AbortSignal;
  /** Default: WORKER_WATCHDOG_MS from the environment, as the daemon would read it. */
  timeLimitsMs?: TimeLimitsMs;
  /** The network the job will run (CLI `--model`): the estimate is for it. */
  modelName?: string;
}

function quoteInDir(
  runtimes: Pick<KindRuntimes, 'policies'>,
  dir: string,
  job: Job,
  config: Config,
  opts: QuoteInDirOptions,
): Promise<QuotedJob> {
  const deps = createMediaDeps(
    mediaDepsOptions(config, { dir, allowLocalPaths: opts.allowLocalPaths, ...definedFields({ signal: opts.signal }) }),
  );
  return withSpan('quote', { attributes: { 'media.model': job.model } }, async (span) => {
    const quoted = await quoteJob(
      job,
      tracingOn() ? tracedDeps(deps) : deps,
      opts.signal,
      quotePolicy(runtimes, config, opts.timeLimitsMs ?? timeLimitsFromEnv(), opts.modelName),
    );
    span.setAttributes({ 'media.kind': quoted.kind, 'media.credits': quoted.quote.creditsUsed });
    return quoted;
  });
}

/** The quote's fetches and probes, each in a span of its own (only while tracing). Input URLs are not recorded: they may carry tokens. */
function tracedDeps(deps: QuoteDeps): QuoteDeps {
  return {
    ...deps,
    localize: (source, kind, signal) =>
      withSpan('fetch', { kind: 'client', attributes: { 'media.input.kind': kind } }, () =>
        deps.localize(source, kind, signal),
      ),
    probeImage: (file) => withSpan('probe', { attributes: { 'media.probe': 'image' } }, () => deps.probeImage(file)),
    probeMedia: (file) => withSpan('probe', { attributes: { 'media.probe': 'media' } }, () => deps.probeMedia(file)),
  };
}

export async function executeJob<S>(job: Job, engine: Engine<S>, opts: ExecuteOptions): Promise<ExecutedJob> {
  return withJobDir(
    opts.taskId,
    async (dir) => {
      opts.onProgress?.({ stage: 'fetching and probing' });
      const quoted = await quoteInDir(engine.runtimes, dir, job, engine.config, {
        ...opts,
        timeLimitsMs: engine.timeLimitsMs,
      });
      opts.logger.info({ quote: quoted.quote }, 'job quoted');
      refuseUndercharged(job, quoted.quote);
      // The contract's edge: pipelines raise processing failures, and here, once, they take the
      // kind's code. A stop (the caller's signal: deadline, drain, interruption) keeps its own reason.
      const run = tracingOn() ? { ...opts, store: tracedStore(opts.store) } : opts;
      const result = await withSpan(
        `run ${quoted.kind}`,
        { attributes: { 'media.kind': quoted.kind, 'media.model': job.model } },
        () =>
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
  return (localPath, meta) =>
    withSpan('store', { attributes: { 'media.result.ext': meta.ext } }, () => store(localPath, meta));
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

function runPipeline<S>(quoted: QuotedJob, dir: string, engine: Engine<S>, opts: ExecuteOptions): Promise<TaskResult> {
  const { config } = engine;
  const context: PipelineContext<S> = {
    dir,
    engine,
    opts,
    binaries: definedFields({ ffmpegPath: config.ffmpegPath, ffprobePath: config.ffprobePath }),
    withSignal: definedFields({ signal: opts.signal }),
    upscaleChoices: definedFields({ modelName: opts.modelName, tile: opts.tile, signal: opts.signal }),
  };
  return runOfKind(engine.runtimes, quoted.kind, quoted, context);
}

/** The kind's pipeline binding (its runtime's `run`, src/app/kinds/). */
function runOfKind<S, K extends JobKind>(
  runtimes: KindRuntimes<S>,
  kind: K,
  quoted: QuotedOf<K>,
  context: PipelineContext<S>,
): Promise<TaskResult> {
  return runtimes.byKind[kind].run(quoted, context);
}
