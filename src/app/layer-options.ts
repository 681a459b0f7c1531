/**
 * Settings turned into the options each layer takes. The CLI and the daemon build their runtime
 * from the same config, so a job behaves the same wherever it arrives; only `allowLocalPaths`
 * differs (the CLI accepts local files, jobs from the network never do).
 */
import type { Config } from '../config.js';
import type { FetchOptions, MediaDepsOptions } from '../media/index.js';
import { definedFields } from '../defined-fields.js';

export function mediaDepsOptions(
  config: Config,
  job: { dir: string; signal?: AbortSignal; allowLocalPaths: boolean },
): MediaDepsOptions {
  return {
    dir: job.dir,
    ...definedFields({ signal: job.signal }),
    allowLocalPaths: job.allowLocalPaths,
    ...inputFetchOptions(config),
    ...definedFields({ ffprobePath: config.ffprobePath, ffmpegPath: config.ffmpegPath }),
  };
}

/**
 * The safe fetcher's rules for a job's inputs (addresses, size caps, timeouts, the slowest rate);
 * a provider backend's results are fetched by the same rules.
 */
export function inputFetchOptions(config: Config): FetchOptions {
  return {
    allowHttp: config.allowPrivateUrls,
    allowPrivate: config.allowPrivateUrls,
    privateUrlPrefixes: config.privateOrigins ?? [],
    maxBytes: { image: config.maxImageBytes, video: config.maxVideoBytes, audio: config.maxAudioBytes },
    connectTimeoutMs: config.fetchConnectTimeoutMs,
    idleTimeoutMs: config.fetchIdleTimeoutMs,
    deadlineMs: config.fetchDeadlineMs,
    minBytesPerSecond: config.fetchMinBytesPerSecond,
  };
}

/** Where the model registry finds manifests and weights. */
export function registryOptions(config: Config): { modelsDir: string; filesDir?: string } {
  return { modelsDir: config.modelsDir, ...definedFields({ filesDir: config.modelFilesDir }) };
}
