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
/** 16 KiB/s over 5 s windows: a trickle (one byte every few seconds) is cut in 5 s, a slow but real link is not. */
export const DEFAULT_MIN_BYTES_PER_SECOND = 16 * 1024;
export const DEFAULT_RATE_WINDOW_MS = 5_000;

/**
 * MEDIA_WORKER_PRIVATE_ORIGINS: URL prefixes (`http://127.0.0.1:8080/results/`) that inputs may be
 * fetched from although their address is private, over http too: the one-host set-up's own
 * gateway, and nothing else. An origin alone (`http://127.0.0.1:8080`) allows its whole site.
 * Each becomes `<origin><path>/`, so a prefix never matches a longer port or folder name.
 */
export function parsePrivateOrigins(text: string): string[] {
  const entries = text
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e !== '');
  return entries.map((entry) => {
    let url: URL | undefined;
    try {
      url = new URL(entry);
    } catch {
      url = undefined;
    }
    if (
      url === undefined ||
      !['http:', 'https:'].includes(url.protocol) ||
      url.username !== '' ||
      url.password !== '' ||
      url.search !== '' ||
      url.hash !== ''
    ) {
      throw new Error(
        `Expected a comma-separated list of http or https URL prefixes such as http://127.0.0.1:8080/results/ but received ${JSON.stringify(entry)}`,
      );
    }
    return `${url.origin}${url.pathname.endsWith('/') ? url.pathname : `${url.pathname}/`}`;
  });
}
