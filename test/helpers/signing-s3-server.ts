/**
 * An S3-compatible server of our own, for the tests that need what s3rver does not check: every
 * request's AWS Signature V4 (header or presigned; test/helpers/sigv4.ts, computed independently of
 * the SDK), a presigned URL's expiry, clock skew, and a signed payload's sha256. Real HTTP
 * (node:http), path-style, objects in memory. Only what this project's stores use: PutObject,
 * multipart create / upload part / complete / abort, HeadObject, GetObject (with Range),
 * DeleteObject, ListObjectsV2, HeadBucket. Anything else answers 501, so a new call the server does
 * not know fails loudly instead of passing unchecked.
 */
import { createHash, randomUUID } from 'node:crypto';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { UNSIGNED_PAYLOAD, sha256Hex, verifySigV4, type Credentials, type Refusal } from './sigv4.js';

/** The one key this server knows (the secret is what a wrong-secret test gets wrong). */
export const SIGNING_TEST_CREDENTIALS: Credentials = {
  accessKeyId: 'AKIAMEDIAWORKERTEST',
  secretAccessKey: 'm3dia/W0rker+Secret/Key/For/Tests/Only00',
};
export const SIGNING_TEST_REGION = 'eu-test-1';

export interface StoredObject {
  body: Buffer;
  contentType: string;
  metadata: Record<string, string>;
}

interface OpenUpload {
  key: string;
  contentType: string;
  metadata: Record<string, string>;
  parts: Map<number, Buffer>;
}

/** A request as the server judged it: refused with its code, or done. */
export interface Judged {
  method: string;
  target: string;
  /** `ok`, or S3's error code it was answered with. */
  outcome: string;
  presigned: boolean;
}

export interface SigningS3Server {
  endpoint: string;
  region: string;
  /** bucket -> key -> object. */
  objects: Map<string, Map<string, StoredObject>>;
  /** Multipart uploads begun and neither completed nor aborted. */
  openUploads(): number;
  judged: Judged[];
  /** The keys it accepts (a test rotates a secret by changing one: a host that still holds the old one then signs wrong). */
  keys: Credentials[];
  /** Environment for a process that stores into it (RESULTS_STORE=s3), with `credentials` (default: the right ones). */
  env(bucket: string, prefix?: string, credentials?: Credentials): NodeJS.ProcessEnv;
  close(): Promise<void>;
}

export interface SigningS3Options {
  buckets: string[];
  region?: string;
  /** This server's clock (tests move it to judge expiry and skew). */
  now?: () => number;
}

const xml = (body: string): string => `<?xml version="1.0" encoding="UTF-8"?>\n${body}`;
const escapeXml = (s: string): string =>
  s.replace(/[<>&'"]/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', "'": '&apos;', '"': '&quot;' })[c]!);

class S3Error extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

function metadataOf(req: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers))
    if (name.startsWith('x-amz-meta-') && typeof value === 'string') out[name.slice('x-amz-meta-'.length)] = value;
  return out;
}

const etagOf = (body: Buffer): string => `"${createHash('md5').update(body).digest('hex')}"`;

/** `bytes=a-b`, `bytes=a-`, `bytes=-n` of a body of `size`, or undefined for a header S3 would ignore. */
function rangeOf(header: string | undefined, size: number): [number, number] | undefined {
  const m = /^bytes=(\d*)-(\d*)$/.exec(header ?? '');
  if (m === null || (m[1] === '' && m[2] === '')) return undefined;
  if (m[1] === '') return [Math.max(0, size - Number(m[2])), size - 1];
  const start = Number(m[1]);
  const end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (start >= size || end < start) throw new S3Error(416, 'InvalidRange', 'The requested range is not satisfiable');
  return [start, end];
}

