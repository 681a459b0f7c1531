/**
 * The customers' media host of the gateway's end-to-end tests: fixed files by path, a 404 for
 * anything else, and (given `slowBody`) a slow host under /slow/: headers at once, then one byte a
 * second, never idle long enough for a read timeout (the quote starvation of issue 31, finding 5).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface MediaServer {
  server: Server;
  url: string;
  /** Connections open on /slow/* now, and how many it ever saw. */
  slow: { open: number; seen: number };
  close(): void;
}

export interface MediaServerOptions {
  /** What /slow/* sends, a byte a second. */
  slowBody?: Buffer;
  /** A test's own routes, asked first: true when it answered. */
  route?: (req: IncomingMessage, res: ServerResponse) => boolean;
}

export async function startMediaServer(
  files: Record<string, Buffer>,
  options: MediaServerOptions = {},
): Promise<MediaServer> {
  const slow = { open: 0, seen: 0 };
  const { slowBody, route } = options;
  const server = createServer((req, res) => {
    if (route?.(req, res) === true) return;
    if (slowBody !== undefined && req.url?.startsWith('/slow/') === true) {
      slow.open += 1;
      slow.seen += 1;
      res.writeHead(200, { 'content-type': 'image/png', 'content-length': String(slowBody.length) });
      let i = 0;
      const timer = setInterval(() => res.write(slowBody.subarray(i, ++i)), 1000);
      res.once('close', () => {
        clearInterval(timer);
        slow.open -= 1;
      });
      return;
    }
    const body = files[req.url ?? ''];
    if (body === undefined) res.writeHead(404).end();
    else res.writeHead(200).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    server,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    slow,
    close() {
      server.closeAllConnections();
      server.close();
    },
  };
}
