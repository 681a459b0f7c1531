/**
 * The runtime half of a job kind (README "Architecture"): what the contract's descriptor
 * (src/jobs/kinds/) leaves to the host that runs it. One object per kind under src/app/kinds/,
 * in a registry typed `{ [K in JobKind]: KindRuntime<K> }` (src/app/kinds/index.ts): its pipeline
 * binding, its readiness checks, what a job needs on disk, what warm-up opens, whether it runs on
 * the execution providers, and the slots a host configured for it gets. The gateway never sees this half.
 */
import type { Config } from '../config.js';
import type { JobKind, JobOf, QuotedOf, ResultOf } from '../jobs/index.js';
import type { ModelGenerator, SrUse, SR_FACTORS } from '../inference/index.js';
import type { SniffedFormat } from '../media/index.js';
import type { DiskNeed, ReadinessCheck } from '../worker/index.js';
import type { ReadinessContext } from './readiness-checks.js';
import type { KindStates } from './kinds/index.js';
import type { Engine, ExecuteOptions } from './run-job.js';

/** What a pipeline binding gets besides its quoted job. */
export interface PipelineContext {
  /** The job's temp directory (removed after the job). */
  dir: string;
  engine: Engine;
  opts: ExecuteOptions;
  /** The optional fields every pipeline takes, prepared once. */
  binaries: { ffmpegPath?: string; ffprobePath?: string };
  withSignal: { signal?: AbortSignal };
  upscaleChoices: { modelName?: string; tile?: number; signal?: AbortSignal };
}

/** What a kind's warm-up adds steps with (src/app/warm-start.ts). */
export interface WarmContext {
  engine: Engine;
  /** Opens and runs a super-resolution network once per network and shape. */
  sr(use: SrUse, factor: (typeof SR_FACTORS)[number]): void;
  /** Any other step: `what` names it in the warm-up report. */
  step(what: string, run: () => Promise<unknown>): void;
}

export interface KindRuntime<K extends JobKind> {
  /** Runs the kind's pipeline on a quoted job, stores what it made (opts.store) and answers the result. */
  run(quoted: QuotedOf<K>, ctx: PipelineContext): Promise<ResultOf<K>>;
  /** Its own readiness checks (the directories and the disk are checked for every kind). */
  readiness(ctx: ReadinessContext): ReadinessCheck[];
  /** What one job can need on disk (docs/operations.md, "Disk space"). */
  diskNeed(config: Config): DiskNeed;
  /** The networks its jobs run, opened (and run) before the daemon reports ready. */
  warm(ctx: WarmContext): void;
  /** Whether its jobs run networks on the execution provider (a host whose provider fails does not take them). */
  usesExecutionProvider: boolean;
  /** Releases what it keeps open between jobs (threads, backends: its part of `engine.kinds`), at shutdown. */
  release?(states: KindStates): Promise<unknown>;
  /**
   * The extension of the one file its run will write, where the job says it before the run (`sniff`
   * reads a local input's format; undefined for a URL or an unreadable file), so that the command
   * line refuses a misnamed `-o` before any work (cli/output-name.ts). Absent, or undefined: the
   * name is checked when the result is stored (several files, or a URL's format).
   */
  resultExtension?(job: JobOf<K>, sniff: (input: string) => Promise<SniffedFormat | undefined>): Promise<string | undefined>;
  /** The networks it builds itself (its test networks), by generator name: `media-worker models prepare` makes them. */
  modelGenerators?: Readonly<Record<string, ModelGenerator>>;
  /** Slots a host configured for it gets while WORKER_CONCURRENCY is unset and leaves it at 0 (a backend configured, say). */
  configuredSlots?(config: Config): number;
}
