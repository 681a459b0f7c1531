/**
 * A TCP link to a NATS server that a test can cut and heal, as a network partition between one
 * worker host and the servers does: cut, every open connection is dropped and new ones are refused
 * until heal(). The process behind it keeps running (its job too); only its NATS is gone.
 */
import net from 'node:net';

export interface CuttableProxy {
  /** `nats://127.0.0.1:<port>`: give it to the process to cut off. */
  url: string;
  cut(): void;
  heal(): void;
  close(): Promise<void>;
}

export async function cuttableProxy(targetUrl: string): Promise<CuttableProxy> {
  const target = new URL(targetUrl);
  let cut = false;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    if (cut) {
      client.destroy();
      return;
    }
    const upstream = net.connect(Number(target.port), target.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
    }
    client.pipe(upstream);
    upstream.pipe(client);
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `nats://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    cut() {
      cut = true;
      for (const s of sockets) s.destroy();
    },
    heal() {
      cut = false;
    },
    async close() {
      cut = true;
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
