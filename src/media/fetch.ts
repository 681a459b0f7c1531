/**
 * Safe input fetching: a job's media URL becomes a file in the job's directory, or is refused.
 *
 * - Only https (http too when `allowHttp`), at most `maxRedirects` redirects, each one checked again
 *   from scratch (scheme, address, size).
 * - The destination is judged on the address actually connected to: a custom `lookup` resolves the
 *   name, refuses it when ANY answer is inside a forbidden range (address-policy.ts), and hands only
 *   checked addresses to the socket; literal IPs in URLs (which skip `lookup`) are checked before
 *   connecting; and `socket.remoteAddress` is checked again on connect, before the request is
 *   written, so no path reaches an internal service with a request.
 * - A size cap per kind, enforced from Content-Length and again while streaming (the download is cut
 *   as soon as the cap is crossed); a connect timeout, an idle (read) timeout and an overall deadline.
 * - A partial file is removed on any failure. Cancellation through the AbortSignal rejects with the
 *   signal's reason.
 *
 * Errors: a bad URL or scheme is INVALID_URL (400); a refused destination, an unreachable host or an
 * HTTP error is FETCH_FAILED (422, retryable for timeouts, 5xx, 408 and 429); too many bytes is
 * INPUT_TOO_LARGE (422). Whatever went wrong on the network (a refused address, a name that does not
 * resolve, a refused or reset connection, a timeout, TLS), the message is the same "Could not
 * fetch ..." and the detail is the error's `cause` (for the log): otherwise the message would tell
 * an open port from a closed one, or a private address from a dead one.
 *
 * `privateUrlPrefixes` (MEDIA_WORKER_PRIVATE_ORIGINS) names the only private places an input may come
 * from, over http too (the one-host gateway's own /results/); a redirect out of them is judged anew.
 */
import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { rm, stat } from 'node:fs/promises';
import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction, type Socket } from 'node:net';
import { join, resolve as resolvePath } from 'node:path';
import { Transform } from 'node:stream';
import { rootCertificates } from 'node:tls';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import { JobError, abortReason, errorMessage } from '../errors.js';
import { checkAddress, underPrivatePrefix, type AddressPolicy } from './address-policy.js';
import {
  DEFAULT_CONNECT_TIMEOUT_MS,
  DEFAULT_DEADLINE_MS,
  DEFAULT_IDLE_TIMEOUT_MS,
  DEFAULT_MAX_BYTES,
  DEFAULT_MAX_REDIRECTS,
  DEFAULT_MIN_BYTES_PER_SECOND,
  DEFAULT_RATE_WINDOW_MS,
  type InputKind,
} from './settings.js';
import { publicResolver, systemResolver, type Resolver } from './resolvers.js';
import type { LocalInput } from './types.js';
import { definedFields } from '../defined-fields.js';

export type { ResolvedAddress, Resolver } from './resolvers.js';

export interface FetchOptions extends AddressPolicy {
  /** Accept plain http URLs (local development and tests). */
  allowHttp?: boolean;
  /** URL prefixes (parsePrivateOrigins) fetched whatever their address, over http too; nothing else private. */
  privateUrlPrefixes?: readonly string[];
  /** Accept local paths and file:// URLs, used in place without copying (the CLI only; never for network jobs). */
  allowLocalPaths?: boolean;
  maxBytes?: Partial<Record<InputKind, number>>;
  /** From the start of a request until its TCP connection is up (name resolution included). */
  connectTimeoutMs?: number;
  /** Longest silence once connected: TLS handshake, waiting for headers, gaps in the body. */
  idleTimeoutMs?: number;
  /** The whole download, redirects included. */
  deadlineMs?: number;
  /**
   * The least a body must bring per rate window (bytes per second, averaged over `rateWindowMs`);
   * slower is cut: one byte every few seconds never trips the idle timeout but holds a quote slot
   * until the deadline. 0: no minimum.
   */
  minBytesPerSecond?: number;
  /** The window the rate is judged over (default 5 s). */
  rateWindowMs?: number;
  /**
   * An operator's own download (model weights): network failures say what happened instead of the
   * one "Could not fetch" message customers get.
   */
  detailedNetworkErrors?: boolean;
  maxRedirects?: number;
  /** Name resolution; default: DNS queries for customers' hosts, the system's resolver where private URLs are allowed (resolvers.ts). */
  resolve?: Resolver;
  userAgent?: string;
  /** Extra trusted CA certificates (PEM) for https, added to Node's bundled roots (an internal store; tests). */
  extraCaCerts?: readonly string[];
}

