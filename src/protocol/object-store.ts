/**
 * The results bucket as workers and gateways both address it (RESULTS_STORE=s3): one S3 client
 * built from the shared settings, and the fixed key of each result file,
 * `<RESULTS_S3_PREFIX>/<kind>/<task id>/<name>.<ext>`, so a redelivered job writes the same key
 * again rather than a second object; and the calls both sides make alike: reading a stored copy
 * back (HEAD: its size and sha256), listing a folder page by page, a failed request's status. The
 * SDK is loaded only when a bucket is used: a local store never pays for it.
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

/** What the bucket holds at a key: its size, and the sha256 its uploader put in its metadata. */
export interface StoredCopy {
  size: number | undefined;
  sha256: string | undefined;
}

/**
 * A HEAD of `key`: what was stored there, as a result's store, an upload's and the gateway's check
 * of an event each read it back. A missing key throws, as the SDK does (NotFound, 404).
 */
export async function headStoredCopy(store: ObjectStore, key: string, signal?: AbortSignal): Promise<StoredCopy> {
  const { HeadObjectCommand } = await import('@aws-sdk/client-s3');
  const head = await store.client.send(
    new HeadObjectCommand({ Bucket: store.bucket, Key: key }),
    signal === undefined ? {} : { abortSignal: signal },
  );
  return { size: head.ContentLength, sha256: head.Metadata?.[SHA256_METADATA] };
}

/** Whether the stored copy is the file that was sent: its size and its sha256. */
export function isCopyOf(held: StoredCopy, sent: { size: number; sha256: string }): boolean {
  return held.size === sent.size && held.sha256 === sent.sha256;
}

/** The HTTP status a request to the bucket failed with, where it got that far. */
export function bucketStatus(err: unknown): number | undefined {
  const status = (err as { $metadata?: { httpStatusCode?: unknown } } | null)?.$metadata?.httpStatusCode;
  return typeof status === 'number' ? status : undefined;
}

export interface ListedObject {
  key: string;
  size: number;
  modifiedMs: number;
}

/** Every object under `prefix`, one page (1,000 keys) at a time. */
export async function* listObjects(store: ObjectStore, prefix: string): AsyncGenerator<ListedObject> {
  const { ListObjectsV2Command } = await import('@aws-sdk/client-s3');
  let token: string | undefined;
  do {
    const page = await store.client.send(
      new ListObjectsV2Command({
        Bucket: store.bucket,
        Prefix: prefix,
        ...(token === undefined ? {} : { ContinuationToken: token }),
      }),
    );
    for (const o of page.Contents ?? [])
      if (o.Key !== undefined)
        yield { key: o.Key, size: o.Size ?? 0, modifiedMs: o.LastModified?.getTime() ?? Number.NaN };
    token = page.IsTruncated === true ? page.NextContinuationToken : undefined;
  } while (token !== undefined);
}
