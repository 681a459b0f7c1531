/**
 * `POST /api/v1/uploads` for one-host setups (spec 1.3: local files are uploaded first). The body
 * is the file's raw bytes. Before a byte is read: the declared Content-Length against the size cap
 * and the account's quota (bytes and files). While reading: the same caps on the bytes that really
 * come. After: the content is judged by decoding it (src/media/decode-check.ts), never by its name,
 * Content-Type or first bytes alone: only formats some job accepts are kept. The file lands in
 * `RESULTS_DIR/uploads/<account>/` (../upload-store.ts), or, when this gateway's results are in a
 * bucket (RESULTS_STORE=s3 or upload-url), is put at `<prefix>/uploads/<account>/` there and its
 * local copy removed (../bucket-upload-store.ts): several gateways need no shared volume. Its link,
 * signed and expiring after GATEWAY_UPLOAD_LIFETIME_MS, is under RESULTS_BASE_URL, which this
 * gateway serves (from the bucket: ../bucket-files.ts), so a worker fetches it like any input.
 * Expired uploads are swept.
 */
import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, rename, rm, rmdir } from 'node:fs/promises';
import path from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { checkDecodes, partialPathFor, sniffFile } from '../../../media/index.js';
import { resultUrl, type ObjectStore } from '../../../protocol/index.js';
import { ApiError, successEnvelope } from '../../errors.js';
import { newTaskId } from '../../ids.js';
import { KeyedQueue } from '../../store/keyed-queue.js';
import {
  UPLOAD_CONTENT_TYPES,
  bucketAccountUsage,
  putUpload,
  sweepBucketUploads,
  uploadKey,
} from '../bucket-upload-store.js';
import { accountUsage, sweepUploads, type UploadUsage } from '../upload-store.js';
import type { AppDeps, Links } from '../app-deps.js';

const UPLOAD_TYPES = ['application/octet-stream', 'image/*', 'video/*', 'audio/*'];
const ACCEPTED = 'JPEG, PNG, WebP, GIF, MP4, MOV, M4V, MKV, WebM, MP3, WAV, AAC, OGG or M4A content';

export function registerUploads(
  api: FastifyInstance,
  deps: AppDeps & { links: Links | undefined; schema: object },
): void {
  const { settings, links } = deps;
  // Uploads need served, signed files (GATEWAY_SERVE_RESULTS, GATEWAY_LINK_SECRET: servedFilesProblem).
  if (links === undefined)
    throw new Error('Uploads need GATEWAY_SERVE_RESULTS with GATEWAY_LINK_SECRET and a public base URL');
  const uploadsDir = path.join(deps.resultsDir, 'uploads');
  // One upload at a time per account, so a quota check and its write are not raced by the same account.
  const serial = new KeyedQueue();
  // The raw stream reaches the handler untouched; the handler enforces the caps while writing.
  api.addContentTypeParser(/^(application\/octet-stream|image\/.*|video\/.*|audio\/.*)$/, (_req, payload, done) =>
    done(null, payload),
  );

  // Results in a bucket: uploads go there too, and only their partial files touch this disk.
  const bucket = deps.resultsBucket;
  const usageOf = (req: FastifyRequest): Promise<UploadUsage> =>
    bucket === undefined
      ? accountUsage(path.join(uploadsDir, req.accountId))
      : bucket()
          .then((store) => bucketAccountUsage(store, req.accountId, settings.uploadLifetimeMs, Date.now()))
          .catch(bucketUnavailable(req.log));

  const timer = setInterval(() => {
    // The local sweep also removes what a crash left of partial files in the bucket mode.
    const sweeps = [
      sweepUploads(uploadsDir, settings.uploadLifetimeMs, Date.now()),
      ...(bucket === undefined
        ? []
        : [bucket().then((store) => sweepBucketUploads(store, settings.uploadLifetimeMs, Date.now()))]),
    ];
    for (const sweep of sweeps)
      sweep.then(
        (removed) => removed > 0 && deps.logger.info({ removed }, 'Expired uploads deleted'),
        (err: unknown) => deps.logger.warn({ err }, 'Sweeping uploads failed'),
      );
  }, settings.uploadSweepIntervalMs);
  timer.unref();
  api.addHook('onClose', async () => clearInterval(timer));

  api.post('/api/v1/uploads', { schema: deps.schema }, async (req, reply) => {
    const body = req.body as NodeJS.ReadableStream | undefined;
    if (body === undefined || typeof (body as { pipe?: unknown }).pipe !== 'function') {
      throw ApiError.of(
        'UNSUPPORTED_MEDIA_TYPE',
        `Expected Content-Type ${UPLOAD_TYPES.join(', ')} but received ${req.headers['content-type'] ?? 'nothing'}`,
      );
    }
    const accountDir = path.join(uploadsDir, req.accountId);
    return serial.run(req.accountId, async () => {
      const usage = await usageOf(req).catch((err: unknown) => {
        // Refused before the body is read: the connection is closed rather than read to its end.
        void reply.header('connection', 'close');
        throw err;
      });
      const room = Math.min(settings.uploadMaxBytes, settings.uploadQuotaBytes - usage.bytes);
      refuseBeforeReading(req, reply, usage.files, room, settings);
      await mkdir(accountDir, { recursive: true });
      const id = newTaskId().replace(/^t_/, 'u_');
      // Its name (and so the rename's target) waits for the sniffed format; written as every partial file is.
      const partial = partialPathFor(path.join(accountDir, id));
      try {
        const { size, sha256, md5 } = await receive(body, partial, room, settings.uploadMaxBytes);
        const format = size === 0 ? null : await sniffFile(partial);
        if (format === null)
          throw ApiError.of('UNSUPPORTED_MEDIA_TYPE', `Expected ${ACCEPTED} but received something else`);
        await checkDecodes(partial, format).catch(() => {
          throw ApiError.of(
            'UNSUPPORTED_MEDIA_TYPE',
            `Expected ${ACCEPTED} that decodes but received a file that starts like ${format} and does not decode as it`,
          );
        });
        const name = `${id}.${format === 'jpeg' ? 'jpg' : format}`;
        if (bucket === undefined) await rename(partial, path.join(accountDir, name));
        else {
          const store: ObjectStore = await bucket();
          const contentType = UPLOAD_CONTENT_TYPES[format];
          await putUpload(store, partial, uploadKey(store, req.accountId, name), {
            size,
            sha256,
            md5,
            contentType,
          }).catch(bucketUnavailable(req.log));
        }
        // Under the configured public address, never the request's Host header (the client writes it).
        const url = resultUrl(links.base, ['uploads', req.accountId, name]);
        const expiresAt = Date.now() + settings.uploadLifetimeMs;
        req.log.info({ upload: name, size, format }, 'Upload stored');
        return reply.code(201).send(successEnvelope({ url: links.signer.sign(url, expiresAt), format, size }));
      } finally {
        await rm(partial, { force: true });
        // The bucket mode leaves no folder behind (another upload of the account waits in `serial`).
        if (bucket !== undefined) await rmdir(accountDir).catch(() => undefined);
      }
    });
  });
}

