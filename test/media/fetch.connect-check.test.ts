/**
 * The connect-time check on `socket.remoteAddress` is the second line of defence behind the
 * guarded `lookup`: it cannot be reached through real DNS (the lookup already refuses), so this file
 * makes the policy allow the resolved address and refuse the connected one, and checks that the
 * request is never written to the socket.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type * as Policy from '../../src/media/address-policy.js';
import { localize } from '../../src/media/fetch.js';
import { makeTempDir } from './helpers.js';

const calls: string[] = [];
vi.mock('../../src/media/address-policy.js', async (importOriginal) => {
  const real = await importOriginal<typeof Policy>();
  return {
    ...real,
    checkAddress: (ip: string, policy?: Policy.AddressPolicy): Policy.AddressVerdict => {
      calls.push(ip);
      // First call: the lookup's answer. Second: the connected socket's address.
      return calls.length === 1 ? { allowed: true } : real.checkAddress(ip, policy);
    },
  };
});

let server: http.Server;
let port: number;
let requests = 0;
let connections = 0;
let bytesReceived = 0;
let dir: string;
let cleanup: () => Promise<void>;

beforeAll(async () => {
  ({ dir, cleanup } = await makeTempDir('connect-check'));
  server = http.createServer((_req, res) => {
    requests++;
    res.end('secret');
  });
  server.on('connection', (socket) => {
    connections++;
    socket.on('data', (chunk: Buffer) => (bytesReceived += chunk.length));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  await cleanup();
});

describe('connect-time address check', () => {
  it('drops a connection whose remote address is forbidden before sending the request', async () => {
    const err = await localize(`http://rebound.example:${port}/x`, 'image', {
      dir,
      allowHttp: true,
      resolve: async () => [{ address: '127.0.0.1', family: 4 }],
    }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'FETCH_FAILED' });
    expect((err as Error).message).toBe(`Could not fetch the image input from http://rebound.example:${port}/x`);
    expect(((err as Error).cause as Error).message).toBe(
      'Expected a public address for the image input but received rebound.example, which resolves to 127.0.0.1 (loopback)',
    );
    expect(calls).toEqual(['127.0.0.1', '127.0.0.1']);
    // The TCP connection was made (that is what is being checked), the HTTP request was not.
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(connections).toBe(1);
    expect(requests).toBe(0);
    expect(bytesReceived).toBe(0);
  });
});
