/**
 * Results in a bucket (RESULTS_STORE=s3; docs/results-storage.md): each file goes to its fixed key
 * `<RESULTS_S3_PREFIX>/<kind>/<task id>/<name>.<ext>` (s3-upload.ts: one PUT, or a multipart
 * upload read from the file part by part into reused buffers: a 1 GB video never sits in memory; a
 * failed multipart upload is aborted), its sha256 in the object's metadata. The stored object is then read back (HEAD): only
 * its confirmed size and sha256 go into the event. An object appears at its key whole or not at
 * all (S3 shows a multipart object only once completed), so nothing half-written is ever linked.
 * Credentials come from the SDK's default chain (environment, profile, instance role). Expiry is the
 * bucket's lifecycle rule's: this store sweeps nothing.
 */
import type { Logger } from 'pino';
import { fileDigest, type FileDigest } from '../media/index.js';
import {
  SHA256_METADATA,
  bucketStatus,
  headStoredCopy,
  isCopyOf,
  listObjects,
  objectKey,
  openObjectStore,
  resultUrl,
  resultsBaseUrl,
  type ObjectStore,
  type ObjectStoreOptions,
  type ObjectStoreSettings,
} from '../protocol/index.js';
import {
  resultExpiresAt,
  DEFAULT_STORE_DEADLINE_MS,
  checkTaskId,
  contentTypeOf,
  resultRelativePath,
  type ResultStore,
  type StoredResult,
  type StoreOptions,
} from './result-store.js';
import { withStoreRetries } from './store-retries.js';
import { reachKillPoint } from './kill-point.js';
import { uploadFile, type UploadShape } from './s3-upload.js';

export type { UploadShape };
import { errorMessage } from '../errors.js';
import { JOB_KINDS } from '../jobs/index.js';

export interface S3ResultStoreSettings extends ObjectStoreSettings {
  publicBaseUrl?: string | undefined;
  upscaleResultLifetimeDays: number;
  /** RESULTS_STORE_DEADLINE_MS (default 2 minutes). */
  storeDeadlineMs?: number;
  /** The client's settings below the store's (tests shorten a stalled request's wait). */
  client?: ObjectStoreOptions;
  /** The multipart upload's shape (RESULTS_S3_PART_MIB; the storage benchmark varies it; default 8 MiB parts, three in flight). */
  upload?: UploadShape;
}

/** Errors of a store that refuses for good: trying again within two minutes changes nothing. */
const PERMANENT_ERRORS = new Set([
  'NoSuchBucket',
  'InvalidAccessKeyId',
  'SignatureDoesNotMatch',
  'AccessDenied',
  'InvalidBucketName',
  'AllAccessDisabled',
  'InvalidArgument',
]);

export function permanentStoreError(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const name = (err as { name?: unknown }).name;
  if (typeof name === 'string' && PERMANENT_ERRORS.has(name)) return true;
  const status = bucketStatus(err);
  return status !== undefined && status >= 400 && status < 500 && status !== 408 && status !== 429;
}

/** The stored object is not what was sent (a store that lost or mangled it): tried again. */
class StoredCopyMismatch extends Error {
  override name = 'StoredCopyMismatch';
}

export class S3ResultStore implements ResultStore {
  private opened: Promise<ObjectStore> | undefined;

  constructor(
    private readonly settings: S3ResultStoreSettings,
    private readonly logger?: Logger,
  ) {}

  private bucket(): Promise<ObjectStore> {
    this.opened ??= openObjectStore(this.settings, this.settings.client);
    return this.opened;
  }

  async storeResult(localPath: string, options: StoreOptions, signal?: AbortSignal): Promise<StoredResult> {
    const segments = resultRelativePath(options);
    const relative = segments.join('/');
    const digest = await fileDigest(localPath, signal);
    const store = await this.bucket();
    const key = objectKey(store.prefix, relative);
    await withStoreRetries(
      `the result ${relative}`,
      {
        deadlineMs: this.settings.storeDeadlineMs ?? DEFAULT_STORE_DEADLINE_MS,
        permanent: permanentStoreError,
        onRetry: (err, attempt, waitMs) =>
          this.logger?.warn({ err, key, attempt, waitMs }, 'Storing a result failed; retrying'),
        ...(signal === undefined ? {} : { signal }),
      },
      () => uploadAndConfirm(store, key, localPath, options.ext, digest, this.settings.upload ?? {}, signal),
    );
    const expiresAt = resultExpiresAt(options.kind, this.settings.upscaleResultLifetimeDays);
    const base = resultsBaseUrl({
      publicBaseUrl: this.settings.publicBaseUrl,
      s3Bucket: this.settings.s3Bucket,
      s3Prefix: this.settings.s3Prefix,
      resultsStore: 's3',
      resultsDir: '',
    });
    return { key: relative, url: resultUrl(base, segments), ...digest, expiresAt };
  }

  async discard(taskId: string): Promise<void> {
    checkTaskId(taskId);
    const store = await this.bucket();
    const { DeleteObjectCommand } = await import('@aws-sdk/client-s3');
    for (const kind of JOB_KINDS)
      for await (const object of listObjects(store, objectKey(store.prefix, `${kind}/${taskId}/`)))
        await store.client.send(new DeleteObjectCommand({ Bucket: store.bucket, Key: object.key }));
  }

  async reachable(): Promise<string | null> {
    try {
      const store = await this.bucket();
      const { HeadBucketCommand } = await import('@aws-sdk/client-s3');
      await store.client.send(new HeadBucketCommand({ Bucket: store.bucket }));
      return null;
    } catch (err) {
      const status = bucketStatus(err);
      const what =
        status === 404
          ? 'does not exist'
          : status === 403
            ? 'refuses these credentials'
            : `cannot be reached (${errorMessage(err)})`;
      return `the results bucket ${String(this.settings.s3Bucket)} ${what}`;
    }
  }

  /** The bucket's lifecycle rule expires results (docs/results-storage.md); nothing to sweep here. */
  startSweeper(): () => void {
    return () => undefined;
  }
}

async function uploadAndConfirm(
  store: ObjectStore,
  key: string,
  localPath: string,
  ext: string,
  digest: FileDigest,
  shape: UploadShape,
  signal: AbortSignal | undefined,
): Promise<void> {
  await uploadFile(
    store,
    localPath,
    { key, contentType: contentTypeOf(ext), metadata: { [SHA256_METADATA]: digest.sha256 }, size: digest.size },
    shape,
    signal,
  );
  const held = await headStoredCopy(store, key, signal);
  if (!isCopyOf(held, digest)) {
    throw new StoredCopyMismatch(
      `Expected the stored ${key} to hold ${digest.size} bytes with sha256 ${digest.sha256} but it holds ${String(held.size)} bytes with sha256 ${String(held.sha256)}`,
    );
  }
  reachKillPoint('stored');
}
