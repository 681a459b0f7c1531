/**
 * One job from start to result, the same for `media-worker run` and the daemon: a temp directory,
 * quote (fetch, probe, price), the pipeline for the job's kind, then `store` moves the output to
 * where results live and names it. Nothing here knows NATS or the terminal.
 */
import path from 'node:path';
import type { Logger } from 'pino';
import type { Config } from './config.js';
import { SessionCache } from './inference/session.js';
import { JobError, quoteJob, type Job, type Quote, type QuotedJob } from './jobs/index.js';
import { createMediaDeps, withJobDir } from './media/index.js';
import { mediaDepsOptions, registryOptions } from './runtime.js';
import type { JobProgress } from './worker/types.js';
import { upscaleImageFile, type SrModelLoader } from './upscale/image-pipeline.js';
import { createSrModelLoader } from './upscale/sr-models.js';

/** Long-lived state shared by every job of a process: sessions are created once and reused. */
export interface Engine {
  config: Config;
  sessions: SessionCache;
  loadSrModel: SrModelLoader;
}

export function createEngine(config: Config, logger: Logger): Engine {
  const sessions = new SessionCache({
    executionProviders: config.executionProviders,
    threads: config.threads,
    logger,
  });
  return {
    config,
    sessions,
    loadSrModel: createSrModelLoader({ sessions, ...registryOptions(config), logger }),
  };
}


export interface StoredResult {
  /** Where the result can be fetched: a public URL (daemon) or a local path (CLI). */
  url: string;
}

export type StoreResult = (localPath: string, meta: { taskId: string; ext: string; kind: QuotedJob['kind'] }) => Promise<StoredResult>;

export interface ExecuteOptions {
  taskId: string;
  logger: Logger;
  signal?: AbortSignal;
  onProgress?: (p: JobProgress) => void;
  /** CLI only: job inputs may be local paths. */
  allowLocalPaths: boolean;
  store: StoreResult;
  /** CLI overrides for the upscalers. */
  modelName?: string;
  tile?: number;
}

export interface ImageResult {
  url: string;
  type: 'image';
  width: number;
  height: number;
  format: string;
}

export type TaskResult = ImageResult;

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
  opts: { taskId: string; allowLocalPaths: boolean; signal?: AbortSignal },
): Promise<Quote> {
  return withJobDir(opts.taskId, async (dir) => (await quoteIn(dir, job, config, opts)).quote, { root: config.tmpDir });
}

function quoteIn(dir: string, job: Job, config: Config, opts: { allowLocalPaths: boolean; signal?: AbortSignal }): Promise<QuotedJob> {
  const deps = createMediaDeps(
    mediaDepsOptions(config, { dir, allowLocalPaths: opts.allowLocalPaths, ...(opts.signal === undefined ? {} : { signal: opts.signal }) }),
  );
  return quoteJob(job, deps, opts.signal);
}

export async function executeJob(job: Job, engine: Engine, opts: ExecuteOptions): Promise<ExecutedJob> {
  return withJobDir(
    opts.taskId,
    async (dir) => {
      opts.onProgress?.({ stage: 'fetching and probing' });
      const quoted = await quoteIn(dir, job, engine.config, opts);
      opts.logger.info({ quote: quoted.quote }, 'job quoted');
      checkCharged(job, quoted.quote);
      const result = await runPipeline(quoted, dir, engine, opts);
      return { quote: quoted.quote, result };
    },
    { root: engine.config.tmpDir },
  );
}

/**
 * The control plane deducts credits upfront from its own probe or estimate and sends the amount as
 * `credits`. The price measured here is the one that counts: a job charged less than it costs is
 * refused before processing (402, so the control plane refunds and may resubmit at the right price).
 */
function checkCharged(job: Job, quote: Quote): void {
  if (job.credits !== undefined && job.credits < quote.creditsUsed) {
    throw new JobError(
      'INSUFFICIENT_CREDITS',
      `Expected at least ${quote.creditsUsed} credits charged for this job but received ${job.credits}`,
    );
  }
}

async function runPipeline(quoted: QuotedJob, dir: string, engine: Engine, opts: ExecuteOptions): Promise<TaskResult> {
  switch (quoted.kind) {
    case 'image': {
      const ext = quoted.probes.image.format === 'jpeg' ? 'jpg' : quoted.probes.image.format;
      const outputPath = path.join(dir, `output.${ext}`);
      const outcome = await upscaleImageFile(
        {
          inputPath: quoted.inputs.image.path,
          outputPath,
          factor: quoted.job.input.upscale_factor,
          info: quoted.probes.image,
          ...(opts.modelName === undefined ? {} : { modelName: opts.modelName }),
          ...(opts.tile === undefined ? {} : { tile: opts.tile }),
          ...(opts.signal === undefined ? {} : { signal: opts.signal }),
          onProgress: (done, total) => opts.onProgress?.({ stage: 'upscaling', done, total, unit: 'tiles' }),
        },
        engine.loadSrModel,
      );
      opts.logger.info({ srModel: outcome.model, tile: outcome.tile, width: outcome.width, height: outcome.height }, 'image upscaled');
      const stored = await opts.store(outputPath, { taskId: opts.taskId, ext, kind: 'image' });
      return { url: stored.url, type: 'image', width: outcome.width, height: outcome.height, format: outcome.format };
    }
    case 'video':
      throw new JobError('UPSCALE_FAILED', 'Video upscaling is not available in this build yet');
    case 'lipsync':
      throw new JobError('LIPSYNC_FAILED', 'Lip-sync is not available in this build yet');
    case 'music':
      throw new JobError('GENERATION_FAILED', 'No music generator is installed on this worker');
  }
}
