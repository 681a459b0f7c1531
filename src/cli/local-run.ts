/**
 * Running one job on this machine for the CLI: the engine, a progress reporter on stderr (a bar or
 * lines, or `progress` records with --log-format json), and a
 * store that moves the result to the path the user asked for. `run` and the per-kind commands
 * (`upscale-image`, ...) all come through here.
 */
import { randomUUID } from 'node:crypto';
import { copyFile, mkdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import {
  createEngine,
  executeJob,
  PROVIDER_KINDS,
  probeHardware,
  type ExecutedJob,
  type ProbedHardware,
  type StoreFile,
  type TimeLimitsMs,
} from '../app/index.js';
import { byKind, deadlineError, kindOfModel, reportedModel, type Job } from '../jobs/index.js';
import type { CliContext } from './context.js';
import { namedOutputFile, refuseMisnamed, refuseMisnamedOutput } from './output-name.js';
import { createCliProgress } from './progress.js';
import { definedFields } from '../defined-fields.js';

export interface LocalRunOptions {
  /** Output file, or a directory to put it in (existing, or ending in `/`). Default: the current directory. */
  output?: string;
  /** File name stem used when `output` is a directory or absent. */
  defaultStem: string;
  modelName?: string;
  tile?: number;
  /** The start-up probe, when the caller already ran it (to print an estimate first). */
  hardware?: ProbedHardware;
  /** No processing time limit: the one-off commands run what they are asked, however long it takes. */
  unlimited?: boolean;
  /** The printed estimate (seconds): the progress line moves from it while a long network call runs. */
  estimateSeconds?: number;
}

/** Every kind without a processing time limit (the estimate is still computed and printed). */
export const NO_TIME_LIMITS: TimeLimitsMs = byKind(() => Infinity);

/** The probe, refusing a kind that runs networks when the configured GPU is missing and the CPU may not stand in. */
export async function hardwareFor(job: Job, ctx: CliContext): Promise<ProbedHardware> {
  const hardware = await probeHardware(ctx.config);
  if (hardware.shortfall !== null && PROVIDER_KINDS.includes(kindOfModel(job.model))) {
    throw new Error(`${hardware.shortfall}; set MEDIA_WORKER_CPU_FALLBACK=true to run on the CPU anyway`);
  }
  return hardware;
}

/** The completed task object of spec 2.3, with the result's local path as its URL. */
export interface CompletedTask {
  id: string;
  model: string;
  status: 'completed';
  result: ExecutedJob['result'];
  creditsUsed: number;
  createdAt: string;
}

export async function runLocally(job: Job, ctx: CliContext, opts: LocalRunOptions): Promise<CompletedTask> {
  const createdAt = new Date().toISOString();
  const taskId = job.id ?? `local-${randomUUID()}`;
  const logger = ctx.logger.child({ taskId, model: job.model });
  await refuseMisnamedOutput(job, opts.output);
  const hardware = opts.hardware ?? (await hardwareFor(job, ctx));
  const engine =
    opts.unlimited === true
      ? createEngine(hardware.config, logger, NO_TIME_LIMITS)
      : createEngine(hardware.config, logger);
  const progress = createCliProgress(logger, definedFields({ estimateSeconds: opts.estimateSeconds }));
  const abort = new AbortController();
  const onSignal = (): void => abort.abort(new Error('Interrupted'));
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  // The kind's time limit, as the daemon applies it (WORKER_WATCHDOG_MS; the kind's default: its descriptor's);
  // none for the one-off commands (setTimeout would read Infinity as 1 ms).
  const kind = kindOfModel(job.model);
  const limitMs = engine.timeLimitsMs[kind];
  const deadline = Number.isFinite(limitMs)
    ? setTimeout(() => abort.abort(deadlineError(kind, limitMs)), limitMs)
    : undefined;
  try {
    const executed = await executeJob(job, engine, {
      taskId,
      logger,
      signal: abort.signal,
      allowLocalPaths: true,
      onProgress: (p) => progress.report(p),
      store: storeAt(opts),
      ...definedFields({ modelName: opts.modelName, tile: opts.tile }),
    });
    const done =
      'songs' in executed.result ? executed.result.songs.map((s) => s.audio_url).join(', ') : executed.result.url;
    progress.close(`done: ${done}`);
    return {
      id: taskId,
      model: reportedModel(job.model),
      status: 'completed',
      result: executed.result,
      creditsUsed: executed.quote.creditsUsed,
      createdAt,
    };
  } finally {
    clearTimeout(deadline);
    progress.close();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await engine.release();
  }
}

function storeAt(opts: LocalRunOptions): StoreFile {
  return async (localPath, meta) => {
    // A task of several files (songs and covers) writes them into the output directory under their names.
    const named = meta.name === undefined ? await namedOutputFile(opts.output) : undefined;
    // The name says the format (cli/output-name.ts): checked before the run for a local input, here for a URL's.
    if (named !== undefined) refuseMisnamed(named, meta.ext);
    const target =
      meta.name === undefined
        ? (named ?? path.resolve(opts.output ?? '.', `${opts.defaultStem}.${meta.ext}`))
        : path.resolve(opts.output ?? '.', `${opts.defaultStem}-${meta.name}.${meta.ext}`);
    await mkdir(path.dirname(target), { recursive: true });
    await moveFile(localPath, target);
    return { url: target };
  };
}

/** rename, or copy then remove when the job directory is on another filesystem. */
export async function moveFile(from: string, to: string): Promise<void> {
  try {
    await rename(from, to);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EXDEV') throw err;
    await copyFile(from, to);
    await rm(from, { force: true });
  }
}