export async function startSigningS3Server(options: SigningS3Options): Promise<SigningS3Server> {
  const region = options.region ?? SIGNING_TEST_REGION;
  const now = options.now ?? Date.now;
  const objects = new Map(options.buckets.map((b) => [b, new Map<string, StoredObject>()]));
  const uploads = new Map<string, OpenUpload>();
  const judged: Judged[] = [];
  const keys = [{ ...SIGNING_TEST_CREDENTIALS }];

  const handle = (req: IncomingMessage, body: Buffer, res: ServerResponse): void => {
    const target = req.url ?? '/';
    const url = new URL(target, 'http://s3.test');
    const [, bucketName = '', ...keyParts] = url.pathname.split('/');
    const bucket = objects.get(decodeURIComponent(bucketName));
    const key = keyParts.map(decodeURIComponent).join('/');
    const q = url.searchParams;
    const method = req.method ?? '';
    if (bucket === undefined) throw new S3Error(404, 'NoSuchBucket', 'The specified bucket does not exist');
    const send = (status: number, headers: Record<string, string | number>, payload?: Buffer | string): void => {
      res.writeHead(status, headers);
      res.end(method === 'HEAD' ? undefined : payload);
    };
    if (key === '') {
      if (method === 'HEAD') return send(200, {});
      if (method === 'GET' && q.get('list-type') === '2') {
        const prefix = q.get('prefix') ?? '';
        const keys = [...bucket.keys()].filter((k) => k.startsWith(prefix)).sort();
        const contents = keys
          .map((k) => `<Contents><Key>${escapeXml(k)}</Key><Size>${bucket.get(k)!.body.length}</Size></Contents>`)
          .join('');
        return send(
          200,
          { 'content-type': 'application/xml' },
          xml(
            `<ListBucketResult><Name>${escapeXml(bucketName)}</Name><Prefix>${escapeXml(prefix)}</Prefix><KeyCount>${keys.length}</KeyCount><IsTruncated>false</IsTruncated>${contents}</ListBucketResult>`,
          ),
        );
      }
      throw new S3Error(501, 'NotImplemented', `${method} on a bucket is not implemented here`);
    }
    const uploadId = q.get('uploadId');
    if (method === 'POST' && q.has('uploads')) {
      const id = randomUUID();
      uploads.set(id, {
        key,
        contentType: req.headers['content-type'] ?? 'binary/octet-stream',
        metadata: metadataOf(req),
        parts: new Map(),
      });
      return send(
        200,
        { 'content-type': 'application/xml' },
        xml(
          `<InitiateMultipartUploadResult><Bucket>${escapeXml(bucketName)}</Bucket><Key>${escapeXml(key)}</Key><UploadId>${id}</UploadId></InitiateMultipartUploadResult>`,
        ),
      );
    }
    if (uploadId !== null) {
      const upload = uploads.get(uploadId);
      if (upload === undefined || upload.key !== key)
        throw new S3Error(404, 'NoSuchUpload', 'The specified multipart upload does not exist');
      if (method === 'PUT') {
        const part = Number(q.get('partNumber'));
        if (!Number.isInteger(part) || part < 1 || part > 10_000)
          throw new S3Error(400, 'InvalidArgument', 'Part number must be an integer between 1 and 10000');
        upload.parts.set(part, body);
        return send(200, { etag: etagOf(body) });
      }
      if (method === 'DELETE') {
        uploads.delete(uploadId);
        return send(204, {});
      }
      if (method === 'POST') {
        // Each <Part> names its number and ETag, in either order.
        const listed = [...body.toString('utf8').matchAll(/<Part>([\s\S]*?)<\/Part>/g)].map(([, part]) => [
          /<PartNumber>(\d+)<\/PartNumber>/.exec(part!)?.[1],
          /<ETag>([^<]+)<\/ETag>/.exec(part!)?.[1] ?? '',
        ]);
        const chunks = listed.map(([n, etag]) => {
          const part = upload.parts.get(Number(n));
          if (part === undefined || etagOf(part) !== etag!.replace(/&quot;/g, '"'))
            throw new S3Error(400, 'InvalidPart', `Part ${n} was not uploaded or its ETag does not match`);
          return part;
        });
        if (chunks.length === 0) throw new S3Error(400, 'MalformedXML', 'No parts listed');
        bucket.set(key, {
          body: Buffer.concat(chunks),
          contentType: upload.contentType,
          metadata: upload.metadata,
        });
        uploads.delete(uploadId);
        return send(
          200,
          { 'content-type': 'application/xml' },
          xml(
            `<CompleteMultipartUploadResult><Bucket>${escapeXml(bucketName)}</Bucket><Key>${escapeXml(key)}</Key><ETag>&quot;multipart&quot;</ETag></CompleteMultipartUploadResult>`,
          ),
        );
      }
    }
    if (method === 'PUT' && [...q.keys()].every((k) => k.startsWith('X-Amz-') || k === 'x-id')) {
      bucket.set(key, {
        body,
        contentType: req.headers['content-type'] ?? 'binary/octet-stream',
        metadata: metadataOf(req),
      });
      return send(200, { etag: etagOf(body) });
    }
    if (method === 'DELETE') {
      bucket.delete(key);
      return send(204, {});
    }
    if (method === 'GET' || method === 'HEAD') {
      const object = bucket.get(key);
      if (object === undefined) throw new S3Error(404, 'NoSuchKey', 'The specified key does not exist.');
      const headers: Record<string, string | number> = {
        'content-type': object.contentType,
        etag: etagOf(object.body),
        'last-modified': new Date().toUTCString(),
        'accept-ranges': 'bytes',
      };
      for (const [name, value] of Object.entries(object.metadata)) headers[`x-amz-meta-${name}`] = value;
      const range = rangeOf(req.headers.range, object.body.length);
      if (range === undefined) return send(200, { ...headers, 'content-length': object.body.length }, object.body);
      const [start, end] = range;
      return send(
        206,
        {
          ...headers,
          'content-length': end - start + 1,
          'content-range': `bytes ${start}-${end}/${object.body.length}`,
        },
        object.body.subarray(start, end + 1),
      );
    }
    throw new S3Error(501, 'NotImplemented', `${method} ${url.pathname}${url.search} is not implemented here`);
  };

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const target = req.url ?? '/';
      const record: Judged = {
        method: req.method ?? '',
        target,
        outcome: 'ok',
        presigned: target.includes('X-Amz-Signature='),
      };
      judged.push(record);
      try {
        const verified = verifySigV4({ method: req.method ?? '', target, headers: req.headers }, keys, region, now());
        if ('code' in verified) throw refusal(verified);
        if (verified.payloadHash.startsWith('STREAMING-'))
          throw new S3Error(501, 'NotImplemented', `${verified.payloadHash} payloads are not implemented here`);
        if (verified.payloadHash !== UNSIGNED_PAYLOAD && verified.payloadHash !== sha256Hex(body))
          throw new S3Error(
            400,
            'XAmzContentSHA256Mismatch',
            "The provided 'x-amz-content-sha256' header does not match what was computed.",
          );
        handle(req, body, res);
      } catch (err) {
        if (!(err instanceof S3Error)) throw err;
        record.outcome = err.code;
        res.writeHead(err.status, { 'content-type': 'application/xml' });
        res.end(
          req.method === 'HEAD'
            ? undefined
            : xml(`<Error><Code>${err.code}</Code><Message>${escapeXml(err.message)}</Message></Error>`),
        );
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    endpoint,
    region,
    objects,
    openUploads: () => uploads.size,
    judged,
    keys,
    env: (bucket, prefix = 'results', credentials = SIGNING_TEST_CREDENTIALS) => ({
      RESULTS_STORE: 's3',
      RESULTS_S3_BUCKET: bucket,
      RESULTS_S3_ENDPOINT: endpoint,
      RESULTS_S3_REGION: region,
      RESULTS_S3_PREFIX: prefix,
      RESULTS_S3_FORCE_PATH_STYLE: 'true',
      AWS_ACCESS_KEY_ID: credentials.accessKeyId,
      AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
    }),
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

function refusal(r: Refusal): S3Error {
  return new S3Error(r.status, r.code, r.message);
}
