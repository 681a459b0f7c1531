import { KINDS, type JobKind } from '../jobs/index.js';

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
 * How long a result lives (and its URL works): the kind's `resultLifetimeDays` (the spec's days), or
 * RESULTS_UPSCALE_LIFETIME_DAYS for the kinds that follow that setting. The worker sweeps by it; the
 * gateway's signed links expire by it.
 */
export function resultLifetimeMs(kind: JobKind, upscaleResultLifetimeDays: number): number {
  const days = KINDS[kind].resultLifetimeDays;
  return (days === 'upscale-setting' ? upscaleResultLifetimeDays : days) * DAY_MS;
}
