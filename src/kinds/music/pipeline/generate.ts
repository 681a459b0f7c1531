/**
 * One music job: the request from the validated job, the backend chosen for it, its raw songs,
 * then the shared finishing stage. Failures are ProcessingErrors that name what was missing; the
 * contract's edge (app/run-job.ts) gives them GENERATION_FAILED, the spec's only processing code for music.
 */
import type { Logger } from 'pino';
import { ProcessingError, isExplainedFailure, type MusicInput } from '../../../jobs/index.js';
import { chooseBackend } from './choose.js';
import { finishSongs, type StoreFile } from './finish.js';
import { toMusicRequest } from './request.js';
import type { MusicBackend, MusicProgress, MusicResult } from './types.js';
import { definedFields } from '../../../defined-fields.js';

export interface MusicJobOptions {
  taskId: string;
  dir: string;
  backends: readonly MusicBackend[];
  seconds: number;
  signal: AbortSignal;
  logger: Logger;
  store: StoreFile;
  onProgress?: (p: MusicProgress) => void;
  ffmpegPath?: string;
  ffprobePath?: string;
}

export async function generateMusicJob(input: MusicInput, opts: MusicJobOptions): Promise<MusicResult> {
  const request = toMusicRequest(input, { taskId: opts.taskId, seconds: opts.seconds });
  if (opts.backends.length === 0) {
    throw new ProcessingError(
      'No music backend is configured on this worker (MEDIA_WORKER_MUSIC_BACKENDS; docs/music.md)',
    );
  }
  const choice = await chooseBackend(opts.backends, request, opts.signal);
  if (choice.backend === undefined) {
    throw new ProcessingError(`No music backend can serve this job: ${choice.passed.join('; ')}`);
  }
  const { backend } = choice;
  opts.logger.info(
    { backend: backend.name, passed: choice.passed, mode: request.mode, instrumental: request.instrumental },
    'music backend chosen',
  );
  const onProgress = (p: MusicProgress): void => opts.onProgress?.({ ...p, stage: `${backend.name}: ${p.stage}` });
  let raw;
  try {
    raw = await backend.generate(request, { dir: opts.dir, signal: opts.signal, logger: opts.logger, onProgress });
  } catch (err) {
    // Cancellation and the watchdog keep their own reason; the rest is the provider failing.
    if (opts.signal.aborted || isExplainedFailure(err)) throw err;
    throw new ProcessingError(`The ${backend.name} music backend failed: ${(err as Error).message}`, { cause: err });
  }
  const songs = await finishSongs(request, raw, {
    dir: opts.dir,
    taskId: opts.taskId,
    store: opts.store,
    signal: opts.signal,
    onProgress: (p) => opts.onProgress?.(p),
    ...definedFields({ ffmpegPath: opts.ffmpegPath, ffprobePath: opts.ffprobePath }),
  });
  return { songs };
}
