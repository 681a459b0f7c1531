/**
 * One webhook request against local servers over real HTTP (webhooks/delivery.ts): the POST as
 * signed, redirects not followed, the deadline, at most a small part of a body read, and the
 * address policy judged on the resolved and the connected address, with nothing sent to a refused one.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postWebhook, type DeliveryOptions } from '../../../src/gateway/webhooks/delivery.js';

interface Seen {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
}

const seen: Seen[] = [];
let connections = 0;
const routes: Record<string, (res: ServerResponse) => void> = {
  '/ok': (res) => res.writeHead(200).end('thanks'),
  '/redirect': (res) => res.writeHead(302, { location: '/ok' }).end(),
  '/slow': () => undefined,
  '/big': (res) => {
    res.writeHead(500, { 'retry-after': '30' });
    res.end('x'.repeat(1_000_000));
  },
};
let server: Server;
let base: string;

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      seen.push({
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      });
      (routes[req.url ?? ''] ?? ((r: ServerResponse) => r.writeHead(404).end()))(res);
    });
  });
  server.on('connection', () => (connections += 1));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(() => {
  server.closeAllConnections();
  server.close();
});

const dev: DeliveryOptions = {
  policy: { allowLoopback: true },
  timeoutMs: 2000,
  maxResponseBytes: 1024,
  userAgent: 'test',
};
const strict: DeliveryOptions = { ...dev, policy: { allowLoopback: false } };

describe('postWebhook', () => {
  it('POSTs the body with the given headers and JSON content type, and reads the answer', async () => {
    const body = JSON.stringify({ success: true, data: { id: 't_1' } });
    const result = await postWebhook(new URL(`${base}/ok`), { 'webhook-id': 'msg_1' }, body, dev);
    expect(result).toEqual({ status: 200, body: 'thanks' });
    const request = seen.at(-1)!;
    expect([request.method, request.path, request.body]).toEqual(['POST', '/ok', body]);
    expect(request.headers['webhook-id']).toBe('msg_1');
    expect(request.headers['content-type']).toBe('application/json');
  });

  it('does not follow a redirect: the 3xx is the answer', async () => {
    const before = seen.length;
    expect((await postWebhook(new URL(`${base}/redirect`), {}, '{}', dev)).status).toBe(302);
    expect(seen.slice(before).map((s) => s.path)).toEqual(['/redirect']);
  });

  it('gives up at the deadline', async () => {
    const started = Date.now();
    const result = await postWebhook(new URL(`${base}/slow`), {}, '{}', { ...dev, timeoutMs: 300 });
    expect(result).toEqual({ error: 'no answer within 300 ms' });
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('reads at most maxResponseBytes of a large answer, keeping Retry-After', async () => {
    const result = await postWebhook(new URL(`${base}/big`), {}, '{}', dev);
    expect(result.status).toBe(500);
    expect(result.retryAfter).toBe('30');
    expect(result.body).toHaveLength(1024);
  });

  it('refuses a loopback address without loopback development, before any connection', async () => {
    const before = connections;
    const literal = await postWebhook(new URL(`${base}/ok`), {}, '{}', strict);
    expect(literal.error).toMatch(/^refused: 127\.0\.0\.1 is a loopback address/);
    // A name resolving to it is refused at lookup (the resolver stands for DNS).
    const port = (server.address() as AddressInfo).port;
    const named = await postWebhook(new URL(`https://hooks.example:${port}/ok`), {}, '{}', {
      ...strict,
      resolve: async () => [{ address: '127.0.0.1', family: 4 }],
    });
    expect(named.error).toMatch(/^refused: hooks\.example resolves to 127\.0\.0\.1 is a loopback address/);
    // Any private answer among public ones refuses the name.
    const mixed = await postWebhook(new URL(`https://hooks.example:${port}/ok`), {}, '{}', {
      ...strict,
      resolve: async () => [
        { address: '93.184.216.34', family: 4 },
        { address: '10.0.0.1', family: 4 },
      ],
    });
    expect(mixed.error).toMatch(/10\.0\.0\.1 is a private address/);
    expect(connections).toBe(before);
  });

  it('plain http goes to loopback only, even in loopback development', async () => {
    const port = (server.address() as AddressInfo).port;
    const result = await postWebhook(new URL(`http://hooks.example:${port}/ok`), {}, '{}', {
      ...dev,
      resolve: async () => [{ address: '93.184.216.34', family: 4 }],
    });
    expect(result.error).toMatch(/plain http goes only to loopback/);
  });

  it('a name that does not resolve is an error, not a throw', async () => {
    const result = await postWebhook(new URL('https://nowhere.example/x'), {}, '{}', {
      ...strict,
      resolve: async () => {
        throw new Error('ENOTFOUND');
      },
    });
    expect(result.error).toMatch(/does not resolve/);
  });
});
