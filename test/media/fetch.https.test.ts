/**
 * The https path: TLS through the guarded lookup and the connect-time check. The certificate in
 * fixtures/ is a self-signed, test-only one for `media.example` (valid until 2126).
 */
import { readFile } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { localize, type LocalizeOptions } from '../../src/media/fetch.js';
import { makeTempDir } from './helpers.js';

const fixtures = join(import.meta.dirname, 'fixtures');
let cert: string;
let tlsServer: https.Server;
let plainServer: http.Server;
let tlsPort: number;
let plainPort: number;
let plainHits = 0;
let dir: string;
let cleanup: () => Promise<void>;

beforeAll(async () => {
  ({ dir, cleanup } = await makeTempDir('https'));
  cert = await readFile(join(fixtures, 'test-only-tls-cert.pem'), 'utf8');
  const key = await readFile(join(fixtures, 'test-only-tls-key.pem'), 'utf8');
  plainServer = http.createServer((_req, res) => {
    plainHits++;
    res.end('plain');
  });
  await new Promise<void>((resolve) => plainServer.listen(0, '127.0.0.1', resolve));
  plainPort = (plainServer.address() as AddressInfo).port;
  tlsServer = https.createServer({ cert, key }, (req, res) => {
    if (req.url === '/downgrade') {
      res.writeHead(302, { location: `http://media.example:${plainPort}/file` });
      res.end();
      return;
    }
    res.end('over tls');
  });
  await new Promise<void>((resolve) => tlsServer.listen(0, '127.0.0.1', resolve));
  tlsPort = (tlsServer.address() as AddressInfo).port;
});

afterAll(async () => {
  for (const server of [tlsServer, plainServer]) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
  await cleanup();
});

const options = (extra: Partial<LocalizeOptions> = {}): LocalizeOptions => ({
  dir,
  resolve: async () => [{ address: '127.0.0.1', family: 4 }],
  allowedCidrs: ['127.0.0.1/32'],
  extraCaCerts: [cert],
  ...extra,
});

describe('https downloads', () => {
  it('downloads over TLS, verifying the certificate against the host name', async () => {
    const input = await localize(`https://media.example:${tlsPort}/file`, 'image', options());
    expect(await readFile(input.path, 'utf8')).toBe('over tls');
  });

  it('fails on an untrusted certificate', async () => {
    const err = await localize(`https://media.example:${tlsPort}/file`, 'image', options({ extraCaCerts: [] })).catch(
      (e: unknown) => e,
    );
    expect(err).toMatchObject({ code: 'FETCH_FAILED' });
    expect((err as Error).message).toMatch(/^Could not fetch the image input from https:\/\/media\.example:\d+\/file$/);
    expect(((err as Error).cause as Error).message).toMatch(
      /^Fetching the image input from https:\/\/media\.example:\d+\/file failed: /,
    );
  });

  it('refuses a redirect that downgrades to plain http', async () => {
    const err = await localize(`https://media.example:${tlsPort}/downgrade`, 'video', options()).catch(
      (e: unknown) => e,
    );
    expect(err).toMatchObject({ code: 'FETCH_FAILED' });
    expect((err as Error).message).toBe(
      'Expected the video input to redirect to an https URL but it redirected to a plain http URL',
    );
    expect(plainHits).toBe(0);
  });

  it('still refuses inside addresses over https', async () => {
    const err = await localize(`https://media.example:${tlsPort}/file`, 'image', options({ allowedCidrs: [] })).catch(
      (e: unknown) => e,
    );
    expect(((err as Error).cause as Error).message).toBe(
      'Expected a public address for the image input but received media.example, which resolves to 127.0.0.1 (loopback)',
    );
  });
});
