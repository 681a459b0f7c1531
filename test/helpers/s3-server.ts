/**
 * An S3-compatible server for the tests, started in-process like nats-server is: s3rver (npm,
 * offline) on a free port over a throwaway directory, with the buckets asked for. It checks the
 * access key (S3RVER) but not a SigV4 signature. `faultProxy` stands in front of it, refuses a
 * presigned URL past its expiry as S3 does (403 "Request has expired"; s3rver checks none), and
 * breaks chosen requests the ways a real store or network does: 503s, a stalled answer, a
 * connection reset in the middle of a request body.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';

interface S3rverOptions {
  port: number;
  address: string;
  silent: boolean;
  directory: string;
  configureBuckets: { name: string }[];
}
interface S3rverInstance {
  run(): Promise<AddressInfo>;
  close(): Promise<void>;
}
const require = createRequire(import.meta.url);
const S3rver = require('s3rver') as new (options: S3rverOptions) => S3rverInstance;

/** The credentials s3rver knows. */
export const S3_TEST_CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };

export interface S3TestServer {
  endpoint: string;
  /** Environment for a process that stores into it (RESULTS_STORE=s3 and the SDK's credentials). */
  env(bucket: string, prefix?: string): NodeJS.ProcessEnv;
  close(): Promise<void>;
}

export async function startS3Server(buckets: string[]): Promise<S3TestServer> {
  const directory = await mkdtemp(path.join(tmpdir(), 's3rver-'));
  const server = new S3rver({
    port: 0,
    address: '127.0.0.1',
    silent: true,
    directory,
    configureBuckets: buckets.map((name) => ({ name })),
  });
  const { port } = await server.run();
  const endpoint = `http://127.0.0.1:${port}`;
  return {
    endpoint,
    env: (bucket, prefix = 'results') => s3Env(endpoint, bucket, prefix),
    async close() {
      await server.close();
      await rm(directory, { recursive: true, force: true });
    },
  };
}

export function s3Env(endpoint: string, bucket: string, prefix = 'results'): NodeJS.ProcessEnv {
  return {
    RESULTS_STORE: 's3',
    RESULTS_S3_BUCKET: bucket,
    RESULTS_S3_ENDPOINT: endpoint,
    RESULTS_S3_REGION: 'us-east-1',
    RESULTS_S3_PREFIX: prefix,
    RESULTS_S3_FORCE_PATH_STYLE: 'true',
    AWS_ACCESS_KEY_ID: S3_TEST_CREDENTIALS.accessKeyId,
    AWS_SECRET_ACCESS_KEY: S3_TEST_CREDENTIALS.secretAccessKey,
  };
}

/** What the proxy does to a request: pass it on, answer 503, never answer, or cut the connection mid-body. */
export type Fault = 'unavailable' | 'stall' | 'reset';

export interface SeenRequest {
  method: string;
  url: string;
  /** The fault it met, if any (`expired`: a presigned URL past its expiry, refused as S3 does). */
  fault?: Fault | 'expired';
}

export interface FaultProxy {
  url: string;
  seen: SeenRequest[];
  /** The next `times` requests that `match` meet `fault`. */
  inject(fault: Fault, times: number, match?: (req: IncomingMessage) => boolean): void;
  close(): Promise<void>;
}

/**
 * Whether a presigned request (SigV4 query: X-Amz-Date, X-Amz-Expires) is past its expiry, as S3
 * judges it; s3rver itself checks no expiry. Null for a request that is not presigned.
 */
export function presignedExpired(url: string, nowMs: number): boolean | null {
  const query = new URL(url, 'http://x').searchParams;
  const date = query.get('X-Amz-Date');
  const expires = query.get('X-Amz-Expires');
  if (date === null || expires === null) return null;
  const m = /^(\d{4})(\d\d)(\d\d)T(\d\d)(\d\d)(\d\d)Z$/.exec(date);
  if (m === null) return true;
  const signedAt = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6]));
  return nowMs > signedAt + Number(expires) * 1000;
}

export async function faultProxy(target: string): Promise<FaultProxy> {
  const plans: { fault: Fault; left: number; match: (req: IncomingMessage) => boolean }[] = [];
  const seen: SeenRequest[] = [];
  const stalled = new Set<ServerResponse>();
  const server = http.createServer((req, res) => {
    const plan = plans.find((p) => p.left > 0 && p.match(req));
    const record: SeenRequest = { method: req.method ?? '', url: req.url ?? '' };
    seen.push(record);
    if (presignedExpired(req.url ?? '', Date.now()) === true) {
      record.fault = 'expired';
      req.resume();
      req.on('end', () => {
        res.writeHead(403, { 'content-type': 'application/xml' });
        res.end(
          '<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>Request has expired</Message></Error>',
        );
      });
      return;
    }
    if (plan !== undefined) {
      plan.left -= 1;
      record.fault = plan.fault;
      if (plan.fault === 'stall') {
        stalled.add(res);
        req.resume();
        res.on('close', () => stalled.delete(res));
        return;
      }
      if (plan.fault === 'reset') {
        // Let some of the body arrive first: the upload is under way when the connection goes.
        req.once('data', () => req.socket.destroy());
        req.once('end', () => req.socket.destroy());
        return;
      }
      req.resume();
      req.on('end', () => {
        res.writeHead(503, { 'content-type': 'application/xml' });
        res.end(
          '<?xml version="1.0" encoding="UTF-8"?><Error><Code>ServiceUnavailable</Code><Message>injected</Message></Error>',
        );
      });
      return;
    }
    const upstream = http.request(
      `${target}${req.url ?? '/'}`,
      { method: req.method, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    inject(fault, times, match = () => true) {
      plans.push({ fault, left: times, match });
    },
    async close() {
      for (const res of stalled) res.destroy();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** A port nothing listens on: a store that is down. */
export async function closedPort(): Promise<number> {
  const probe = http.createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}
