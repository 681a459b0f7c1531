/**
 * A daemon's NATS connection leaves a server that has gone silent (issue 38, item 3; found by
 * `npm run chaos:partitions`: with a node isolated by a partition, both worker hosts attached to it
 * stayed on it for the whole minute, pulling and publishing nothing, and took another minute after
 * the heal). A partition drops packets without closing the connection, so only the client's own
 * PINGs can tell; the client's default (a PING every 2 minutes) is far too slow. Here the server
 * behind a proxy stops answering, as a partition does, and the connection must be on the other
 * server of its list within 30 s.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { NatsConnection } from '@nats-io/transport-node';
import { afterAll, expect, it } from 'vitest';
import { connectNats, parseProtocolSettings } from '../../../src/protocol/index.js';
import { sleep } from '../../../src/sleep.js';
import { startNatsServer, type TestNatsServer } from '../../worker/helpers/nats-server.js';

/** Forwards to `target` until `stall()`: then every byte is swallowed and no socket is closed. */
async function silenceableProxy(target: number): Promise<{ port: number; stall(): void; close(): void }> {
  let stalled = false;
  const sockets: net.Socket[] = [];
  const server = net.createServer((client) => {
    const upstream = net.connect(target, '127.0.0.1');
    sockets.push(client, upstream);
    client.on('data', (d) => void (stalled || upstream.write(d)));
    upstream.on('data', (d) => void (stalled || client.write(d)));
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    stall: () => void (stalled = true),
    close() {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}

const servers: TestNatsServer[] = [];
const closers: (() => unknown)[] = [];
afterAll(async () => {
  for (const c of closers) await c();
  for (const s of servers) await s.close();
});

it('moves to another server within 30 s when its server goes silent (a partition, not a closed connection)', async () => {
  // Servers of their own (a configuration file makes the helper start one, whatever NATS_URL says).
  const config = path.join(await mkdtemp(path.join(tmpdir(), 'media-silent-')), 'plain.conf');
  await writeFile(config, '# core NATS only\n');
  closers.push(() => rm(path.dirname(config), { recursive: true, force: true }));
  const a = await startNatsServer({ configFile: config });
  const b = await startNatsServer({ configFile: config });
  servers.push(a, b);
  const proxy = await silenceableProxy(Number(new URL(a.url).port));
  closers.push(() => proxy.close());
  const viaProxy = `127.0.0.1:${proxy.port}`;
  const settings = { ...parseProtocolSettings({}), natsUrl: `nats://${viaProxy},${b.url}` };
  // The list is shuffled at connect: connect until the proxied server is the one in use.
  let nc: NatsConnection | undefined;
  const seen: string[] = [];
  for (let i = 0; i < 20 && nc === undefined; i += 1) {
    const candidate = await connectNats(settings);
    if (candidate.getServer() === viaProxy) nc = candidate;
    else {
      seen.push(candidate.getServer());
      await candidate.close();
    }
  }
  if (nc === undefined) throw new Error(`never connected through the proxy ${viaProxy}: ${seen.join(' ')}`);
  closers.push(() => nc.close());
  proxy.stall();
  const stalledAt = Date.now();
  while (nc.getServer() === viaProxy && Date.now() - stalledAt < 30_000) await sleep(200);
  expect(nc.getServer()).toBe(new URL(b.url).host);
  process.stderr.write(
    `moved to the other server ${((Date.now() - stalledAt) / 1000).toFixed(1)} s after its server went silent\n`,
  );
  await nc.flush();
}, 40_000);
