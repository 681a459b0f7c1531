/**
 * Uploads in the results bucket (the gateway's RESULTS_STORE is s3 or upload-url): the checked file
 * is put at the fixed key `<RESULTS_S3_PREFIX>/uploads/<account id>/<upload id>.<ext>`, so several
 * gateways on different hosts share uploads without a shared volume. As on disk (upload-store.ts),
 * the owner is the key's folder, an account's usage is one listing of it, and expiry is an
 * object's age: a sweep here, or the bucket's lifecycle rule (docs/results-storage.md).
 */
import { createReadStream } from 'node:fs';
import type { SniffedFormat } from '../../media/index.js';
import {
  SHA256_METADATA,
  headStoredCopy,
  isCopyOf,
  listObjects,
  objectKey,
  type ObjectStore,
} from '../../protocol/index.js';
import type { UploadUsage } from './upload-store.js';

/** The Content-Type an upload is stored and served with: the sniffed format's, never the client's. */
export const UPLOAD_CONTENT_TYPES: Readonly<Record<SniffedFormat, string>> = {
  jpeg: 'image/jpeg',
  png: 'image/png',
  webp: 'image/webp',
  gif: 'image/gif',
  mp4: 'video/mp4',
  mov: 'video/quicktime',
  m4v: 'video/x-m4v',
  m4a: 'audio/mp4',
  mkv: 'video/x-matroska',
  webm: 'video/webm',
  mp3: 'audio/mpeg',
  wav: 'audio/wav',
  aac: 'audio/aac',
  ogg: 'audio/ogg',
  flac: 'audio/flac',
};

/** The folder (with its trailing slash) of one account's uploads, or of all of them. */
export function uploadsPrefix(store: ObjectStore, account?: string): string {
  return objectKey(store.prefix, account === undefined ? 'uploads/' : `uploads/${account}/`);
}

export function uploadKey(store: ObjectStore, account: string, name: string): string {
  return `${uploadsPrefix(store, account)}${name}`;
}

/**
 * The account's unexpired uploads in the bucket. An object past its lifetime counts for nothing:
 * a lifecycle rule deletes it up to a day late, and its link has expired already.
 */
export async function bucketAccountUsage(
  store: ObjectStore,
  account: string,
  lifetimeMs: number,
  nowMs: number,
): Promise<UploadUsage> {
  let bytes = 0;
  let files = 0;
  for await (const o of listObjects(store, uploadsPrefix(store, account))) {
    if (nowMs - o.modifiedMs >= lifetimeMs) continue;
    bytes += o.size;
    files += 1;
  }
  return { bytes, files };
}

export interface StoredUpload {
  size: number;
  /** Lower-case hex, kept in the object's metadata as a result's is (`x-amz-meta-sha256`). */
  sha256: string;
  /** Base64: sent as Content-MD5, which every S3-compatible store checks against the body it got. */
  md5: string;
  contentType: string;
}

/**
 * One PutObject streamed from the file (an upload is at most GATEWAY_UPLOAD_MAX_BYTES, far below a
 * single PUT's 5 GB), its length and MD5 declared: a body that arrives other than it left is
 * refused by the store, never kept. S3 shows an object only once its PUT completed. Then a HEAD
 * confirms the stored size and sha256, as the worker's bucket store confirms a result.
 */
export async function putUpload(store: ObjectStore, file: string, key: string, upload: StoredUpload): Promise<void> {
  const { DeleteObjectCommand, PutObjectCommand } = await import('@aws-sdk/client-s3');
  await store.client.send(
    new PutObjectCommand({
      Bucket: store.bucket,
      Key: key,
      Body: createReadStream(file),
      ContentLength: upload.size,
      ContentMD5: upload.md5,
      ContentType: upload.contentType,
      Metadata: { [SHA256_METADATA]: upload.sha256 },
    }),
  );
  const held = await headStoredCopy(store, key);
  if (!isCopyOf(held, upload)) {
    // Never linked, and not left to count against the account's quota.
    await store.client.send(new DeleteObjectCommand({ Bucket: store.bucket, Key: key })).catch(() => undefined);
    throw new Error(
      `Expected ${key} to hold ${upload.size} bytes of sha256 ${upload.sha256} but the bucket says ${String(held.size)} bytes of ${String(held.sha256)}`,
    );
  }
}

/** Deletes the upload objects older than `maxAgeMs`; returns how many. Several gateways may sweep at once. */
export async function sweepBucketUploads(store: ObjectStore, maxAgeMs: number, nowMs: number): Promise<number> {
  const { DeleteObjectCommand } = await import('@aws-sdk/client-s3');
  let removed = 0;
  for await (const o of listObjects(store, uploadsPrefix(store))) {
    if (nowMs - o.modifiedMs < maxAgeMs) continue;
    // One DeleteObject per key: the multi-object delete needs a Content-MD5 some stores handle badly.
    await store.client.send(new DeleteObjectCommand({ Bucket: store.bucket, Key: o.key }));
    removed += 1;
  }
  return removed;
}
