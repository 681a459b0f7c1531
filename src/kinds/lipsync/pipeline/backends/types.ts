/**
 * Lip-sync behind one interface: a backend serves some of the public model ids (configuration) and
 * is ready or says why not; the job's path (app/kinds/lipsync.ts) hands the first ready one that
 * serves the job's model a request and stores and bills what it returns, whatever made it.
 */
import type { Logger } from 'pino';
import type { JobProgress, LipsyncModelId, SyncMode } from '../../../../jobs/index.js';
import type { MediaInfo } from '../../../../media/index.js';
import type { LipsyncBackendName } from '../../settings.js';

/** Ready, or why not, for /readyz, capabilities and the job's LIPSYNC_FAILED message. */
export type BackendReadiness = { ready: true } | { ready: false; reason: string };

export interface LipsyncBackendRequest {
  /** Derives the provider's Idempotency-Key: the same task asks for the same generation. */
  taskId: string;
  model: LipsyncModelId;
  syncMode: SyncMode;
  activeSpeaker: boolean;
  /** The inputs as the job named them (URLs; local paths from the command line). */
  videoSource: string;
  audioSource: string;
  /** The local copies the quote fetched and measured. */
  videoPath: string;
  videoInfo: MediaInfo;
  audioPath: string;
  audioInfo: MediaInfo;
  /** The job's temporary directory. */
  dir: string;
  /** Where the result goes (an MP4). */
  outputPath: string;
  signal: AbortSignal;
  /**
   * The kind's processing limit (WORKER_WATCHDOG_MS; the spec's 4 minutes): a provider backend
   * starts no call and no wait past it. The watchdog, counting from the job's start, aborts
   * `signal` at the same limit; this bounds a caller that has none. Infinity: no limit.
   */
  timeLimitMs: number;
  logger: Logger;
  onProgress(progress: JobProgress): void;
}

export interface LipsyncBackendOutcome {
  outputPath: string;
  /** Measured from the result. */
  durationSeconds: number;
  /** For the log line: what ran (network, provider generation, ...). */
  details: Record<string, unknown>;
}

export interface LipsyncBackend {
  readonly name: LipsyncBackendName;
  /** The model ids it is configured to serve, ready or not. */
  models(): readonly LipsyncModelId[];
  /** Cheap (files loaded once, a key checked once, and again after a provider's 402); never generates. */
  readiness(signal?: AbortSignal): Promise<BackendReadiness>;
  run(request: LipsyncBackendRequest): Promise<LipsyncBackendOutcome>;
  release?(): Promise<void>;
}
