/**
 * The runtime half of a job kind (docs/architecture.md, "A job kind is one descriptor"): what the
 * contract's descriptor (src/jobs/kinds/) leaves to the host that runs it. One object per kind
 * under src/app/kinds/, in a registry typed `{ [K in JobKind]: KindRuntime<K, KindStates> }`
 * (src/app/kinds.ts): its pipeline binding, its readiness checks, what a job needs on disk,
 * what warm-up opens, whether it runs on the execution providers, and the slots a host configured
 * for it gets. The gateway never sees this half.
 *
 * Also what a runtime is handed (the engine, a job's options, the readiness context) and the
 * registry as a value (KindRuntimes): the corridor (run-job.ts), readiness, hardware and quoting
 * take it as an argument, so that none of them imports a kind, and nothing here names one. `S` is
 * what the kinds keep open between jobs (the registry's KindStates); a runtime names only the part
 * it reads.
 */
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type {
  HardwareProfile,
  JobKind,
  JobOf,
  JobProgress,
  KindPolicies,
  QuotedJob,
  QuotedOf,
  ResultOf,
} from '../jobs/index.js';
import type {
  LicenceFacts,
  ModelGenerator,
  SessionCache,
  SrModelLoader,
  SrUse,
  SR_FACTORS,
} from '../inference/index.js';
import type { SniffedFormat } from '../media/index.js';
import type { DiskNeed, ReadinessCheck } from '../worker/index.js';
import type { WorkerSettings } from '../worker/settings.js';

/** One backend of a kind as capabilities report it (docs/protocol.md, "Discovery"). */
export interface BackendReport {
  name: string;
  ready: boolean;
  /** The model ids it serves. */
  models: string[];
  reason?: string;
}

/** Processing time limit per kind, in milliseconds (the daemon's watchdog, WORKER_WATCHDOG_MS). */
export type TimeLimitsMs = Readonly<Record<JobKind, number>>;

/** Long-lived state shared by every job of a process: sessions are created once and reused (run-job.ts creates it). */
export interface Engine<S = unknown> {
  config: Config;
  sessions: SessionCache;
  /** Sessions on the calling thread, for networks of several inputs or outputs (face detection, mouth synchronisation). */
  inlineSessions: SessionCache;
  loadSrModel: SrModelLoader;
  /** What the kinds keep open between jobs, opened once here (their registry's `openStates`). */
  kinds: S;
  /** The kinds' runtime halves, handed in when the engine was created. */
  runtimes: KindRuntimes<S>;
  /** Processing time limit per kind (the daemon's watchdog): the quote refuses what could not finish in it. */
  timeLimitsMs: TimeLimitsMs;
  /** Releases every session, and what each kind's runtime keeps open (shutdown). */
  release(): Promise<void>;
}

/**
 * Moves a finished file to where results live and says where it can be fetched: a public URL
 * (the daemon's results store) or a local path (the command line). `name` (file name without
 * extension) is set for tasks with several files: `song-1`, `cover-1`, ...
 */
export type StoreFile = (
  localPath: string,
  meta: { taskId: string; ext: string; kind: QuotedJob['kind']; name?: string },
) => Promise<{ url: string }>;

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

/** What a kind's readiness checks are built from (readiness.ts adds the shared directory and disk checks). */
export interface ReadinessContext<S = unknown> {
  config: Config;
  settings: Pick<WorkerSettings, 'resultsDir' | 'diskReserveMb'>;
  engine: Engine<S>;
  logger: Logger;
  /** Free bytes in a directory's file system (tests fake a full disk). */
  freeBytes?: (dir: string) => Promise<number>;
  /** The results store's own check (a bucket there and its credentials passing), for every kind. */
  resultStore?: ReadinessCheck;
}