/** The bucket did not answer or refused (the SDK tried 3 times): the client may try again, nothing was kept. */
function bucketUnavailable(log: FastifyRequest['log']): (err: unknown) => never {
  return (err) => {
    log.warn({ err }, 'The upload bucket failed');
    throw ApiError.of('SERVICE_UNAVAILABLE', "The service's upload store is not answering; try again later");
  };
}

/**
 * Refusals decided from the headers alone. The connection is closed after them, so the body the
 * client may still be sending is never read.
 */
function refuseBeforeReading(
  req: FastifyRequest,
  reply: FastifyReply,
  files: number,
  room: number,
  settings: AppDeps['settings'],
): void {
  const declared = Number(req.headers['content-length'] ?? Number.NaN);
  let refusal: ApiError | null = null;
  if (declared > settings.uploadMaxBytes) {
    refusal = ApiError.of(
      'PAYLOAD_TOO_LARGE',
      `Expected an upload of at most ${settings.uploadMaxBytes} bytes but received a Content-Length of ${declared}`,
    );
  } else if (files >= settings.uploadQuotaFiles) {
    refusal = ApiError.of(
      'UPLOAD_QUOTA_EXCEEDED',
      `Expected fewer than ${settings.uploadQuotaFiles} unexpired uploads on this account but received one more`,
    );
  } else if (room <= 0 || declared > room) {
    refusal = ApiError.of(
      'UPLOAD_QUOTA_EXCEEDED',
      `Expected an upload that fits the account's remaining ${Math.max(0, room)} of ${settings.uploadQuotaBytes} upload bytes but received ${Number.isNaN(declared) ? 'more' : declared}`,
    );
  }
  if (refusal === null) return;
  void reply.header('connection', 'close');
  throw refusal;
}

interface Received {
  size: number;
  /** Hex. */
  sha256: string;
  /** Base64 (Content-MD5's form). */
  md5: string;
}

/** Streams the body into `file`, stopping at `room` bytes; returns its size and digests (hashed on the way). */
async function receive(body: NodeJS.ReadableStream, file: string, room: number, maxBytes: number): Promise<Received> {
  let size = 0;
  const sha256 = createHash('sha256');
  const md5 = createHash('md5');
  const counter = new Transform({
    transform(chunk: Buffer, _enc, callback) {
      size += chunk.length;
      sha256.update(chunk);
      md5.update(chunk);
      if (size <= room) callback(null, chunk);
      else if (size > maxBytes)
        callback(ApiError.of('PAYLOAD_TOO_LARGE', `Expected an upload of at most ${maxBytes} bytes but received more`));
      else
        callback(
          ApiError.of(
            'UPLOAD_QUOTA_EXCEEDED',
            `Expected an upload that fits the account's remaining ${room} upload bytes but received more`,
          ),
        );
    },
  });
  await pipeline(body, counter, createWriteStream(file));
  return { size, sha256: sha256.digest('hex'), md5: md5.digest('base64') };
}
