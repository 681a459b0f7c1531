/**
 * The media functions bound to one job's settings, in the shape the jobs layer's `quoteJob` takes.
 * Build one per job, inside that job's directory:
 *
 *   await withJobDir(job.id, (dir) => quoteJob(job, createMediaDeps({ ...settings, dir })));
 */
import { localize, type FetchOptions } from './fetch.js';
import type { InputKind } from './settings.js';
import { probeImage, type ProbeImageOptions } from './probe-image.js';
import { probeMedia } from './probe-media.js';
import type { ImageInfo, LocalInput, MediaInfo } from './types.js';
import { definedFields } from '../defined-fields.js';

export interface MediaDeps {
  localize(source: string, kind: InputKind, signal?: AbortSignal): Promise<LocalInput>;
  probeImage(path: string): Promise<ImageInfo>;
  probeMedia(path: string): Promise<MediaInfo>;
  ffmpegPath?: string;
}

export interface MediaDepsOptions extends FetchOptions, ProbeImageOptions {
  /** The job's directory (see withJobDir); downloads land here. */
  dir: string;
  /** Cancels every probe and download made through these deps (a per-call signal is added to it). */
  signal?: AbortSignal;
  ffprobePath?: string;
  /** Handed on to quotes that decode with ffmpeg. */
  ffmpegPath?: string;
  probeTimeoutMs?: number;
}

export function createMediaDeps(options: MediaDepsOptions): MediaDeps {
  const { signal, ffprobePath, ffmpegPath, probeTimeoutMs, maxPixels, maxSide, verifyDecode, ...fetchOptions } =
    options;
  const combine = (extra?: AbortSignal): AbortSignal | undefined =>
    extra === undefined ? signal : signal === undefined ? extra : AbortSignal.any([signal, extra]);

  return {
    localize: (source, kind, callSignal) => {
      const s = combine(callSignal);
      return localize(source, kind, { ...fetchOptions, ...definedFields({ signal: s }) });
    },
    probeImage: (path) => probeImage(path, definedFields({ maxPixels, maxSide, verifyDecode })),
    probeMedia: (path) => probeMedia(path, definedFields({ ffprobePath, timeoutMs: probeTimeoutMs, signal })),
    ...definedFields({ ffmpegPath }),
  };
}
