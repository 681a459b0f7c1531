/**
 * A completed event's files checked against the store they were put in (docs/results-storage.md):
 * the object (RESULTS_STORE=s3) or the file under RESULTS_DIR must hold the size and sha256 the
 * event says, else the result is refused and refunded rather than shown as a link that 404s. The
 * bucket is asked with HEAD (its size, and the sha256 its uploader put in the metadata); a local
 * file is read and hashed, and only where this gateway sees RESULTS_DIR (it serves the results):
 * a gateway that does not checks the event's list alone. A store that cannot be reached throws:
 * the event is settled later, not refused.
 */
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { fileDigest } from '../../media/index.js';
import {
  bucketStatus,
  headStoredCopy,
  objectKey,
  openObjectStore,
  type ObjectStore,
  type ProtocolSettings,
  type ResultFile,
} from '../../protocol/index.js';

/** Null when the stored copy is what the event says; else why not. */
export type StoredFileCheck = (file: ResultFile) => Promise<string | null>;

export function storedFileCheck(protocol: ProtocolSettings, seesResultsDir: boolean): StoredFileCheck | undefined {
  if (protocol.resultsStore !== 'local') return bucketCheck(protocol);
  return seesResultsDir ? localCheck(protocol.resultsDir) : undefined;
}

function localCheck(resultsDir: string): StoredFileCheck {
  return async (file) => {
    const filePath = path.join(resultsDir, ...file.key.split('/'));
    const found = await stat(filePath).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return null;
      throw err;
    });
    if (found === null || !found.isFile()) return `${file.key} is not in the results`;
    if (found.size !== file.size) return `${file.key} holds ${found.size} bytes, not the ${file.size} the event says`;
    const digest = await fileDigest(filePath);
    return digest.sha256 === file.sha256
      ? null
      : `${file.key} has sha256 ${digest.sha256}, not the ${file.sha256} the event says`;
  };
}

function bucketCheck(protocol: ProtocolSettings): StoredFileCheck {
  let opened: Promise<ObjectStore> | undefined;
  return async (file) => {
    opened ??= openObjectStore(protocol);
    const store = await opened;
    const key = objectKey(store.prefix, file.key);
    let held;
    try {
      held = await headStoredCopy(store, key);
    } catch (err) {
      if ((err as { name?: unknown }).name === 'NotFound' || bucketStatus(err) === 404)
        return `${key} is not in the bucket`;
      throw err;
    }
    if (held.size !== file.size) return `${key} holds ${String(held.size)} bytes, not the ${file.size} the event says`;
    return held.sha256 === file.sha256
      ? null
      : `${key} has sha256 ${String(held.sha256)} in its metadata, not the ${file.sha256} the event says`;
  };
}
