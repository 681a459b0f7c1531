/**
 * A closed-loop HTTP/1.1 load generator over raw keep-alive sockets: `connections` sockets, each
 * sending its next GET as soon as the previous answer is complete, for `durationMs` after a
 * warm-up. It parses only the status line and Content-Length, so it costs the measured server
 * little of the shared CPUs (node:http's client, or fetch, spend several times more per request).
 * The same idea as autocannon, without adding a dependency for one benchmark.
 */
import { connect, type Socket } from 'node:net';

export interface LoadOptions {
  url: string;
  /** The path of the n-th request (ids spread over many tasks, as many clients would). */
  path(n: number): string;
  headers: Record<string, string>;
  connections: number;
  warmupMs: number;
  durationMs: number;
}

export interface LoadResult {
  count: number;
  perSecond: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** Answers other than 200, by status. */
  others: Record<string, number>;
}

const HEAD_END = Buffer.from('\r\n\r\n');

export async function closedLoop(options: LoadOptions): Promise<LoadResult> {
  const target = new URL(options.url);
  const headerLines = Object.entries({ host: target.host, ...options.headers })
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  let n = 0;
  let measuring = false;
  let stopping = false;
  const latencies: number[] = [];
  const others: Record<string, number> = {};
  const run = (socket: Socket): Promise<void> =>
    new Promise((resolve, reject) => {
      let buffered: Buffer = Buffer.alloc(0);
      let sentAt = 0;
      const send = (): void => {
        if (stopping) {
          socket.end();
          resolve();
          return;
        }
        sentAt = performance.now();
        socket.write(`GET ${options.path(n++)} HTTP/1.1\r\n${headerLines}\r\n`);
      };
      socket.on('data', (chunk: Buffer) => {
        buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk]);
        for (;;) {
          const end = buffered.indexOf(HEAD_END);
          if (end < 0) return;
          const head = buffered.subarray(0, end).toString('latin1');
          const length = Number(/\r\ncontent-length:\s*(\d+)/i.exec(head)?.[1] ?? 'NaN');
          if (!Number.isFinite(length)) {
            reject(
              new Error(`Expected a Content-Length in the answer but received ${JSON.stringify(head.slice(0, 200))}`),
            );
            return;
          }
          const total = end + HEAD_END.length + length;
          if (buffered.length < total) return;
          const status = head.slice(9, 12);
          buffered = buffered.subarray(total);
          if (measuring) {
            latencies.push(performance.now() - sentAt);
            if (status !== '200') others[status] = (others[status] ?? 0) + 1;
          }
          send();
        }
      });
      socket.once('error', reject);
      send();
    });
  const sockets = await Promise.all(
    Array.from({ length: options.connections }, () => {
      return new Promise<Socket>((resolve, reject) => {
        const socket = connect(Number(target.port), target.hostname, () => resolve(socket));
        socket.setNoDelay(true);
        socket.once('error', reject);
      });
    }),
  );
  const loops = Promise.all(sockets.map(run));
  await new Promise((r) => setTimeout(r, options.warmupMs));
  measuring = true;
  const start = performance.now();
  await new Promise((r) => setTimeout(r, options.durationMs));
  measuring = false;
  const wallMs = performance.now() - start;
  stopping = true;
  await loops;
  const sorted = latencies.sort((a, b) => a - b);
  const at = (q: number): number =>
    Number((sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0).toFixed(2));
  return {
    count: sorted.length,
    perSecond: Number(((sorted.length * 1000) / wallMs).toFixed(0)),
    p50Ms: at(0.5),
    p99Ms: at(0.99),
    maxMs: at(1),
    others,
  };
}
