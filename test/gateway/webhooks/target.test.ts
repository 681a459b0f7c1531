/**
 * The name resolution of customers' hosts (media/resolvers.ts, dnsResolver: webhooks and inputs) against local DNS servers over
 * real UDP: one that answers (its answers judged like any address), and one that never answers, as
 * an attacker's name servers would: the lookups end within their deadline, and meanwhile libuv's
 * threads stay free for the gateway's file operations (getaddrinfo would hold one per lookup).
 */
import { createSocket, type Socket } from 'node:dgram';
import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { destinationProblem } from '../../../src/gateway/webhooks/target.js';
import { dnsResolver } from '../../../src/media/index.js';

const strict = { allowLoopback: false };
/** name -> its A records; every other name has none (NOERROR, no answer). */
const zone: Record<string, string[]> = {
  'public.test': ['93.184.215.14'],
  'inside.test': ['93.184.215.14', '10.1.2.3'],
};

let answering: Socket;
let silent: Socket;
let answeringAt: string;
let silentAt: string;
let silentQueries = 0;

/** The question's name (labels from byte 12) and where the question ends. */
function question(query: Buffer): { name: string; end: number; type: number } {
  const labels: string[] = [];
  let i = 12;
  while (query[i]! !== 0) {
    labels.push(query.subarray(i + 1, i + 1 + query[i]!).toString('ascii'));
    i += query[i]! + 1;
  }
  return { name: labels.join('.'), end: i + 5, type: query.readUInt16BE(i + 1) };
}

/** An answer with the A records of the zone (none for other names and types), RFC 1035 4.1. */
function answer(query: Buffer): Buffer {
  const q = question(query);
  const addresses = q.type === 1 ? (zone[q.name] ?? []) : [];
  const header = Buffer.alloc(12);
  query.copy(header, 0, 0, 2);
  header.writeUInt16BE(0x8180, 2); // a response, recursion desired and available, NOERROR
  header.writeUInt16BE(1, 4);
  header.writeUInt16BE(addresses.length, 6);
  const records = addresses.map((a) => {
    const r = Buffer.alloc(16);
    r.writeUInt16BE(0xc00c, 0); // the name: a pointer to the question's
    r.writeUInt16BE(1, 2);
    r.writeUInt16BE(1, 4);
    r.writeUInt32BE(60, 6);
    r.writeUInt16BE(4, 10);
    a.split('.').forEach((octet, k) => r.writeUInt8(Number(octet), 12 + k));
    return r;
  });
  return Buffer.concat([header, query.subarray(12, q.end), ...records]);
}

async function bound(socket: Socket): Promise<string> {
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return `127.0.0.1:${socket.address().port}`;
}

beforeAll(async () => {
  answering = createSocket('udp4');
  answering.on('message', (msg, from) => answering.send(answer(msg), from.port, from.address));
  answeringAt = await bound(answering);
  silent = createSocket('udp4');
  silent.on('message', () => (silentQueries += 1));
  silentAt = await bound(silent);
});

afterAll(() => {
  answering?.close();
  silent?.close();
});

describe('resolving a webhook host', () => {
  it('judges every answer of the name servers', async () => {
    const resolve = dnsResolver([answeringAt]);
    expect(await resolve('public.test')).toEqual([{ address: '93.184.215.14', family: 4 }]);
    expect(await destinationProblem(new URL('https://public.test/hook'), strict, resolve)).toBeNull();
    expect(await destinationProblem(new URL('https://inside.test/hook'), strict, resolve)).toBe(
      'inside.test resolves to 10.1.2.3 is a private address',
    );
    expect(await destinationProblem(new URL('https://nothing.test/hook'), strict, resolve)).toMatch(
      /nothing\.test (does not resolve|has no address)/,
    );
  });

  it('name servers that never answer: each lookup ends within its deadline, and file operations are not held up meanwhile', async () => {
    const resolve = dnsResolver([silentAt]);
    const started = Date.now();
    let lookupsEndedAt = 0;
    const lookups = Array.from({ length: 8 }, (_, i) =>
      destinationProblem(new URL(`https://n${i}.attacker.test/`), strict, resolve),
    );
    const all = Promise.all(lookups).then((problems) => {
      lookupsEndedAt = Date.now();
      return problems;
    });
    // Sixteen reads on libuv's threads while the eight lookups wait: all done long before them.
    await Promise.all(Array.from({ length: 16 }, () => readFile(new URL(import.meta.url))));
    const readsEndedAt = Date.now();
    const problems = await all;
    expect(problems.every((p) => p !== null && /does not resolve/.test(p))).toBe(true);
    expect(silentQueries).toBeGreaterThanOrEqual(8);
    expect(readsEndedAt).toBeLessThan(lookupsEndedAt);
    // Generous: the deadline is about 4.5 s; the point is that there is one.
    expect(lookupsEndedAt - started).toBeLessThan(30_000);
  }, 60_000);
});
