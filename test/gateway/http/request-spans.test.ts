/**
 * The gateway's HTTP server spans (src/gateway/http/request-spans.ts) with tracing on, exported
 * over OTLP/HTTP JSON to a local receiver: what a span records of the client's request is bounded
 * (the path, never the query), a client's traceparent is only a link from a trace of the gateway's
 * own (its sampled flag and tracestate change nothing and go nowhere), probes get none, and a
 * request the client abandons still ends its span, once.
 */
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyInstance } from 'fastify';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_RECORDED_PATH_CHARS, traceRequests } from '../../../src/gateway/http/request-spans.js';
import { startTracing, telemetrySettingsFromEnv, traceHeaders, type Tracing } from '../../../src/telemetry/index.js';

interface Exported {
  name: string;
  traceId: string;
  spanId: string;
  parent: string;
  attributes: Record<string, unknown>;
  links: { traceId: string; spanId: string; traceState?: string }[];
}

const exported: Exported[] = [];
const warnings: string[] = [];
let receiver: Server;
let tracing: Tracing;
let app: FastifyInstance;
let port = 0;
/** A promise and the function that resolves it. */
function signal(): { promise: Promise<void>; resolve: () => void } {
  let resolve = (): void => undefined;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}
const slowStarted = signal();
const slowAnswered = signal();

beforeAll(async () => {
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
        resourceSpans: {
          scopeSpans: {
            spans: {
              name: string;
              traceId: string;
              spanId: string;
              parentSpanId?: string;
              attributes?: { key: string; value: Record<string, unknown> }[];
              links?: Exported['links'];
            }[];
          }[];
        }[];
      };
      for (const rs of body.resourceSpans) {
        for (const ss of rs.scopeSpans) {
          for (const s of ss.spans) {
            const attributes = Object.fromEntries((s.attributes ?? []).map((a) => [a.key, Object.values(a.value)[0]]));
            const links = (s.links ?? []).map((l) => ({
              traceId: l.traceId,
              spanId: l.spanId,
              ...(l.traceState ? { traceState: l.traceState } : {}),
            }));
            exported.push({
              name: s.name,
              traceId: s.traceId,
              spanId: s.spanId,
              parent: s.parentSpanId ?? '',
              attributes,
              links,
            });
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const endpoint = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  // The SDK's own complaints (a span ended twice, say) land here.
  const logger = pino({ level: 'warn' }, { write: (line: string) => void warnings.push(line) });
  tracing = await startTracing(
    telemetrySettingsFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' }),
    { serviceName: 'test', logger },
  );
  app = Fastify();
  traceRequests(app);
  app.get('/ok', async () => ({ ok: true }));
  // What the request's handling would send on in a message's headers.
  app.get('/headers', async () => traceHeaders());
  app.get('/healthz', async () => ({ status: 'ok' }));
  // Answers only once its client has gone, then says so.
  app.get('/slow', async (req, reply) => {
    slowStarted.resolve();
    await new Promise((resolve) => req.raw.once('close', resolve));
    await reply.send({ late: true });
    slowAnswered.resolve();
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  port = (app.server.address() as AddressInfo).port;
});

afterAll(async () => {
  await app?.close();
  await tracing?.shutdown();
  receiver?.close();
});

function getWithBody(path: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end();
  });
}

async function get(path: string, headers: Record<string, string> = {}): Promise<number> {
  return (await getWithBody(path, headers)).status;
}

/** A GET of /slow the client gives up on once its handler runs; resolves when the handler has answered all the same. */
async function abandonSlow(): Promise<void> {
  const req = request({ host: '127.0.0.1', port, path: '/slow' });
  req.on('error', () => undefined);
  req.end();
  await slowStarted.promise;
  req.destroy();
  await slowAnswered.promise;
}

describe('HTTP server spans', () => {
  it("record a bounded path without its query, start a trace of their own linked to the client's, and end an abandoned request once", async () => {
    const clientTrace = '4bf92f3577b34da6a3ce929d0e0e4736';
    const clientSpan = '00f067aa0ba902b7';
    expect(await get('/ok?token=secret-in-query', { traceparent: `00-${clientTrace}-${clientSpan}-01` })).toBe(200);
    // Sampled flag 0 and a tracestate: neither hides the request nor travels on.
    const sent = await getWithBody('/headers', {
      traceparent: `00-${clientTrace}-${clientSpan}-00`,
      tracestate: 'client=claimed-state',
    });
    expect(sent.status).toBe(200);
    expect(await get('/ok', { traceparent: '00-not-a-trace-01' })).toBe(200);
    expect(await get(`/${'a'.repeat(5000)}`)).toBe(404);
    expect(await get('/healthz')).toBe(200);
    await abandonSlow();
    // Shutting down sends what is batched.
    await tracing.shutdown();

    const ok = exported.filter((s) => s.name === 'GET /ok');
    expect(ok.map((s) => [s.parent, s.attributes['url.path'], s.attributes['http.response.status_code']])).toEqual([
      ['', '/ok', 200],
      ['', '/ok', 200],
    ]);
    expect(ok.map((s) => s.traceId)).not.toContain(clientTrace);
    expect(ok.map((s) => s.links)).toEqual([[{ traceId: clientTrace, spanId: clientSpan }], []]);
    expect(JSON.stringify(exported)).not.toContain('secret-in-query');

    const headersSpan = exported.filter((s) => s.name === 'GET /headers');
    expect(headersSpan.map((s) => [s.parent, s.links])).toEqual([['', [{ traceId: clientTrace, spanId: clientSpan }]]]);
    expect(JSON.parse(sent.body)).toEqual({
      traceparent: `00-${headersSpan[0]!.traceId}-${headersSpan[0]!.spanId}-01`,
    });
    expect(JSON.stringify(exported)).not.toContain('claimed-state');

    const long = exported.filter((s) => s.name === 'GET');
    expect(long).toHaveLength(1);
    const recorded = String(long[0]!.attributes['url.path']);
    expect(recorded.length).toBe(MAX_RECORDED_PATH_CHARS);
    expect(recorded.startsWith('/aaa')).toBe(true);
    expect(recorded.endsWith('…')).toBe(true);

    expect(exported.filter((s) => s.attributes['url.path'] === '/healthz')).toEqual([]);
    expect(exported.filter((s) => s.name === 'GET /slow').map((s) => s.attributes['error.type'])).toEqual([
      'client closed the request',
    ]);
    expect(warnings).toEqual([]);
  });
});
