/**
 * The configured music backends, built once per process from the settings, in the operator's
 * order; and the readiness summary the CLI, the daemon and /readyz report.
 */
import path from 'node:path';
import type { Logger } from 'pino';
import type { ExecutionProviderName } from '../../../inference/index.js';
import type { FetchOptions } from '../../../media/index.js';
import { AceStepBackend } from './ace-step/backend.js';
import type { MusicBackendName } from '../settings.js';
import { MusicgenBackend } from './musicgen/backend.js';
import { modelFolder } from './musicgen/folder.js';
import { SunoBackend } from './suno/backend.js';
import type { MusicBackend, Readiness } from './types.js';
import { definedFields } from '../../../defined-fields.js';

/**
 * The settings the music backends read (src/config.ts: MEDIA_WORKER_MUSIC_*, the models directory,
 * the inference settings), named here so that music does not reach up to the settings composition.
 */
export interface MusicSettings {
  musicBackends?: MusicBackendName[] | undefined;
  musicgenModel: string;
  modelsDir: string;
  modelFilesDir?: string | undefined;
  executionProviders: ExecutionProviderName[];
  threads: number;
  /** The GPU of this process (MEDIA_WORKER_DEVICE_INDEX). */
  deviceIndex?: number;
  musicDeadlineMs: number;
  musicPollIntervalMs: number;
  aceStepUrl: string;
  aceStepApiKey?: string | undefined;
  sunoBaseUrl?: string | undefined;
  sunoApiKey?: string | undefined;
  sunoModel: string;
  sunoCallbackUrl?: string | undefined;
  /** MEDIA_WORKER_ALLOW_NONCOMMERCIAL_MODELS (a one-off command sets it: cli/context.ts); unset: not allowed. */
  allowNoncommercialModels?: boolean | undefined;
}

export interface MusicBackendDeps {
  logger?: Logger;
  /** Options of the safe fetcher for downloads of provider audio and images (limits, private addresses in tests). */
  fetch?: FetchOptions;
}

export function createMusicBackend(
  name: MusicBackendName,
  settings: MusicSettings,
  deps: MusicBackendDeps = {},
): MusicBackend {
  const remote = {
    deadlineMs: settings.musicDeadlineMs,
    pollIntervalMs: settings.musicPollIntervalMs,
    fetch: deps.fetch ?? {},
  };
  switch (name) {
    case 'musicgen':
      return new MusicgenBackend({
        dir: modelFolder(settings.musicgenModel, path.resolve(settings.modelFilesDir ?? settings.modelsDir)),
        allowNoncommercial: settings.allowNoncommercialModels ?? false,
        sessions: {
          executionProviders: settings.executionProviders,
          threads: settings.threads,
          ...definedFields({ deviceIndex: settings.deviceIndex, logger: deps.logger }),
        },
      });
    case 'ace-step':
      return new AceStepBackend({
        baseUrl: settings.aceStepUrl,
        ...definedFields({ apiKey: settings.aceStepApiKey }),
        ...remote,
      });
    case 'suno-compatible':
      return new SunoBackend({
        ...definedFields({
          baseUrl: settings.sunoBaseUrl,
          apiKey: settings.sunoApiKey,
          callbackUrl: settings.sunoCallbackUrl,
        }),
        model: settings.sunoModel,
        ...remote,
      });
  }
}

export function createMusicBackends(settings: MusicSettings, deps: MusicBackendDeps = {}): MusicBackend[] {
  return (settings.musicBackends ?? []).map((name) => createMusicBackend(name, settings, deps));
}

export interface MusicReadiness {
  /** True when at least one configured backend is ready. */
  ready: boolean;
  /** Per backend, in order: ready or why not. */
  backends: { name: string; ready: boolean; reason?: string }[];
  /** One line for logs and /readyz when not ready. */
  reason?: string;
}

/** Ready when any configured backend is; otherwise what is missing, backend by backend. */
export async function musicReadiness(backends: readonly MusicBackend[], signal?: AbortSignal): Promise<MusicReadiness> {
  if (backends.length === 0)
    return { ready: false, backends: [], reason: 'no music backend configured (MEDIA_WORKER_MUSIC_BACKENDS)' };
  const each = await Promise.all(
    backends.map(async (b) => {
      const r: Readiness = await b
        .readiness(signal)
        .catch((err: unknown) => ({ ready: false, reason: (err as Error).message }));
      return r.ready ? { name: b.name, ready: true } : { name: b.name, ready: false, reason: r.reason };
    }),
  );
  const ready = each.some((b) => b.ready);
  return ready
    ? { ready, backends: each }
    : { ready, backends: each, reason: each.map((b) => `${b.name}: ${b.reason ?? 'not ready'}`).join('; ') };
}
