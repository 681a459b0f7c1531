/**
 * One webhook request: a POST to the endpoint, judged on the address actually connected to.
 *
 * - The name is resolved at delivery (not trusted from the submission); a lookup refuses it when
 *   any answer is not allowed (target.ts), literal addresses are checked before connecting, and the
 *   socket's remote address again on connect, before a byte of the request is written.
 * - A fresh connection each time (no pool: a pooled socket would skip the connect-time check).
 * - Redirects are not followed: a 3xx is an answer like any other that is not 2xx.
 * - One deadline (15 s) for the whole exchange, and at most `maxResponseBytes` of the answer read
 *   (kept for the task's webhook state); the rest is never read.
 * Never rejects: every failure is an AttemptResult without a status, with what happened.
 */
import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction, type Socket } from 'node:net';
import { errorMessage } from '../../errors.js';
import type { Resolver } from '../../media/index.js';
import { addressProblem, bareHost, resolverFor, type TargetPolicy } from './target.js';

export interface DeliveryOptions {
  policy: TargetPolicy;
  timeoutMs: number;
  maxResponseBytes: number;
  userAgent: string;
  resolve?: Resolver;
}

export interface DeliveryResult {
  status?: number;
  retryAfter?: string;
  /** The start of the answer's body (at most maxResponseBytes), as text. */
  body?: string;
  /** Why no answer came (refused address, timeout, connection error). */
  error?: string;
}

class Refused extends Error {}

function guardedLookup(url: URL, opts: DeliveryOptions): LookupFunction {
  const resolve = opts.resolve ?? resolverFor(opts.policy);
  // Node's LookupFunction callback is overloaded; it is called in the shape `options.all` asks for.
  return ((hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    resolve(hostname)
      .then((answers) => {
        if (answers.length === 0) throw new Refused(`the host ${hostname} has no address`);
        for (const answer of answers) {
          const problem = addressProblem(url, answer.address, opts.policy);
          if (problem !== null) throw new Refused(`${hostname} resolves to ${problem}`);
        }
        if (options.all === true) callback(null, answers);
        else callback(null, answers[0]!.address, answers[0]!.family);
      })
      .catch((err: unknown) =>
        callback(err instanceof Refused ? err : new Error(`the host ${hostname} does not resolve`)),
      );
  }) as LookupFunction;
}

async function readSome(response: IncomingMessage, max: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of response) {
    const buf = chunk as Buffer;
    chunks.push(buf.subarray(0, max - size));
    size += buf.length;
    if (size >= max) break;
  }
  response.destroy();
  return Buffer.concat(chunks).toString('utf8');
}

export function postWebhook(
  url: URL,
  headers: Record<string, string>,
  body: string,
  opts: DeliveryOptions,
): Promise<DeliveryResult> {
  return new Promise<DeliveryResult>((resolve) => {
    let settled = false;
    const finish = (result: DeliveryResult): void => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      resolve(result);
    };
    const host = bareHost(url);
    if (isIP(host) !== 0) {
      const problem = addressProblem(url, host, opts.policy);
      if (problem !== null) {
        resolve({ error: `refused: ${problem}` });
        return;
      }
    }
    const client = url.protocol === 'https:' ? https : http;
    const req = client.request({
      protocol: url.protocol,
      hostname: host,
      port: url.port === '' ? undefined : Number(url.port),
      path: `${url.pathname}${url.search}`,
      method: 'POST',
      headers: {
        ...headers,
        'content-type': 'application/json',
        'content-length': String(Buffer.byteLength(body)),
        'user-agent': opts.userAgent,
      },
      agent: false,
      lookup: guardedLookup(url, opts),
    });
    const deadline = setTimeout(() => {
      finish({ error: `no answer within ${opts.timeoutMs} ms` });
      req.destroy();
    }, opts.timeoutMs);
    req.on('socket', (socket: Socket) => {
      // Registered before the request is written, so a refused socket is closed before any byte is sent.
      socket.once('connect', () => {
        const remote = socket.remoteAddress ?? '';
        const problem = addressProblem(url, remote, opts.policy);
        if (problem !== null) {
          finish({ error: `refused: ${problem}` });
          socket.destroy();
        }
      });
    });
    req.once('response', (response) => {
      const retryAfter = response.headers['retry-after'];
      const status = response.statusCode ?? 0;
      readSome(response, opts.maxResponseBytes)
        .catch(() => '')
        .then(
          (text) => finish({ status, ...(retryAfter === undefined ? {} : { retryAfter }), body: text }),
          () => undefined,
        );
    });
    req.on('error', (err) => finish({ error: err instanceof Refused ? `refused: ${err.message}` : errorMessage(err) }));
    req.end(body);
  });
}
