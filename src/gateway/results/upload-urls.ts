/**
 * The control plane's half of upload URLs (RESULTS_STORE=upload-url; protocol/upload-url.ts): it
 * answers a worker host's request on `media.uploads.<host>` with a PUT presigned against its bucket
 * for the task's own key, `<RESULTS_S3_PREFIX>/<kind>/<task id>/<name>.<ext>`, the file's type,
 * size and sha256 signed in (the PUT must carry exactly those). The server vouches for `<host>`
 * (only that host's user may publish there); the answer is given only when that host claimed the
 * task first and the task is pending and of that kind here, so a taken-over host cannot get a URL
 * for another task's key. The upload is checked again when the event comes (stored-files.ts).
 */
import type { PutObjectCommandInput } from '@aws-sdk/client-s3';
import type { JetStreamManager } from '@nats-io/jetstream';
import type { Msg, NatsConnection, Subscription } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import {
  RESULT_CONTENT_TYPES,
  SHA256_METADATA,
  UPLOADS_SUBJECT_PREFIX,
  claimHolder,
  objectKey,
  openObjectStore,
  protocolHeaders,
  resultUrl,
  resultsBaseUrl,
  uploadUrlRequestSchema,
  type ObjectStore,
  type ProtocolSettings,
  type UploadUrlGrant,
  type UploadUrlReply,
  type UploadUrlRequest,
} from '../../protocol/index.js';
import type { Tasks } from '../store/tasks.js';

/** How long an upload URL works: long enough for a slow multi-gigabyte PUT, short enough to be worth little if it leaks. */
export const UPLOAD_URL_LIFETIME_S = 15 * 60;

export interface UploadUrlDeps {
  nc: NatsConnection;
  jsm: JetStreamManager;
  claimsStream: string;
  tasks: Pick<Tasks, 'owner' | 'get'>;
  protocol: ProtocolSettings;
  logger: Pick<Logger, 'warn' | 'info'>;
}

export interface Presigning {
  /** Seconds the URL works. */
  expiresIn: number;
  /** When it is signed (tests sign in the past to hand out an expired URL). */
  signingDate?: Date;
}

/** The grant for a request already judged to be the host's: the presigned PUT of its key. */
export async function presignUpload(
  store: ObjectStore,
  protocol: ProtocolSettings,
  request: UploadUrlRequest,
  how: Presigning,
): Promise<UploadUrlGrant> {
  const [{ PutObjectCommand }, { getSignedUrl }] = await Promise.all([
    import('@aws-sdk/client-s3'),
    import('@aws-sdk/s3-request-presigner'),
  ]);
  const file = `${request.name}.${request.ext}`;
  const relative = `${request.kind}/${request.taskId}/${file}`;
  const contentType = RESULT_CONTENT_TYPES[request.ext] ?? 'application/octet-stream';
  const input: PutObjectCommandInput = {
    Bucket: store.bucket,
    Key: objectKey(store.prefix, relative),
    ContentType: contentType,
    ContentLength: request.size,
    Metadata: { [SHA256_METADATA]: request.sha256 },
  };
  const metadataHeader = `x-amz-meta-${SHA256_METADATA}`;
  const url = await getSignedUrl(store.client, new PutObjectCommand(input), {
    expiresIn: how.expiresIn,
    ...(how.signingDate === undefined ? {} : { signingDate: how.signingDate }),
    // Sent as headers, and signed: a PUT of another type, length or sha256 is refused by the store.
    signableHeaders: new Set(['content-type', 'content-length', metadataHeader]),
    unhoistableHeaders: new Set([metadataHeader]),
  });
  const signedAt = how.signingDate?.getTime() ?? Date.now();
  return {
    url,
    method: 'PUT',
    headers: { 'content-type': contentType, [metadataHeader]: request.sha256 },
    key: relative,
    resultUrl: resultUrl(resultsBaseUrl(protocol), [request.kind, request.taskId, file]),
    expiresAt: new Date(signedAt + how.expiresIn * 1000).toISOString(),
  };
}

/** Why `host` may not have an upload URL for this request, or null when it may. */
export async function uploadRefusal(
  d: Pick<UploadUrlDeps, 'jsm' | 'claimsStream' | 'tasks'>,
  host: string,
  request: UploadUrlRequest,
): Promise<string | null> {
  if (RESULT_CONTENT_TYPES[request.ext] === undefined)
    return `Expected a result file extension (${Object.keys(RESULT_CONTENT_TYPES).join(', ')}) but received ${JSON.stringify(request.ext)}`;
  const holder = await claimHolder(d.jsm, d.claimsStream, request.taskId);
  if (holder !== host)
    return `Expected a task whose claim host ${host} holds but task ${request.taskId} is ${holder === null ? 'claimed by no host' : `held by ${holder}`}`;
  const owner = await d.tasks.owner(request.taskId);
  const task = owner === null ? null : await d.tasks.get(owner, request.taskId);
  if (task === null) return `Expected a task of this control plane but received ${JSON.stringify(request.taskId)}`;
  if (task.value.status !== 'pending')
    return `Expected a pending task but task ${request.taskId} is ${task.value.status}`;
  if (task.value.kind !== request.kind)
    return `Expected kind ${task.value.kind} for task ${request.taskId} but received ${request.kind}`;
  return null;
}

export interface UploadUrlService {
  stop(): Promise<void>;
}

/** Answers `media.uploads.*` (one queue group across the gateways). */
export function startUploadUrls(
  d: UploadUrlDeps,
  how: Presigning = { expiresIn: UPLOAD_URL_LIFETIME_S },
): UploadUrlService {
  let opened: Promise<ObjectStore> | undefined;
  const answer = async (msg: Msg): Promise<UploadUrlReply> => {
    const host = msg.subject.slice(UPLOADS_SUBJECT_PREFIX.length + 1);
    let body: unknown;
    try {
      body = msg.json();
    } catch {
      body = undefined;
    }
    const parsed = uploadUrlRequestSchema.safeParse(body);
    if (!parsed.success)
      return refused(
        `Expected an upload URL request (docs/schemas/upload-url-request.schema.json): ${parsed.error.issues[0]?.path.join('.') ?? ''} ${parsed.error.issues[0]?.message ?? ''}`,
      );
    try {
      const refusal = await uploadRefusal(d, host, parsed.data);
      if (refusal !== null) {
        d.logger.warn(
          { security: 'upload_url', host, taskId: parsed.data.taskId, reason: refusal },
          'Upload URL refused',
        );
        return refused(refusal);
      }
      opened ??= openObjectStore(d.protocol);
      return await presignUpload(await opened, d.protocol, parsed.data, how);
    } catch (err) {
      d.logger.warn({ err, host, taskId: parsed.data.taskId }, 'Could not answer an upload URL request');
      return {
        error: {
          code: 'UPLOAD_UNAVAILABLE',
          message: 'The control plane could not presign an upload URL now; ask again',
        },
      };
    }
  };
  const sub: Subscription = d.nc.subscribe(`${UPLOADS_SUBJECT_PREFIX}.*`, {
    queue: 'gateway-uploads',
    callback: (err, msg) => {
      if (err !== null) return;
      void answer(msg).then((reply) => msg.respond(JSON.stringify(reply), { headers: protocolHeaders() }));
    },
  });
  return {
    async stop() {
      await sub.drain().catch(() => undefined);
    },
  };
}

function refused(message: string): UploadUrlReply {
  return { error: { code: 'UPLOAD_REFUSED', message } };
}
