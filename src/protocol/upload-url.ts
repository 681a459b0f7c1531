/**
 * Upload URLs (RESULTS_STORE=upload-url; docs/results-storage.md): a worker host holds no storage
 * credentials. For each result file it asks the control plane on `media.uploads.<host>` (a subject
 * only that host's NATS user may publish, so the server vouches for who asks) for a URL to PUT the
 * file to, naming the file, its type, size and sha256. The control plane answers only for a task
 * whose claim that host holds (its lease, docs/claims-leases.md) and that is still pending, with a presigned PUT of the task's own key:
 * a host cannot get a URL for another task's key. Versioned by the Media-Protocol-Version header
 * like every message; JSON Schemas `upload-url-request` and `upload-url-reply` in docs/schemas/.
 */
import { z } from 'zod';
import { JOB_KINDS } from '../jobs/index.js';
import { TASK_ID_PATTERN } from './subjects.js';

export const UPLOADS_SUBJECT_PREFIX = 'media.uploads';

/**
 * The Content-Type of each result file extension. A control plane presigns only these: a type a
 * worker chose (text/html) would be served from the bucket's domain as the worker wished.
 */
export const RESULT_CONTENT_TYPES: Readonly<Record<string, string>> = {
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  webp: 'image/webp',
  mp4: 'video/mp4',
  mov: 'video/quicktime',
  mkv: 'video/x-matroska',
  mp3: 'audio/mpeg',
};

/** Where host `host` asks for upload URLs. */
export function uploadUrlSubject(host: string): string {
  return `${UPLOADS_SUBJECT_PREFIX}.${host}`;
}

export const uploadUrlRequestSchema = z
  .object({
    taskId: z.string().regex(TASK_ID_PATTERN),
    kind: z.enum(JOB_KINDS),
    /** File name without extension: `output`, `song-1`, `cover-1`. */
    name: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/),
    ext: z.string().regex(/^[a-z0-9]{1,8}$/),
    contentType: z.string().regex(/^[a-z]+\/[a-z0-9.+-]{1,100}$/),
    size: z.number().int().nonnegative(),
    sha256: z.string().regex(/^[0-9a-f]{64}$/),
  })
  .strict();

export type UploadUrlRequest = z.infer<typeof uploadUrlRequestSchema>;

export const uploadUrlGrantSchema = z.object({
  /** The URL to PUT the file's bytes to, exactly as given. */
  url: z.string(),
  method: z.literal('PUT'),
  /** Headers the PUT must carry (they are signed: Content-Type, the sha256 metadata). */
  headers: z.record(z.string(), z.string()),
  /** `<kind>/<task id>/<name>.<ext>`: the file's key under the results' root. */
  key: z.string(),
  /** The URL the result names the file by (under the control plane's RESULTS_BASE_URL). */
  resultUrl: z.string(),
  /** After this the URL is refused: ask again. */
  expiresAt: z.string(),
});

export type UploadUrlGrant = z.infer<typeof uploadUrlGrantSchema>;

/**
 * `UPLOAD_REFUSED`: not this host's task, not pending, or a bad request (asking again will not help);
 * `UPLOAD_UNAVAILABLE`: the control plane cannot presign now (try again).
 */
export const uploadUrlRefusalSchema = z.object({
  error: z.object({ code: z.enum(['UPLOAD_REFUSED', 'UPLOAD_UNAVAILABLE']), message: z.string() }),
});

export type UploadUrlRefusal = z.infer<typeof uploadUrlRefusalSchema>;

export const uploadUrlReplySchema = z.union([uploadUrlGrantSchema, uploadUrlRefusalSchema]);

export type UploadUrlReply = z.infer<typeof uploadUrlReplySchema>;
