import { LIPSYNC_RESULT_URL_LIFETIME_DAYS, MUSIC_AUDIO_URL_LIFETIME_DAYS, type JobKind } from '../jobs/index.js';

/**
 * The public URL of a stored file: RESULTS_BASE_URL joined with its path segments, each encoded.
 * Results written by a worker and uploads accepted by a one-host gateway are named alike.
 * `<base>/<kind>/<task id>/<file>`; the base may or may not end with a slash.
 */
export function resultUrl(publicBaseUrl: string, segments: readonly string[]): string {
  const base = publicBaseUrl.endsWith('/') ? publicBaseUrl : `${publicBaseUrl}/`;
  return new URL(segments.map(encodeURIComponent).join('/'), base).toString();
}

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * How long a result lives (and its URL works): the spec's 7 days for lip-sync and 14 for music,
 * RESULTS_UPSCALE_LIFETIME_DAYS for upscales. The worker sweeps by it; the gateway's signed links
 * expire by it.
 */
export function resultLifetimeMs(kind: JobKind, upscaleResultLifetimeDays: number): number {
  switch (kind) {
    case 'lipsync':
      return LIPSYNC_RESULT_URL_LIFETIME_DAYS * DAY_MS;
    case 'music':
      return MUSIC_AUDIO_URL_LIFETIME_DAYS * DAY_MS;
    case 'image':
    case 'video':
      return upscaleResultLifetimeDays * DAY_MS;
  }
}
