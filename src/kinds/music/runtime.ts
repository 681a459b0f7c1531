/**
 * Music's runtime half: the configured backends (src/kinds/music/pipeline/), ready when one says so (weights
 * installed, server answering: asked again at every check, since a server can go away). It runs
 * nothing on this host's execution provider, and a host with a backend configured serves one job
 * at a time unless WORKER_CONCURRENCY says otherwise (its default leaves music off).
 */
import type { Config } from '../../config.js';
import type { Logger } from '../../logger.js';
import {
  createMusicBackends,
  folderLicence,
  generateMusicJob,
  modelFolder,
  musicReadiness,
  type MusicBackend,
} from './pipeline/index.js';
import type { KindRuntime } from '../../app/kind-runtime.js';
import { inputFetchOptions } from '../../app/layer-options.js';

/** What music keeps open between jobs, on the engine (`engine.kinds`): the configured backends, in the operator's order (MEDIA_WORKER_MUSIC_BACKENDS). */
export interface MusicStates {
  music: MusicBackend[];
}

export const musicRuntime: KindRuntime<'music', MusicStates> = {
  // MusicGen is a folder, not a manifest of the registry: its licence is its folder manifest's.
  async folderModels(config, filesDir) {
    const folder = modelFolder(config.musicgenModel, filesDir);
    const licence = await folderLicence(folder).catch(() => undefined);
    return licence === undefined ? [] : [{ name: config.musicgenModel, task: 'music', licence, folder }];
  },
  async run(quoted, { dir, engine, opts, binaries }) {
    const result = await generateMusicJob(quoted.job.input, {
      taskId: opts.taskId,
      dir,
      backends: engine.kinds.music,
      seconds: engine.config.musicSeconds,
      signal: opts.signal ?? new AbortController().signal,
      logger: opts.logger,
      store: (localPath, meta) => opts.store(localPath, { taskId: opts.taskId, kind: 'music', ...meta }),
      onProgress: (p) => opts.onProgress?.(p),
      ...binaries,
    });
    opts.logger.info({ songs: result.songs.map((s) => ({ duration: s.duration, title: s.title })) }, 'music generated');
    return result;
  },
  readiness: (ctx) => [
    {
      name: 'music-backend',
      run: async () => {
        const music = await musicReadiness(ctx.engine.kinds.music);
        return music.ready ? null : (music.reason ?? 'no music backend is ready');
      },
    },
  ],
  diskNeed() {
    const output = 64 * 1024 * 1024;
    return { temp: output, results: output };
  },
  warm() {},
  usesExecutionProvider: false,
  release: (states) => Promise.all(states.music.map((backend) => backend.release?.())),
  configuredSlots: (config) => ((config.musicBackends?.length ?? 0) > 0 ? 1 : 0),
};

/** The configured backends; a remote backend's files are fetched by the job inputs' rules. */
export function openMusicBackends(config: Config, logger: Logger): MusicBackend[] {
  return createMusicBackends(config, { logger, fetch: inputFetchOptions(config) });
}
