/**
 * The results bucket as workers and gateways both address it (RESULTS_STORE=s3): one S3 client
 * built from the shared settings, and the fixed key of each result file,
 * `<RESULTS_S3_PREFIX>/<kind>/<task id>/<name>.<ext>`, so a redelivered job writes the same key
 * again rather than a second object. The SDK is loaded only when a bucket is used: a local store
 * never pays for it.
 */
import type { S3Client } from '@aws-sdk/client-s3';
import type { ProtocolSettings } from './settings.js';

export type ObjectStoreSettings = Pick<
  ProtocolSettings,
  's3Bucket' | 's3Endpoint' | 's3Region' | 's3Prefix' | 's3ForcePathStyle'
>;

export interface ObjectStore {
  client: S3Client;
  bucket: string;
  prefix: string;
}

/** The user metadata key (`x-amz-meta-sha256`) that carries a stored file's sha256 (hex). */
export const SHA256_METADATA = 'sha256';

export interface ObjectStoreOptions {
  /** One request's longest silence (a stalled server) before the SDK gives it up and retries. */
  requestTimeoutMs?: number;
  /** Tries of one request by the SDK (its standard retry mode: 5xx, throttling, resets). */
  maxAttempts?: number;
}

export async function openObjectStore(
  settings: ObjectStoreSettings,
  options: ObjectStoreOptions = {},
): Promise<ObjectStore> {
  if (settings.s3Bucket === undefined)
    throw new TypeError('Expected RESULTS_S3_BUCKET to be set with RESULTS_STORE=s3 but received it unset');
  const { S3Client } = await import('@aws-sdk/client-s3');
  const client = new S3Client({
    region: settings.s3Region,
    ...(settings.s3Endpoint === undefined ? {} : { endpoint: settings.s3Endpoint }),
    forcePathStyle: settings.s3ForcePathStyle,
    // The SDK's default since 2025 adds CRC32 checksums to every upload, which R2, GCS's
    // interoperability API and older MinIO refuse or mishandle: only where an operation requires one.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    maxAttempts: options.maxAttempts ?? 3,
    // A stalled server: its request fails (and is retried) instead of the SDK's default, a warning while it waits forever.
    requestHandler: {
      connectionTimeout: 10_000,
      requestTimeout: options.requestTimeoutMs ?? 60_000,
      throwOnRequestTimeout: true,
    },
  });
  return { client, bucket: settings.s3Bucket, prefix: settings.s3Prefix };
}

/** The bucket key of a result's relative path (`<kind>/<task id>/<name>.<ext>`). */
export function objectKey(prefix: string, relative: string): string {
  return prefix === '' ? relative : `${prefix}/${relative}`;
}
