/**
 * The throughput floor of an S3 upload (scripts/storage-upload-bench.ts): a plain node:http server
 * that answers the calls of the bucket store (PutObject, the multipart calls, HeadObject,
 * HeadBucket, DeleteObject) and throws every byte away, writing nothing and hashing nothing. What an
 * upload costs against it is the client's own cost; against s3rver the server's is added. It keeps
 * only each object's size and the metadata sent with it, so that the store's HEAD confirms. No
 * signature is checked. Run as a child process (`startS3Sink`), like s3rver in object-store.ts.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';

interface Sunk {
  size: number;
  contentType: string;
  metadata: Record<string, string>;
}

function metadataOf(req: http.IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers))
    if (name.startsWith('x-amz-meta-') && typeof value === 'string') out[name] = value;
  return out;
}

/** The sink in this process, on a free port of 127.0.0.1. */
export async function serveS3Sink(): Promise<{ port: number; close(): void }> {
  const objects = new Map<string, Sunk>();
  const uploads = new Map<string, Sunk & { key: string }>();
  let next = 0;
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://sink');
    const key = url.pathname;
    const q = url.searchParams;
    let size = 0;
    req.on('data', (chunk: Buffer) => (size += chunk.length));
    req.on('end', () => {
      const xml = (body: string) => {
        res.writeHead(200, { 'content-type': 'application/xml' });
        res.end(`<?xml version="1.0" encoding="UTF-8"?>\n${body}`);
      };
      const uploadId = q.get('uploadId');
      if (req.method === 'POST' && q.has('uploads')) {
        const id = `u${(next += 1)}`;
        uploads.set(id, {
          key,
          size: 0,
          contentType: req.headers['content-type'] ?? '',
          metadata: metadataOf(req),
        });
        return xml(`<InitiateMultipartUploadResult><UploadId>${id}</UploadId></InitiateMultipartUploadResult>`);
      }
      const upload = uploadId === null ? undefined : uploads.get(uploadId);
      if (req.method === 'PUT' && upload !== undefined) {
        upload.size += size;
        res.writeHead(200, { etag: `"part-${q.get('partNumber') ?? ''}"` });
        return res.end();
      }
      if (req.method === 'POST' && upload !== undefined) {
        objects.set(upload.key, upload);
        uploads.delete(uploadId!);
        return xml('<CompleteMultipartUploadResult><ETag>"sunk"</ETag></CompleteMultipartUploadResult>');
      }
      if (req.method === 'DELETE') {
        if (uploadId !== null) uploads.delete(uploadId);
        else objects.delete(key);
        res.writeHead(204);
        return res.end();
      }
      if (req.method === 'PUT') {
        objects.set(key, { size, contentType: req.headers['content-type'] ?? '', metadata: metadataOf(req) });
        res.writeHead(200, { etag: '"sunk"' });
        return res.end();
      }
      if (req.method === 'HEAD') {
        const object = objects.get(key);
        // A bucket (one path segment) is always there.
        if (object === undefined) res.writeHead(key.split('/').length === 2 ? 200 : 404);
        else
          res.writeHead(200, { 'content-length': object.size, 'content-type': object.contentType, ...object.metadata });
        return res.end();
      }
      res.writeHead(501);
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as AddressInfo).port, close: () => server.close() };
}

/** The sink in a child process of its own (its buffers stay out of the measuring process). */
export async function startS3Sink(): Promise<{ endpoint: string; stop(): void }> {
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url)], { stdio: ['ignore', 'pipe', 'inherit'] });
  const [line] = (await once(child.stdout!, 'data')) as [Buffer];
  return { endpoint: `http://127.0.0.1:${Number(line.toString().trim())}`, stop: () => void child.kill() };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { port } = await serveS3Sink();
  process.stdout.write(`${port}\n`);
}
