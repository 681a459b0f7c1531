import { pathToFileURL } from 'node:url';
import { KINDS, type JobKind } from '../jobs/index.js';
import type { ProtocolSettings } from './settings.js';

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

/**
 * The base every result URL of a deployment starts with: RESULTS_BASE_URL when set (a CDN or a
 * gateway in front of the files), else `s3://<bucket>/<prefix>/` for a bucket (s3, upload-url) or the file:// URL of
 * RESULTS_DIR (development). Workers name results under it; gateways check results against it.
 */
export function resultsBaseUrl(
  settings: Pick<ProtocolSettings, 'publicBaseUrl' | 'resultsStore' | 'resultsDir' | 's3Bucket' | 's3Prefix'>,
): string {
  if (settings.publicBaseUrl !== undefined) return settings.publicBaseUrl;
  if (settings.resultsStore !== 'local')
    return `s3://${settings.s3Bucket ?? ''}/${settings.s3Prefix === '' ? '' : `${settings.s3Prefix}/`}`;
  return pathToFileURL(settings.resultsDir).href;
}
