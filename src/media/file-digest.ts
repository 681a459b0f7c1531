/**
 * A file's size and sha256, read once as a stream (a 1 GB result never sits in memory): what a
 * result's completion event carries and what the gateway checks a stored copy against.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { pipeline } from 'node:stream/promises';

export interface FileDigest {
  size: number;
  /** Lower-case hex. */
  sha256: string;
}

export async function fileDigest(filePath: string, signal?: AbortSignal): Promise<FileDigest> {
  const hash = createHash('sha256');
  let size = 0;
  await pipeline(
    createReadStream(filePath),
    async (source: AsyncIterable<Buffer>) => {
      for await (const chunk of source) {
        size += chunk.length;
        hash.update(chunk);
      }
    },
    signal === undefined ? {} : { signal },
  );
  return { size, sha256: hash.digest('hex') };
}

/** 64 lower-case hex digits. */
export const SHA256_HEX = /^[0-9a-f]{64}$/;
