/**
 * The media layer's settings, for src/config.ts: download caps and fetch timeouts. No imports, so
 * reading the settings loads no media runtime (sharp); the rest of the layer is entered through
 * index.ts.
 */

export type InputKind = 'image' | 'video' | 'audio';

const MiB = 1024 * 1024;

/** Download caps per input kind, in bytes (also the defaults of the MEDIA_WORKER_MAX_*_BYTES settings). */
export const DEFAULT_MAX_BYTES: Readonly<Record<InputKind, number>> = {
  image: 50 * MiB,
  video: 1024 * MiB,
  audio: 200 * MiB,
};
// Also the defaults of the MEDIA_WORKER_FETCH_* settings.
export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;
export const DEFAULT_IDLE_TIMEOUT_MS = 30_000;
export const DEFAULT_DEADLINE_MS = 5 * 60_000;
export const DEFAULT_MAX_REDIRECTS = 5;