export interface LocalizeOptions extends FetchOptions {
  /** The job's directory; downloads are written here. */
  dir: string;
  signal?: AbortSignal;
}

/** The URL without credentials and query string: signed URLs carry secrets there, errors go to logs. */
function displayUrl(url: URL): string {
  const text = `${url.protocol}//${url.host}${url.pathname}`;
  return text.length > 200 ? `${text.slice(0, 197)}...` : text;
}

function displaySource(source: string): string {
  try {
    return displayUrl(new URL(source));
  } catch {
    return source.length > 200 ? `${source.slice(0, 197)}...` : source;
  }
}

function bareHost(url: URL): string {
  return url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
}

// ---------------------------------------------------------------- local paths (CLI)

async function localFile(source: string, path: string, kind: InputKind): Promise<LocalInput> {
  const absolute = resolvePath(path);
  let info;
  try {
    info = await stat(absolute);
  } catch {
    throw new JobError(
      'FETCH_FAILED',
      `Expected a readable file for the ${kind} input but received "${source}" (not found)`,
    );
  }
  if (!info.isFile()) {
    throw new JobError('FETCH_FAILED', `Expected a regular file for the ${kind} input but received "${source}"`);
  }
  return { path: absolute, bytes: info.size, source };
}

// ---------------------------------------------------------------- one HTTP exchange

interface Exchange {
  response: IncomingMessage;
  /** The first failure recorded by a timer or a check; preferred over the socket error it causes. */
  failure: () => unknown;
  /** Stops the timers that cover connecting; the idle timer stays on the socket for the body. */
  close: () => void;
}

interface ExchangeContext {
  kind: InputKind;
  policy: AddressPolicy;
  resolve: Resolver;
  connectTimeoutMs: number;
  idleTimeoutMs: number;
  userAgent: string;
  signal: AbortSignal;
  ca: string[] | undefined;
}

function refused(kind: InputKind, host: string, address: string, range: string): JobError {
  const where = host === address ? `${address} (${range})` : `${host}, which resolves to ${address} (${range})`;
  return new JobError('FETCH_FAILED', `Expected a public address for the ${kind} input but received ${where}`);
}

function timeoutError(kind: InputKind, url: URL, detail: string): JobError {
  return new JobError('FETCH_FAILED', `Fetching the ${kind} input from ${displayUrl(url)} timed out: ${detail}`, {
    retryable: true,
  });
}

/** A `lookup` for http.request that resolves with `resolve` and refuses the host if any answer is forbidden. */
function guardedLookup(ctx: ExchangeContext, record: (err: unknown) => void): LookupFunction {
  // Node's LookupFunction callback is overloaded (single address or list); the implementation below
  // calls it in the shape `options.all` asks for.
  return ((
    hostname: string,
    options: { all?: boolean; family?: number | string },
    callback: (...args: unknown[]) => void,
  ) => {
    ctx
      .resolve(hostname)
      .then((answers) => {
        if (answers.length === 0)
          throw new JobError('FETCH_FAILED', `The host ${hostname} of the ${ctx.kind} input has no address`);
        for (const answer of answers) {
          const verdict = checkAddress(answer.address, ctx.policy);
          if (!verdict.allowed) throw refused(ctx.kind, hostname, answer.address, verdict.range);
        }
        const family =
          options.family === 4 || options.family === 'IPv4'
            ? 4
            : options.family === 6 || options.family === 'IPv6'
              ? 6
              : 0;
        const usable = family === 0 ? answers : answers.filter((a) => a.family === family);
        const first = usable[0];
        if (first === undefined)
          throw new JobError(
            'FETCH_FAILED',
            `The host ${hostname} of the ${ctx.kind} input has no IPv${family} address`,
          );
        if (options.all === true)
          callback(
            null,
            usable.map((a) => ({ address: a.address, family: a.family })),
          );
        else callback(null, first.address, first.family);
      })
      .catch((err: unknown) => {
        const failure =
          err instanceof JobError
            ? err
            : new JobError('FETCH_FAILED', `The host ${hostname} of the ${ctx.kind} input could not be resolved`, {
                retryable: true,
                cause: err,
              });
        record(failure);
        callback(failure);
      });
  }) as LookupFunction;
}