/** What a pipeline binding gets besides its quoted job. */
export interface PipelineContext<S = unknown> {
  /** The job's temp directory (removed after the job). */
  dir: string;
  engine: Engine<S>;
  opts: ExecuteOptions;
  /** The optional fields every pipeline takes, prepared once. */
  binaries: { ffmpegPath?: string; ffprobePath?: string };
  withSignal: { signal?: AbortSignal };
  upscaleChoices: { modelName?: string; tile?: number; signal?: AbortSignal };
}

/** What a kind's warm-up adds steps with (src/app/warm-start.ts). */
export interface WarmContext<S = unknown> {
  engine: Engine<S>;
  /** Opens and runs a super-resolution network once per network and shape. */
  sr(use: SrUse, factor: (typeof SR_FACTORS)[number]): void;
  /** Any other step: `what` names it in the warm-up report. */
  step(what: string, run: () => Promise<unknown>): void;
}

/** A network kept as a folder of its own (not a manifest of the registry): its setting's name, its task, its licence, where it is. */
export interface FolderModel {
  name: string;
  task: string;
  licence: LicenceFacts;
  folder: string;
}

/** The runtime half of kind `K`; `S`: the part of what the kinds keep open that it reads (nothing, by default). */
export interface KindRuntime<K extends JobKind, S = unknown> {
  /** Runs the kind's pipeline on a quoted job, stores what it made (opts.store) and answers the result. */
  run(quoted: QuotedOf<K>, ctx: PipelineContext<S>): Promise<ResultOf<K>>;
  /** Its own readiness checks (the directories and the disk are checked for every kind). */
  readiness(ctx: ReadinessContext<S>): ReadinessCheck[];
  /** What one job can need on disk (docs/operations.md, "Disk space"). */
  diskNeed(config: Config): DiskNeed;
  /** The networks its jobs run, opened (and run) before the daemon reports ready. */
  warm(ctx: WarmContext<S>): void;
  /** Whether its jobs run networks on the execution provider (a host whose provider fails does not take them). */
  usesExecutionProvider: boolean;
  /** Releases what it keeps open between jobs (threads, backends: its part of `engine.kinds`), at shutdown. */
  release?(states: S): Promise<unknown>;
  /**
   * The extension of the one file its run will write, where the job says it before the run (`sniff`
   * reads a local input's format; undefined for a URL or an unreadable file), so that the command
   * line refuses a misnamed `-o` before any work (cli/output-name.ts). Absent, or undefined: the
   * name is checked when the result is stored (several files, or a URL's format).
   */
  resultExtension?(
    job: JobOf<K>,
    sniff: (input: string) => Promise<SniffedFormat | undefined>,
  ): Promise<string | undefined>;
  /** The networks it builds itself (its test networks), by generator name: `media-worker models prepare` makes them. */
  modelGenerators?: Readonly<Record<string, ModelGenerator>>;
  /** Its networks kept as folders outside the manifest registry, as `models list` shows them (absent ones left out). */
  folderModels?(config: Config, filesDir: string): Promise<FolderModel[]>;
  /** Slots a host configured for it gets while WORKER_CONCURRENCY is unset and leaves it at 0 (a backend configured, say). */
  configuredSlots?(config: Config): number;
  /** Its backends as its last readiness check found them, for capabilities (kinds with backends; undefined before the first check). */
  backends?(engine: Engine<S>): BackendReport[] | undefined;
}

/**
 * The registry of the runtime halves as a value (src/app/kinds.ts builds the one this worker
 * has): what the corridor (run-job.ts), readiness, hardware and quoting are handed.
 */
export interface KindRuntimes<S = unknown> {
  /** One runtime half per kind. */
  byKind: { readonly [K in JobKind]: KindRuntime<K, S> };
  /** Opens what the kinds keep open, once per engine (createEngine). */
  openStates(config: Config, logger: Logger): S;
  /** Each kind's own part of the quote policy, from the settings and the host's hardware. */
  policies(config: Config, hardware: HardwareProfile): KindPolicies;
}
