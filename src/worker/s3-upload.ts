/**
 * One file into a bucket key (the bucket store's upload, s3-results.ts): a single PutObject up to
 * one part's size, else a multipart upload whose parts are read from the file straight into a few
 * buffers that are used again part after part, `queueSize` parts in flight. Memory is those buffers
 * (3 x 8 MiB by default) whatever the file's size, and the upload makes no garbage: the SDK's
 * managed upload (lib-storage) gathered each part from the stream's chunks into a new buffer, two
 * copies a part left to the collector, and a fast server saw the worker's RSS grow past 64 MB
 * before it ran (docs/storage-benchmarks.md). A multipart upload that fails or is stopped is
 * aborted: its parts are not left billed, and nothing appears at the key.
 */
import { open, type FileHandle } from 'node:fs/promises';
import type { ObjectStore } from '../protocol/index.js';
import { reachKillPoint } from './kill-point.js';

export interface UploadShape {
  /** Bytes per part, and the largest file sent in one PutObject (S3 takes parts of 5 MiB at least). */
  partSize?: number;
  /** Parts in flight. */
  queueSize?: number;
}

/** Parts of 8 MiB, three in flight: what an upload holds stays at 24 MiB whatever the file's size. */
export const PART_SIZE = 8 * 1024 * 1024;
export const PARTS_IN_FLIGHT = 3;

export interface UploadTarget {
  key: string;
  contentType: string;
  metadata: Record<string, string>;
  /** The file's size (its digest's): the parts are cut from it. */
  size: number;
}

/** Fills `buffer` from `position` of the file (a short read is read on). */
async function readFully(file: FileHandle, buffer: Buffer, position: number): Promise<void> {
  for (let filled = 0; filled < buffer.length;) {
    const { bytesRead } = await file.read(buffer, filled, buffer.length - filled, position + filled);
    if (bytesRead === 0) throw new Error(`Expected ${buffer.length} bytes at ${position} but the file ended`);
    filled += bytesRead;
  }
}

export async function uploadFile(
  store: ObjectStore,
  localPath: string,
  target: UploadTarget,
  shape: UploadShape,
  signal: AbortSignal | undefined,
): Promise<void> {
  const s3 = await import('@aws-sdk/client-s3');
  const partSize = shape.partSize ?? PART_SIZE;
  const object = {
    Bucket: store.bucket,
    Key: target.key,
    ContentType: target.contentType,
    Metadata: target.metadata,
  };
  const file = await open(localPath, 'r');
  try {
    if (target.size <= partSize) {
      const body = Buffer.allocUnsafe(target.size);
      await readFully(file, body, 0);
      await store.client.send(
        new s3.PutObjectCommand({ ...object, Body: body }),
        signal === undefined ? {} : { abortSignal: signal },
      );
      return;
    }
    // One part failing stops the others at once (and the job's stop stops them all).
    const stop = new AbortController();
    const onAbort = (): void => stop.abort(signal?.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    const { UploadId } = await store.client.send(new s3.CreateMultipartUploadCommand(object), {
      abortSignal: stop.signal,
    });
    try {
      const parts = Math.ceil(target.size / partSize);
      const etags: string[] = [];
      let next = 0;
      const sender = async (): Promise<void> => {
        const buffer = Buffer.allocUnsafeSlow(partSize);
        for (let part = next++; part < parts && !stop.signal.aborted; part = next++) {
          const body = buffer.subarray(0, Math.min(partSize, target.size - part * partSize));
          await readFully(file, body, part * partSize);
          const { ETag } = await store.client.send(
            new s3.UploadPartCommand({
              Bucket: store.bucket,
              Key: target.key,
              UploadId,
              PartNumber: part + 1,
              Body: body,
            }),
            { abortSignal: stop.signal },
          );
          if (ETag === undefined) throw new Error(`Expected an ETag for part ${part + 1} of ${target.key}`);
          etags[part] = ETag;
          // A part is stored and the upload is open: the test-only point of a host lost mid-upload.
          reachKillPoint('multipart');
        }
      };
      // Every sender has ended (the others stopped by the first failure) before the upload is aborted.
      const ended = await Promise.allSettled(
        Array.from({ length: Math.min(shape.queueSize ?? PARTS_IN_FLIGHT, parts) }, () =>
          sender().catch((err: unknown) => {
            stop.abort(err);
            throw err;
          }),
        ),
      );
      const failed = ended.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failed !== undefined) throw failed.reason;
      stop.signal.throwIfAborted();
      await store.client.send(
        new s3.CompleteMultipartUploadCommand({
          Bucket: store.bucket,
          Key: target.key,
          UploadId,
          MultipartUpload: { Parts: etags.map((ETag, i) => ({ ETag, PartNumber: i + 1 })) },
        }),
        { abortSignal: stop.signal },
      );
    } catch (err) {
      await store.client
        .send(new s3.AbortMultipartUploadCommand({ Bucket: store.bucket, Key: target.key, UploadId }))
        .catch(() => undefined);
      throw err;
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
  } finally {
    await file.close();
  }
}