function exchange(url: URL, ctx: ExchangeContext): Promise<Exchange> {
  return new Promise<Exchange>((resolvePromise, reject) => {
    let failure: unknown;
    const record = (err: unknown): void => {
      failure ??= err;
    };

    const literal = bareHost(url);
    if (isIP(literal) !== 0) {
      // Node connects to literal addresses without calling `lookup`.
      const verdict = checkAddress(literal, ctx.policy);
      if (!verdict.allowed) {
        reject(refused(ctx.kind, literal, literal, verdict.range));
        return;
      }
    }

    const client = url.protocol === 'https:' ? https : http;
    const req = client.request({
      protocol: url.protocol,
      hostname: literal,
      port: url.port === '' ? undefined : Number(url.port),
      path: `${url.pathname}${url.search}`,
      method: 'GET',
      headers: { 'user-agent': ctx.userAgent, accept: '*/*', 'accept-encoding': 'identity' },
      // A fresh connection per request: a pooled socket would skip the connect-time address check.
      agent: false,
      lookup: guardedLookup(ctx, record),
      signal: ctx.signal,
      ...definedFields({ ca: ctx.ca }),
    });

    const connectTimer = setTimeout(() => {
      record(timeoutError(ctx.kind, url, `no connection within ${ctx.connectTimeoutMs} ms`));
      req.destroy();
    }, ctx.connectTimeoutMs);

    req.on('socket', (socket: Socket) => {
      // Registered before http writes the request, so a refused socket is destroyed before any byte is sent.
      socket.once('connect', () => {
        clearTimeout(connectTimer);
        const remote = socket.remoteAddress ?? '';
        const verdict = checkAddress(remote, ctx.policy);
        if (!verdict.allowed) {
          const failure = refused(ctx.kind, literal, remote, verdict.range);
          record(failure);
          socket.destroy(failure);
        }
      });
    });
    req.setTimeout(ctx.idleTimeoutMs, () => {
      record(timeoutError(ctx.kind, url, `no data for ${ctx.idleTimeoutMs} ms`));
      req.destroy();
    });

    req.once('response', (response) => {
      clearTimeout(connectTimer);
      resolvePromise({ response, failure: () => failure, close: () => clearTimeout(connectTimer) });
    });
    // `on`, not `once`: a late second error must not become an uncaught exception.
    req.on('error', (err) => {
      clearTimeout(connectTimer);
      reject(failure ?? err);
    });
    req.end();
  });
}

// ---------------------------------------------------------------- errors

const RETRYABLE_NETWORK_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ETIMEDOUT',
  'EPIPE',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);

function networkError(kind: InputKind, url: URL, err: unknown): JobError {
  if (err instanceof JobError) return err;
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  const detail = code ?? errorMessage(err);
  return new JobError('FETCH_FAILED', `Fetching the ${kind} input from ${displayUrl(url)} failed: ${detail}`, {
    retryable: code !== undefined && RETRYABLE_NETWORK_CODES.has(code),
    cause: err,
  });
}

/** The one message of every network failure; `detail` (what really happened) goes to the log as its cause. */
function couldNotFetch(kind: InputKind, start: URL, detail: JobError): JobError {
  return new JobError('FETCH_FAILED', `Could not fetch the ${kind} input from ${displayUrl(start)}`, {
    retryable: detail.retryable,
    cause: detail,
  });
}

function tooLarge(kind: InputKind, cap: number, url: URL, declared?: number): JobError {
  const received = declared === undefined ? 'more' : `${declared} bytes`;
  return new JobError(
    'INPUT_TOO_LARGE',
    `Expected at most ${cap} bytes for the ${kind} input but received ${received} from ${displayUrl(url)}`,
  );
}

// ---------------------------------------------------------------- the download

