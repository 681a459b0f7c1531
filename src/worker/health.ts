/**
 * `/metrics` (Prometheus text), `/healthz` (the process is alive and not stopped) and `/readyz`
 * (pulling jobs of at least one kind with a live NATS connection; the body says, per kind, whether
 * it is served and why not, and which device runs the networks) on one small node:http server.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';

export interface HealthProbe {
  live(): boolean;
  /** null when ready, else why not (reported in the body). */
  notReadyReason(): string | null;
  /** Added to the /readyz body as `kinds` (what each kind can do here). */
  kinds?(): unknown;
  /** Added to the /readyz body as `device` (the GPU's index, name and memory, or the CPU). */
  device?: unknown;
}

export interface HealthServer {
  port: number;
  close(): Promise<void>;
}

export async function startHealthServer(
  host: string,
  port: number,
  registry: Registry,
  probe: HealthProbe,
): Promise<HealthServer> {
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      reply(res, 405, 'text/plain', 'method not allowed\n');
      return;
    }
    if (path === '/metrics') {
      registry.metrics().then(
        (text) => reply(res, 200, registry.contentType, text),
        (err: unknown) => reply(res, 500, 'text/plain', `metrics failed: ${String(err)}\n`),
      );
      return;
    }
    if (path === '/healthz') {
      const live = probe.live();
      reply(res, live ? 200 : 503, 'application/json', JSON.stringify({ status: live ? 'ok' : 'stopped' }));
      return;
    }
    if (path === '/readyz') {
      const reason = probe.notReadyReason();
      const body = {
        ...(reason === null ? { status: 'ready' } : { status: 'not ready', reason }),
        ...(probe.kinds ? { kinds: probe.kinds() } : {}),
        ...(probe.device === undefined ? {} : { device: probe.device }),
      };
      reply(res, reason === null ? 200 : 503, 'application/json', JSON.stringify(body));
      return;
    }
    reply(res, 404, 'text/plain', 'not found\n');
  });
  // Probes and scrapes are short; a stuck client must not hold the drain.
  server.keepAliveTimeout = 1000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function reply(res: http.ServerResponse, status: number, type: string, body: string): void {
  res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' });
  res.end(body);
}
