import { randomBytes } from 'node:crypto';
import { readFile, readdir } from 'node:fs/promises';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { localize, type LocalizeOptions, type Resolver } from '../../src/media/fetch.js';
import { failure, makeTempDir } from './helpers.js';
import type { JobError } from '../../src/errors.js';
import { parsePrivateOrigins } from '../../src/media/settings.js';

/** What really happened, kept for the log: the customer's message is one for every network failure. */
const detailOf = (err: JobError): string => (err.cause as Error).message;
/** A URL as messages show it: without query. */
const displayed = (url: string): string => {
  const u = new URL(url);
  return `${u.protocol}//${u.host}${u.pathname}`;
};

const BODY = randomBytes(20_000);

interface TestServer {
  port: number;
  hits: string[];
  close: () => Promise<void>;
}

async function serve(host: string, handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<TestServer> {
  const hits: string[] = [];
  const server = http.createServer((req, res) => {
    hits.push(req.url ?? '');
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return {
    port: (server.address() as AddressInfo).port,
    hits,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

let main: TestServer;
let inside: TestServer; // a second "internal" service on 127.0.0.2 that must never be reached
const timers = new Set<NodeJS.Timeout>();

beforeAll(async () => {
  inside = await serve('127.0.0.2', (_req, res) => res.end('internal secret'));
  main = await serve('127.0.0.1', (req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const hop = Number(url.searchParams.get('hop') ?? '0');
    // /results/<route> is <route>: a gateway's served folder, for the named private prefixes.
    switch (url.pathname.replace(/^\/results\//, '/')) {
      case '/ok':
        res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(BODY.length) });
        res.end(BODY);
        return;
      case '/chain': {
        const total = Number(url.searchParams.get('n'));
        res.writeHead(302, { location: hop + 1 >= total ? '/ok' : `/chain?n=${total}&hop=${hop + 1}` });
        res.end();
        return;
      }
      case '/to':
        res.writeHead(307, { location: url.searchParams.get('target') ?? '/' });
        res.end();
        return;
      case '/endless': {
        res.writeHead(200, { 'content-type': 'application/octet-stream' });
        const chunk = Buffer.alloc(16 * 1024, 7);
        const pump = (): void => {
          while (!res.destroyed && res.write(chunk));
          if (!res.destroyed) res.once('drain', pump);
        };
        pump();
        return;
      }
      case '/stall-body':
        res.writeHead(200, { 'content-length': '100000' });
        res.write(Buffer.alloc(1000));
        return; // then silence
      case '/stall-headers':
        return; // never answers
      case '/trickle': {
        res.writeHead(200);
        const timer = setInterval(() => res.write('x'), 50);
        timers.add(timer);
        res.on('close', () => clearInterval(timer));
        return;
      }
      case '/declared-huge':
        res.writeHead(200, { 'content-length': String(10 * 1024 * 1024 * 1024) });
        res.write(Buffer.alloc(1000));
        return;
      case '/missing':
        res.writeHead(404);
        res.end('nope');
        return;
      case '/busy':
        res.writeHead(503);
        res.end();
        return;
      default:
        res.writeHead(400);
        res.end();
    }
  });
});

afterAll(async () => {
  for (const timer of timers) clearInterval(timer);
  await Promise.all([main.close(), inside.close()]);
});

let dir: string;
let cleanup: () => Promise<void>;
beforeEach(async () => {
  ({ dir, cleanup } = await makeTempDir('fetch'));
});
afterEach(async () => {
  await cleanup();
});

const local = (path: string): string => `http://127.0.0.1:${main.port}${path}`;
/** Development settings: http and private addresses allowed. */
const dev = (extra: Partial<LocalizeOptions> = {}): LocalizeOptions => ({
  dir,
  allowHttp: true,
  allowPrivate: true,
  ...extra,
});
/** Production policy, http allowed so the test servers can be plain http. */
const strict = (extra: Partial<LocalizeOptions> = {}): LocalizeOptions => ({ dir, allowHttp: true, ...extra });
/** A resolver standing in for DNS: fixed answers, no network. */
const fakeDns =
  (table: Record<string, string[]>): Resolver =>
  async (hostname) => {
    const answers = table[hostname];
    if (answers === undefined)
      throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return answers.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };

async function dirIsEmpty(): Promise<void> {
  expect(await readdir(dir)).toEqual([]);
}

describe('downloads', () => {
  it('downloads into the job directory', async () => {
    const input = await localize(local('/ok'), 'image', dev());
    expect(input.bytes).toBe(BODY.length);
    expect(input.source).toBe(local('/ok'));
    expect(input.path.startsWith(dir)).toBe(true);
    expect((await readFile(input.path)).equals(BODY)).toBe(true);
  });

  it('follows exactly 5 redirects', async () => {
    const input = await localize(local('/chain?n=5'), 'video', dev());
    expect(input.bytes).toBe(BODY.length);
  });

  it('refuses a 6th redirect', async () => {
    const err = await failure(localize(local('/chain?n=6'), 'video', dev()));
    expect(err.code).toBe('FETCH_FAILED');
    expect(err.message).toMatch(/^Expected at most 5 redirects for the video input/);
    await dirIsEmpty();
  });

  it('reaches a public-looking host through the resolver (the real lookup path)', async () => {
    const input = await localize(
      `http://media.example:${main.port}/ok`,
      'audio',
      strict({
        resolve: fakeDns({ 'media.example': ['127.0.0.1'] }),
        allowedCidrs: ['127.0.0.1/32'],
      }),
    );
    expect(input.bytes).toBe(BODY.length);
  });
});

describe('refused destinations', () => {
  it.each([
    ['http://127.0.0.1:PORT/ok', '127.0.0.1 (loopback)'],
    ['http://169.254.169.254/latest/meta-data/', '169.254.169.254 (link-local)'],
    ['http://[::ffff:10.0.0.1]/x', '::ffff:a00:1 (IPv4-mapped private)'],
    ['http://[::ffff:127.0.0.1]:PORT/ok', '::ffff:7f00:1 (IPv4-mapped loopback)'],
    ['http://[::1]:PORT/ok', '::1 (loopback)'],
    ['http://2130706433:PORT/ok', '127.0.0.1 (loopback)'],
    ['http://0x7f.1:PORT/ok', '127.0.0.1 (loopback)'],
  ])('refuses %s', async (template, where) => {
    const before = main.hits.length;
    const err = await failure(localize(template.replace('PORT', String(main.port)), 'image', strict()));
    expect(err.code).toBe('FETCH_FAILED');
    expect(err.status).toBe(422);
    expect(err.message).toBe(
      `Could not fetch the image input from ${displayed(template.replace('PORT', String(main.port)))}`,
    );
    expect(detailOf(err)).toBe(`Expected a public address for the image input but received ${where}`);
    expect(main.hits.length).toBe(before);
    await dirIsEmpty();
  });

  it('refuses a hostname whose DNS answer points inside, without sending a request', async () => {
    const before = main.hits.length;
    const err = await failure(
      localize(
        `http://innocent.example:${main.port}/ok`,
        'image',
        strict({
          resolve: fakeDns({ 'innocent.example': ['127.0.0.1'] }),
        }),
      ),
    );
    expect(err.code).toBe('FETCH_FAILED');
    expect(detailOf(err)).toBe(
      'Expected a public address for the image input but received innocent.example, which resolves to 127.0.0.1 (loopback)',
    );
    expect(main.hits.length).toBe(before);
  });

  it('refuses a host when any one of its addresses is inside', async () => {
    const err = await failure(
      localize(
        `http://mixed.example:${main.port}/ok`,
        'image',
        strict({
          resolve: fakeDns({ 'mixed.example': ['127.0.0.1', '10.1.2.3'] }),
          allowedCidrs: ['127.0.0.1/32'],
        }),
      ),
    );
    expect(detailOf(err)).toMatch(/mixed\.example, which resolves to 10\.1\.2\.3 \(private\)$/);
  });

  it('refuses a redirect from an allowed server to a private address, which is never contacted', async () => {
    const target = `http://127.0.0.2:${inside.port}/secret`;
    const err = await failure(
      localize(local(`/to?target=${encodeURIComponent(target)}`), 'video', strict({ allowedCidrs: ['127.0.0.1/32'] })),
    );
    expect(err.code).toBe('FETCH_FAILED');
    expect(detailOf(err)).toBe('Expected a public address for the video input but received 127.0.0.2 (loopback)');
    expect(main.hits.some((h) => h.startsWith('/to'))).toBe(true);
    expect(inside.hits).toEqual([]);
  });

  it('refuses a redirect to a hostname that resolves inside', async () => {
    const target = `http://intranet.example:${inside.port}/secret`;
    const err = await failure(
      localize(
        `http://cdn.example:${main.port}/to?target=${encodeURIComponent(target)}`,
        'video',
        strict({
          resolve: fakeDns({ 'cdn.example': ['127.0.0.1'], 'intranet.example': ['127.0.0.2'] }),
          allowedCidrs: ['127.0.0.1/32'],
        }),
      ),
    );
    expect(detailOf(err)).toBe(
      'Expected a public address for the video input but received intranet.example, which resolves to 127.0.0.2 (loopback)',
    );
    expect(inside.hits).toEqual([]);
  });

  it('refuses a redirect to the cloud metadata service', async () => {
    const err = await failure(
      localize(
        local('/to?target=http://169.254.169.254/latest/meta-data/'),
        'image',
        strict({ allowedCidrs: ['127.0.0.1/32'] }),
      ),
    );
    expect(detailOf(err)).toBe(
      'Expected a public address for the image input but received 169.254.169.254 (link-local)',
    );
  });

  it('refuses a redirect to another scheme', async () => {
    const err = await failure(localize(local('/to?target=ftp://files.example/a.mp4'), 'video', dev()));
    expect(err.code).toBe('FETCH_FAILED');
    expect(err.message).toBe('Expected the video input to redirect to an https URL but it redirected to a ftp: URL');
  });
});

describe('named private prefixes (MEDIA_WORKER_PRIVATE_ORIGINS)', () => {
  const prefix = () => parsePrivateOrigins(`http://127.0.0.1:${main.port}/results`);

  it('fetches under a named prefix over http although the address is loopback', async () => {
    expect(prefix()).toEqual([`http://127.0.0.1:${main.port}/results/`]);
    const input = await localize(local('/results/ok'), 'image', { dir, privateUrlPrefixes: prefix() });
    expect(input.bytes).toBe(BODY.length);
  });

  it.each([
    ['the same host outside the folder', (p: number) => `http://127.0.0.1:${p}/ok`],
    ['a climb out of the folder', (p: number) => `http://127.0.0.1:${p}/results/../ok`],
    ['an encoded climb', (p: number) => `http://127.0.0.1:${p}/results/%2e%2e/ok`],
    ['another port', (p: number) => `http://127.0.0.1:${p + 1}/results/ok`],
    ['a longer folder name', (p: number) => `http://127.0.0.1:${p}/resultsx/ok`],
    ['the metadata service', () => 'http://169.254.169.254/results/ok'],
  ])('refuses %s, with the one message', async (_what, url) => {
    const before = main.hits.length;
    const err = await failure(localize(url(main.port), 'image', { dir, privateUrlPrefixes: prefix() }));
    expect(err.code).toMatch(/^(FETCH_FAILED|INVALID_URL)$/);
    if (err.code === 'FETCH_FAILED') expect(err.message).toMatch(/^Could not fetch the image input from /);
    expect(main.hits.length).toBe(before);
  });

  it('refuses a redirect out of the prefix to another private address, which is never contacted', async () => {
    // https, so that the scheme passes and the address is what refuses it.
    const target = `https://127.0.0.2:${inside.port}/secret`;
    const err = await failure(
      localize(local(`/results/to?target=${encodeURIComponent(target)}`), 'video', {
        dir,
        privateUrlPrefixes: prefix(),
      }),
    );
    expect(err.message).toBe(`Could not fetch the video input from ${local('/results/to')}`);
    expect(detailOf(err)).toBe('Expected a public address for the video input but received 127.0.0.2 (loopback)');
    expect(inside.hits).toEqual([]);
  });

  it('reads the setting as URL prefixes and refuses anything else', () => {
    expect(parsePrivateOrigins(' http://127.0.0.1:8080 , https://files.internal/uploads/ ')).toEqual([
      'http://127.0.0.1:8080/',
      'https://files.internal/uploads/',
    ]);
    expect(parsePrivateOrigins('')).toEqual([]);
    for (const bad of ['127.0.0.1:8080', 'ftp://x/', 'http://u:p@127.0.0.1/', 'http://127.0.0.1/?a=1']) {
      expect(() => parsePrivateOrigins(bad)).toThrow(
        `Expected a comma-separated list of http or https URL prefixes such as http://127.0.0.1:8080/results/ but received ${JSON.stringify(bad)}`,
      );
    }
  });
});

describe('size caps and timeouts', () => {
  it('cuts an endless body at the cap and removes the partial file', async () => {
    const err = await failure(localize(local('/endless'), 'image', dev({ maxBytes: { image: 64 * 1024 } })));
    expect(err.code).toBe('INPUT_TOO_LARGE');
    expect(err.status).toBe(422);
    expect(err.message).toBe(
      `Expected at most 65536 bytes for the image input but received more from ${local('/endless')}`,
    );
    await dirIsEmpty();
  });

  it('refuses a declared Content-Length over the cap before reading the body', async () => {
    const started = performance.now();
    const err = await failure(localize(local('/declared-huge'), 'video', dev()));
    expect(err.code).toBe('INPUT_TOO_LARGE');
    expect(err.message).toBe(
      `Expected at most 1073741824 bytes for the video input but received 10737418240 bytes from ${local('/declared-huge')}`,
    );
    expect(performance.now() - started).toBeLessThan(2_000);
    await dirIsEmpty();
  });

  it('applies per-kind default caps', async () => {
    // 20 000 bytes fit every default cap; a cap of 19 999 for one kind only refuses that kind.
    await expect(localize(local('/ok'), 'audio', dev({ maxBytes: { image: 19_999 } }))).resolves.toMatchObject({
      bytes: 20_000,
    });
    await expect(localize(local('/ok'), 'image', dev({ maxBytes: { image: 19_999 } }))).rejects.toMatchObject({
      code: 'INPUT_TOO_LARGE',
    });
  });

  it('times out a server that stops sending (idle timeout) and removes the partial file', async () => {
    const err = await failure(localize(local('/stall-body'), 'video', dev({ idleTimeoutMs: 300 })));
    expect(err.code).toBe('FETCH_FAILED');
    expect(err.retryable).toBe(true);
    expect(detailOf(err)).toBe(`Fetching the video input from ${local('/stall-body')} timed out: no data for 300 ms`);
    await dirIsEmpty();
  });

  it('times out a server that never answers', async () => {
    const err = await failure(localize(local('/stall-headers'), 'video', dev({ idleTimeoutMs: 300 })));
    expect(err).toMatchObject({ code: 'FETCH_FAILED', retryable: true });
  });

  it('times out a connection that cannot be made (resolution hangs)', async () => {
    const hang: Resolver = () => new Promise(() => {});
    const err = await failure(
      localize('http://blackhole.example/a.mp4', 'video', dev({ resolve: hang, connectTimeoutMs: 200 })),
    );
    expect(err).toMatchObject({ code: 'FETCH_FAILED', retryable: true });
    expect(detailOf(err)).toBe(
      'Fetching the video input from http://blackhole.example/a.mp4 timed out: no connection within 200 ms',
    );
  });

  it('gives up at the overall deadline even while bytes keep trickling in', async () => {
    const err = await failure(localize(local('/trickle'), 'audio', dev({ idleTimeoutMs: 1_000, deadlineMs: 400 })));
    expect(err).toMatchObject({ code: 'FETCH_FAILED', retryable: true });
    expect(detailOf(err)).toMatch(/timed out: not finished within 400 ms$/);
    await dirIsEmpty();
  });

  it('cuts a body slower than the minimum rate long before the deadline, and removes the partial file', async () => {
    const started = performance.now();
    const err = await failure(
      localize(
        local('/trickle'),
        'audio',
        dev({ minBytesPerSecond: 1000, rateWindowMs: 300, idleTimeoutMs: 10_000, deadlineMs: 60_000 }),
      ),
    );
    expect(performance.now() - started).toBeLessThan(1500);
    expect(err).toMatchObject({ code: 'FETCH_FAILED', retryable: false });
    expect(err.message).toBe(`Could not fetch the audio input from ${local('/trickle')}`);
    expect(detailOf(err)).toMatch(/^Fetching the audio input from .*\/trickle was too slow: \d+ bytes in 300 ms$/);
    await dirIsEmpty();
    // A body that comes at once is not judged: the check stops with the download.
    await expect(
      localize(local('/ok'), 'image', dev({ minBytesPerSecond: 1_000_000, rateWindowMs: 300 })),
    ).resolves.toMatchObject({ bytes: 20_000 });
  });

  it('stops when the job is cancelled, with the abort reason, and removes the partial file', async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('job cancelled')), 200);
    await expect(localize(local('/trickle'), 'audio', dev({ signal: controller.signal }))).rejects.toThrow(
      'job cancelled',
    );
    await dirIsEmpty();
  });
});

describe('HTTP errors', () => {
  it('reports 404 as not retryable, without the query string (it may carry a signature)', async () => {
    const err = await failure(localize(local('/missing?signature=SECRET'), 'image', dev()));
    expect(err).toMatchObject({ code: 'FETCH_FAILED', retryable: false });
    expect(err.message).toBe(`Fetching the image input from ${local('/missing')} failed: HTTP 404`);
  });

  it('reports 503 as retryable', async () => {
    await expect(localize(local('/busy'), 'image', dev())).rejects.toMatchObject({
      code: 'FETCH_FAILED',
      retryable: true,
    });
  });

  it('reports an unresolvable host', async () => {
    const err = await failure(localize('http://nowhere.example/a.png', 'image', dev({ resolve: fakeDns({}) })));
    expect(err.code).toBe('FETCH_FAILED');
    expect(detailOf(err)).toBe('The host nowhere.example of the image input could not be resolved');
  });

  it('reports a refused connection', async () => {
    const closed = await serve('127.0.0.1', () => {});
    const port = closed.port;
    await closed.close();
    const err = await failure(localize(`http://127.0.0.1:${port}/a.png`, 'image', dev()));
    expect(err).toMatchObject({ code: 'FETCH_FAILED', retryable: true });
    expect(detailOf(err)).toBe(`Fetching the image input from http://127.0.0.1:${port}/a.png failed: ECONNREFUSED`);
    expect(err.message).toBe(`Could not fetch the image input from http://127.0.0.1:${port}/a.png`);
  });

  it('says the same to the customer for a closed port and an open one, refused or not, and a timeout (the detail is the cause)', async () => {
    const closed = await serve('127.0.0.1', () => {});
    const port = closed.port;
    await closed.close();
    const messages = await Promise.all([
      failure(localize(`http://127.0.0.1:${port}/a.png`, 'image', strict())),
      failure(localize(`http://127.0.0.1:${main.port}/a.png`, 'image', strict())),
      failure(localize(`http://127.0.0.1:${port}/a.png`, 'image', dev())),
      failure(localize(`http://127.0.0.1:${main.port}/stall-headers`, 'image', dev({ idleTimeoutMs: 200 }))),
    ]);
    expect(messages.map((e) => e.message.replace(/:\d+\//, ':PORT/'))).toEqual([
      'Could not fetch the image input from http://127.0.0.1:PORT/a.png',
      'Could not fetch the image input from http://127.0.0.1:PORT/a.png',
      'Could not fetch the image input from http://127.0.0.1:PORT/a.png',
      'Could not fetch the image input from http://127.0.0.1:PORT/stall-headers',
    ]);
    // Refused before connecting (private address) whether open or closed; then ECONNREFUSED and a timeout.
    expect(messages.map(detailOf).map((d) => d.replace(/:\d+\//, ':PORT/'))).toEqual([
      'Expected a public address for the image input but received 127.0.0.1 (loopback)',
      'Expected a public address for the image input but received 127.0.0.1 (loopback)',
      'Fetching the image input from http://127.0.0.1:PORT/a.png failed: ECONNREFUSED',
      'Fetching the image input from http://127.0.0.1:PORT/stall-headers timed out: no data for 200 ms',
    ]);
  });
});

describe('URLs and local paths', () => {
  it.each([
    ['ftp://files.example/a.png', 'Expected an https URL for the image input but received a ftp: URL'],
    ['http://files.example/a.png', 'Expected an https URL for the image input but received a plain http URL'],
    ['file:///etc/passwd', 'Expected an https URL for the image input but received a file: URL'],
    ['/etc/passwd', 'Expected an https URL for the image input but received "/etc/passwd"'],
    ['not a url', 'Expected an https URL for the image input but received "not a url"'],
    ['', 'Expected an https URL for the image input but received ""'],
  ])('refuses %s', async (source, message) => {
    const err = await failure(localize(source, 'image', { dir }));
    expect(err.code).toBe('INVALID_URL');
    expect(err.status).toBe(400);
    expect(err.message).toBe(message);
  });

  it('uses a local path in place when allowed (CLI), without copying it', async () => {
    const input = await localize('/etc/hostname', 'image', { dir, allowLocalPaths: true });
    expect(input.path).toBe('/etc/hostname');
    expect(input.bytes).toBe((await readFile('/etc/hostname')).length);
    expect(await localize('file:///etc/hostname', 'image', { dir, allowLocalPaths: true })).toMatchObject({
      path: '/etc/hostname',
    });
    await dirIsEmpty();
  });

  it('reports a missing local file and a directory', async () => {
    await expect(localize(join(dir, 'missing.png'), 'image', { dir, allowLocalPaths: true })).rejects.toMatchObject({
      code: 'FETCH_FAILED',
    });
    const err = await failure(localize('/etc', 'image', { dir, allowLocalPaths: true }));
    expect(err.message).toBe('Expected a regular file for the image input but received "/etc"');
  });

  it('refuses at once when already cancelled', async () => {
    const controller = new AbortController();
    controller.abort(new Error('cancelled'));
    const before = main.hits.length;
    await expect(localize(local('/ok'), 'image', dev({ signal: controller.signal }))).rejects.toThrow('cancelled');
    expect(main.hits.length).toBe(before);
  });
});
