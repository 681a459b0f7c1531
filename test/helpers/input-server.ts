/**
 * Job inputs served over real HTTP on 127.0.0.1: each path answers its file's bytes, any other
 * path 404. For tests whose worker or fake provider fetches the inputs by URL.
 */
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface InputServer {
  /** The origin, e.g. http://127.0.0.1:40123; a file is at `${url}/name`. */
  url: string;
  close(): Promise<void>;
}

/** `files`: URL path ("/face.mp4") -> local file, read once. */
export async function startInputServer(files: Record<string, string>): Promise<InputServer> {
  const bodies = new Map<string, Buffer>();
  for (const [route, file] of Object.entries(files)) bodies.set(route, await readFile(file));
  const server = createServer((req, res) => {
    const body = bodies.get(req.url ?? '');
    if (body === undefined) res.writeHead(404).end();
    else res.writeHead(200).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
