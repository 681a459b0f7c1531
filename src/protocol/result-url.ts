/**
 * The public URL of a stored file: RESULTS_BASE_URL joined with its path segments, each encoded.
 * Results written by a worker and uploads accepted by a one-host gateway are named alike.
 * `<base>/<kind>/<task id>/<file>`; the base may or may not end with a slash.
 */
export function resultUrl(publicBaseUrl: string, segments: readonly string[]): string {
  const base = publicBaseUrl.endsWith('/') ? publicBaseUrl : `${publicBaseUrl}/`;
  return new URL(segments.map(encodeURIComponent).join('/'), base).toString();
}
