/**
 * Local fake music providers on 127.0.0.1 for tests, speaking the documented APIs: the Suno-style
 * API (POST /api/v1/generate, GET /api/v1/generate/record-info) and ACE-Step 1.5's
 * (POST /release_task, POST /query_result, GET /v1/audio, GET /health). Each test scripts the
 * answers; files are served from memory, and a `stall` file sends a few bytes and then nothing.
 */
import { execFileSync } from 'node:child_process';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Recorded {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: unknown;
}

export type Handler = (req: Recorded, res: ServerResponse) => void;

export interface FakeServer {
  url: string;
  requests: Recorded[];
  /** Routes by "METHOD /path" (no query); the last one set wins. */
  route(key: string, handler: Handler): void;
  close(): Promise<void>;
}

export async function startFakeServer(): Promise<FakeServer> {
  const routes = new Map<string, Handler>();
  const requests: Recorded[] = [];
  const sockets = new Set<import('node:net').Socket>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      let body: unknown = text;
      try {
        body = text === '' ? undefined : JSON.parse(text);
      } catch {
        // kept as text
      }
      const recorded = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body };
      requests.push(recorded);
      const key = `${req.method} ${new URL(req.url ?? '/', 'http://x').pathname}`;
      const handler = routes.get(key);
      if (handler === undefined) res.writeHead(404).end();
      else handler(recorded, res);
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    route: (key, handler) => routes.set(key, handler),
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

/** A real MP3 made by ffmpeg (a sine). */
export function mp3Bytes(seconds: number, hz: number): Buffer {
  return execFileSync('ffmpeg', [
    '-v',
    'error',
    '-f',
    'lavfi',
    '-i',
    `sine=frequency=${hz}:duration=${seconds}:sample_rate=44100`,
    '-c:a',
    'libmp3lame',
    '-f',
    'mp3',
    'pipe:1',
  ]);
}

export function serveFile(bytes: Buffer, type: string): Handler {
  return (_req, res) => res.writeHead(200, { 'content-type': type, 'content-length': String(bytes.length) }).end(bytes);
}

/** Sends the first bytes and then stalls: a download that never finishes. */
export function stallingFile(bytes: Buffer): Handler {
  return (_req, res) => {
    res.writeHead(200, { 'content-type': 'audio/mpeg', 'content-length': String(bytes.length) });
    res.write(bytes.subarray(0, 64));
  };
}
