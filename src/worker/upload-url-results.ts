/**
 * Results through upload URLs (RESULTS_STORE=upload-url; docs/results-storage.md): this host holds
 * no storage credentials. For each file it asks the control plane over NATS for a URL
 * (protocol/upload-url.ts: name, type, size, sha256), then PUTs the file there, streamed. 408, 429,
 * 5xx, a reset or a stall are tried again with backoff, an expired URL is asked for again, all
 * within RESULTS_STORE_DEADLINE_MS; a refusal ends it at once. The control plane checks the stored
 * object against the event's size and sha256 before it settles the task (gateway/results/stored-files.ts):
 * a PUT that "succeeded" into the wrong place cannot complete a task. Nothing to discard or sweep
 * here: this host may not delete, and the bucket's lifecycle rule expires what a failed task left.
 */
import { createReadStream } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import { fileDigest, type FileDigest } from '../media/index.js';
import {
  protocolHeaders,
  uploadUrlReplySchema,
  uploadUrlSubject,
  type UploadUrlGrant,
  type UploadUrlRequest,
} from '../protocol/index.js';
import {
  resultExpiresAt,
  DEFAULT_STORE_DEADLINE_MS,
  contentTypeOf,
  resultRelativePath,
  type ResultStore,
  type StoredResult,
  type StoreOptions,
} from './result-store.js';
import { withStoreRetries } from './store-retries.js';
import { reachKillPoint } from './kill-point.js';

export interface UploadUrlStoreSettings {
  upscaleResultLifetimeDays: number;
  /** RESULTS_STORE_DEADLINE_MS (default 2 minutes). */
  storeDeadlineMs?: number;
  /** One PUT's longest silence before it is given up and tried again (default 60 s). */
  stallMs?: number;
  /** How long the control plane may take to answer (default 10 s). */
  requestTimeoutMs?: number;
}

/** A refusal or an answer that trying again will not change (a 4xx other than 408, 429 or an expired URL). */
export class UploadRefused extends Error {
  override name = 'UploadRefused';
}

/** The URL expired before (or while) it was used: ask for a new one. */
class UploadUrlExpired extends Error {
  override name = 'UploadUrlExpired';
}

export class UploadUrlResultStore implements ResultStore {
  private nc: NatsConnection | undefined;
  private host: string | undefined;

  constructor(
    private readonly settings: UploadUrlStoreSettings,
    private readonly logger?: Logger,
  ) {}

  connect(nc: NatsConnection, hostId: string): void {
    this.nc = nc;
    this.host = hostId;
  }

  async storeResult(localPath: string, options: StoreOptions, signal?: AbortSignal): Promise<StoredResult> {
    const segments = resultRelativePath(options);
    const relative = segments.join('/');
    const digest = await fileDigest(localPath, signal);
    const request: UploadUrlRequest = {
      taskId: options.taskId,
      kind: options.kind,
      name: options.name ?? 'output',
      ext: options.ext,
      contentType: contentTypeOf(options.ext),
      ...digest,
    };
    let grant: UploadUrlGrant | undefined;
    const stored = await withStoreRetries(
      `the result ${relative}`,
      {
        deadlineMs: this.settings.storeDeadlineMs ?? DEFAULT_STORE_DEADLINE_MS,
        permanent: (err) => err instanceof UploadRefused,
        onRetry: (err, attempt, waitMs) =>
          this.logger?.warn({ err, key: relative, attempt, waitMs }, 'Uploading a result failed; retrying'),
        ...(signal === undefined ? {} : { signal }),
      },
      async () => {
        if (grant === undefined || Date.parse(grant.expiresAt) <= Date.now()) grant = await this.ask(request);
        try {
          await put(grant, localPath, digest, this.settings.stallMs ?? 60_000, signal);
        } catch (err) {
          if (err instanceof UploadUrlExpired) grant = undefined;
          throw err;
        }
        return grant;
      },
    );
    reachKillPoint('stored');
    if (stored.key !== relative)
      throw new UploadRefused(
        `Expected an upload URL for ${relative} but the control plane gave one for ${stored.key}`,
      );
    const expiresAt = resultExpiresAt(options.kind, this.settings.upscaleResultLifetimeDays);
    return { key: relative, url: stored.resultUrl, ...digest, expiresAt };
  }

  private async ask(request: UploadUrlRequest): Promise<UploadUrlGrant> {
    if (this.nc === undefined || this.host === undefined)
      throw new Error('Expected the upload-url store to be connected to NATS before a result is stored');
    const reply = await this.nc.request(uploadUrlSubject(this.host), JSON.stringify(request), {
      timeout: this.settings.requestTimeoutMs ?? 10_000,
      headers: protocolHeaders(),
    });
    const parsed = uploadUrlReplySchema.safeParse(reply.json());
    if (!parsed.success)
      throw new Error(
        `The control plane's upload URL reply is not one: ${parsed.error.issues[0]?.message ?? 'invalid'}`,
      );
    if ('error' in parsed.data) {
      const { code, message } = parsed.data.error;
      if (code === 'UPLOAD_REFUSED') throw new UploadRefused(`The control plane refused an upload URL: ${message}`);
      throw new Error(`The control plane could not give an upload URL now: ${message}`);
    }
    return parsed.data;
  }

  /** This host may not delete from the bucket; what a failed task left is never linked and expires by the lifecycle rule. */
  discard(): Promise<void> {
    return Promise.resolve();
  }

  startSweeper(): () => void {
    return () => undefined;
  }
}

/** Statuses worth another try (S3's and the HTTP spec's transient ones). */
function transientStatus(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}

/** One PUT of the whole file, streamed; resolves on 2xx. */
function put(
  grant: UploadUrlGrant,
  localPath: string,
  digest: FileDigest,
  stallMs: number,
  signal: AbortSignal | undefined,
): Promise<void> {
  return new Promise((resolve, reject) => {
    const url = new URL(grant.url);
    const client = url.protocol === 'https:' ? https : http;
    const request = client.request(url, {
      method: 'PUT',
      headers: { ...grant.headers, 'content-length': String(digest.size) },
      timeout: stallMs,
      ...(signal === undefined ? {} : { signal }),
    });
    const body = createReadStream(localPath);
    const fail = (err: Error): void => {
      body.destroy();
      reject(err);
    };
    request.on('timeout', () => request.destroy(new Error(`The upload stalled: nothing for ${stallMs} ms`)));
    request.on('error', fail);
    body.on('error', (err) => request.destroy(err));
    request.on('response', (response) => {
      const chunks: Buffer[] = [];
      let length = 0;
      response.on('data', (chunk: Buffer) => {
        if (length < 16_384) chunks.push(chunk);
        length += chunk.length;
      });
      response.on('error', fail);
      response.on('end', () => {
        const status = response.statusCode ?? 0;
        const text = Buffer.concat(chunks).toString('utf8').slice(0, 500);
        if (status >= 200 && status < 300) return resolve();
        if (status === 403 && /expired/i.test(text))
          return fail(new UploadUrlExpired(`The upload URL expired (403): ${text}`));
        const message = `The upload URL answered ${status}: ${text}`;
        fail(transientStatus(status) ? new Error(message) : new UploadRefused(message));
      });
    });
    body.pipe(request);
  });
}
