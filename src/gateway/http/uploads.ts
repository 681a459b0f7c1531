/**
 * `POST /api/v1/uploads` for one-host setups (spec 1.3: local files are uploaded first). The body
 * is the file's raw bytes, streamed to disk under a size cap, then judged by its content
 * (src/media/sniff.ts), never by its name or Content-Type: only the formats some job accepts are
 * kept. The file lands in `RESULTS_DIR/uploads/` and its URL is under RESULTS_BASE_URL, which this
 * gateway serves (GATEWAY_SERVE_RESULTS), so a worker fetches it like any input.
 */
import { createWriteStream } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { FastifyInstance } from 'fastify';
import { sniffFile } from '../../media/index.js';
import { resultUrl } from '../../worker/index.js';
import { ApiError, successEnvelope } from '../errors.js';
import { newTaskId } from '../ids.js';
import type { AppDeps, Links } from './app.js';

const UPLOAD_TYPES = ['application/octet-stream', 'image/*', 'video/*', 'audio/*'];

export function registerUploads(api: FastifyInstance, deps: AppDeps & { links: Links | undefined; schema: object }): void {
  const uploadsDir = path.join(deps.resultsDir, 'uploads');
  // The raw stream reaches the handler untouched; the handler enforces the cap while writing.
  api.addContentTypeParser(/^(application\/octet-stream|image\/.*|video\/.*|audio\/.*)$/, (_req, payload, done) => done(null, payload));

  api.post('/api/v1/uploads', { schema: deps.schema, bodyLimit: deps.settings.uploadMaxBytes }, async (req, reply) => {
    const body = req.body as NodeJS.ReadableStream | undefined;
    if (body === undefined || typeof (body as { pipe?: unknown }).pipe !== 'function') {
      throw ApiError.of('UNSUPPORTED_MEDIA_TYPE', `Expected Content-Type ${UPLOAD_TYPES.join(', ')} but received ${req.headers['content-type'] ?? 'nothing'}`);
    }
    await mkdir(uploadsDir, { recursive: true });
    const id = newTaskId().replace(/^t_/, 'u_');
    const partial = path.join(uploadsDir, `.${id}.part`);
    let size = 0;
    const cap = deps.settings.uploadMaxBytes;
    const counter = new Transform({
      transform(chunk: Buffer, _enc, callback) {
        size += chunk.length;
        if (size > cap) callback(ApiError.of('PAYLOAD_TOO_LARGE', `Expected an upload of at most ${cap} bytes but received more`));
        else callback(null, chunk);
      },
    });
    try {
      await pipeline(body, counter, createWriteStream(partial));
      const format = size === 0 ? null : await sniffFile(partial);
      if (format === null) {
        throw ApiError.of('UNSUPPORTED_MEDIA_TYPE', 'Expected JPEG, PNG, WebP, GIF, MP4, MOV, M4V, MKV, WebM, MP3, WAV, AAC, OGG or M4A content but received something else');
      }
      const name = `${id}.${format === 'jpeg' ? 'jpg' : format}`;
      await rename(partial, path.join(uploadsDir, name));
      const base = deps.resultsBaseUrl ?? `${deps.settings.publicBaseUrl ?? `${req.protocol}://${req.host}`}/results/`;
      req.log.info({ upload: name, size, format }, 'Upload stored');
      const url = resultUrl(base, ['uploads', name]);
      const expiresAt = Date.now() + deps.settings.uploadLifetimeHours * 3600_000;
      return reply.code(201).send(successEnvelope({ url: deps.links === undefined ? url : deps.links.signer.sign(url, expiresAt), format, size }));
    } finally {
      await rm(partial, { force: true });
    }
  });
}