function checkScheme(
  url: URL,
  kind: InputKind,
  allowHttp: boolean,
  redirected: boolean,
  prefixes: readonly string[] = [],
): void {
  if (url.protocol === 'https:' || (url.protocol === 'http:' && (allowHttp || underPrivatePrefix(url, prefixes))))
    return;
  const what = url.protocol === 'http:' ? 'a plain http URL' : `a ${url.protocol} URL`;
  if (redirected) {
    throw new JobError(
      'FETCH_FAILED',
      `Expected the ${kind} input to redirect to an https URL but it redirected to ${what}`,
    );
  }
  throw new JobError('INVALID_URL', `Expected an https URL for the ${kind} input but received ${what}`);
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

async function download(start: URL, kind: InputKind, opts: LocalizeOptions): Promise<LocalInput> {
  const cap = opts.maxBytes?.[kind] ?? DEFAULT_MAX_BYTES[kind];
  const maxRedirects = opts.maxRedirects ?? DEFAULT_MAX_REDIRECTS;
  const prefixes = opts.privateUrlPrefixes ?? [];
  const deadlineMs = opts.deadlineMs ?? DEFAULT_DEADLINE_MS;
  const allowHttp = opts.allowHttp ?? false;

  const deadline = new AbortController();
  let deadlineHit = false;
  const deadlineTimer = setTimeout(() => {
    deadlineHit = true;
    deadline.abort();
  }, deadlineMs);
  const signal = opts.signal === undefined ? deadline.signal : AbortSignal.any([deadline.signal, opts.signal]);

  const ctx: ExchangeContext = {
    kind,
    policy: { allowPrivate: opts.allowPrivate ?? false, allowedCidrs: opts.allowedCidrs ?? [] },
    // Customers' hosts by DNS queries with a deadline (resolvers.ts); what the operator allowed
    // (private URLs in development, private origins) by the system's resolver.
    resolve: opts.resolve ?? (opts.allowPrivate === true ? systemResolver : publicResolver()),
    connectTimeoutMs: opts.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
    idleTimeoutMs: opts.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS,
    userAgent: opts.userAgent ?? 'media-worker',
    signal,
    // Node's `ca` replaces its bundled roots, so the extra certificates are appended to them.
    ca:
      opts.extraCaCerts === undefined || opts.extraCaCerts.length === 0
        ? undefined
        : [...rootCertificates, ...opts.extraCaCerts],
  };

  const path = join(opts.dir, `${kind}-${randomBytes(6).toString('hex')}`);
  let url = start;
  let current: Exchange | undefined;
  let fileCreated = false;
  let slowFailure: JobError | undefined;

  // Maps whatever ended the download to the error the job reports: one message for every network
  // failure, the detail as its cause.
  const explain = (err: unknown): unknown => {
    if (opts.signal?.aborted === true) return abortReason(opts.signal);
    const detail = deadlineHit
      ? timeoutError(kind, url, `not finished within ${deadlineMs} ms`)
      : networkError(kind, url, current?.failure() ?? err);
    return detail.code === 'FETCH_FAILED' && opts.detailedNetworkErrors !== true
      ? couldNotFetch(kind, start, detail)
      : detail;
  };

  try {
    for (let redirects = 0; ; redirects++) {
      checkScheme(url, kind, allowHttp, redirects > 0, prefixes);
      try {
        // A named private prefix is fetched wherever it resolves; anything else by the address policy.
        current = await exchange(
          url,
          underPrivatePrefix(url, prefixes)
            ? { ...ctx, policy: { allowPrivate: true }, resolve: opts.resolve ?? systemResolver }
            : ctx,
        );
      } catch (err) {
        throw explain(err);
      }
      const { response } = current;
      const status = response.statusCode ?? 0;

      if (REDIRECTS.has(status)) {
        response.destroy();
        const location = response.headers.location;
        if (location === undefined) {
          throw new JobError(
            'FETCH_FAILED',
            `The ${kind} input at ${displayUrl(url)} answered ${status} without a Location header`,
          );
        }
        if (redirects + 1 > maxRedirects) {
          throw new JobError(
            'FETCH_FAILED',
            `Expected at most ${maxRedirects} redirects for the ${kind} input but ${displaySource(start.href)} redirected more often`,
          );
        }
        try {
          url = new URL(location, url);
        } catch {
          throw new JobError('FETCH_FAILED', `The ${kind} input at ${displayUrl(url)} redirected to an invalid URL`);
        }
        continue;
      }

      if (status < 200 || status > 299) {
        response.destroy();
        throw new JobError(
          'FETCH_FAILED',
          `Fetching the ${kind} input from ${displayUrl(url)} failed: HTTP ${status}`,
          {
            retryable: status >= 500 || status === 408 || status === 429,
          },
        );
      }

      const declared = Number.parseInt(response.headers['content-length'] ?? '', 10);
      if (Number.isFinite(declared) && declared > cap) {
        response.destroy();
        throw tooLarge(kind, cap, url, declared);
      }

      let bytes = 0;
      const slow = rateGuard(
        opts,
        () => bytes,
        (rate, windowMs) => {
          const failure = new JobError(
            'FETCH_FAILED',
            `Fetching the ${kind} input from ${displayUrl(url)} was too slow: ${rate} bytes in ${windowMs} ms`,
          );
          slowFailure = failure;
          response.destroy(failure);
        },
      );
      const counter = new Transform({
        transform(chunk: Buffer, _encoding, done) {
          bytes += chunk.length;
          if (bytes > cap) done(tooLarge(kind, cap, url));
          else done(null, chunk);
        },
      });
      fileCreated = true;
      try {
        await pipeline(response, counter, createWriteStream(path, { flags: 'wx', mode: 0o600 }));
      } catch (err) {
        throw err instanceof JobError && err.code === 'INPUT_TOO_LARGE' ? err : explain(slowFailure ?? err);
      } finally {
        slow.stop();
      }
      return { path, bytes, source: start.href };
    }
  } catch (err) {
    current?.response.destroy();
    if (fileCreated) await rm(path, { force: true });
    throw err;
  } finally {
    clearTimeout(deadlineTimer);
    current?.close();
  }
}

/**
 * Checks every `rateWindowMs` that the body brought at least the minimum rate's worth of bytes
 * since the last check; `tooSlow` is called once when it did not.
 */
function rateGuard(
  opts: FetchOptions,
  bytes: () => number,
  tooSlow: (got: number, windowMs: number) => void,
): { stop(): void } {
  const min = opts.minBytesPerSecond ?? DEFAULT_MIN_BYTES_PER_SECOND;
  const windowMs = opts.rateWindowMs ?? DEFAULT_RATE_WINDOW_MS;
  if (min <= 0) return { stop: () => undefined };
  let last = 0;
  const timer = setInterval(() => {
    const got = bytes() - last;
    last = bytes();
    if (got < (min * windowMs) / 1000) {
      clearInterval(timer);
      tooSlow(got, windowMs);
    }
  }, windowMs);
  return { stop: () => clearInterval(timer) };
}

// ---------------------------------------------------------------- entry point

/**
 * Makes a job input local: an https URL is downloaded into `opts.dir` (checked as described above);
 * with `allowLocalPaths`, a path or file:// URL is used where it is.
 */
export async function localize(source: string, kind: InputKind, opts: LocalizeOptions): Promise<LocalInput> {
  if (opts.signal?.aborted === true) throw abortReason(opts.signal);

  let url: URL | undefined;
  try {
    url = new URL(source);
  } catch {
    url = undefined;
  }

  if (url === undefined || url.protocol === 'file:') {
    if (opts.allowLocalPaths === true && source !== '') {
      return localFile(source, url === undefined ? source : fileURLToPath(url), kind);
    }
    const what = url === undefined ? `"${displaySource(source)}"` : 'a file: URL';
    throw new JobError('INVALID_URL', `Expected an https URL for the ${kind} input but received ${what}`);
  }
  checkScheme(url, kind, opts.allowHttp ?? false, false, opts.privateUrlPrefixes);
  if (url.hostname === '') {
    throw new JobError(
      'INVALID_URL',
      `Expected an https URL with a host for the ${kind} input but received "${displaySource(source)}"`,
    );
  }
  return download(url, kind, opts);
}
