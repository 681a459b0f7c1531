/**
 * One trace per job (issue 39, item 2), as shipped (dist/): the gateway and the worker export to a
 * local OTLP/HTTP JSON receiver (a node:http server collecting POST /v1/traces), an image upscale
 * with a webhook is submitted, and one trace holds the gateway's HTTP span, the worker's job span
 * below it with its stages, the settling and the webhook delivery; a cancel reaches the worker in
 * its trace. A client's own traceparent is only linked from the gateway's trace, whatever its sampled
 * flag. A job whose traceparent header is malformed runs all the same, in a trace of its own.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { jetstream } from '@nats-io/jetstream';
import { headers as natsHeaders } from '@nats-io/transport-node';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUNDLED_PHOTOS_DIR } from '../../../src/paths.js';
import { waitFor } from '../../worker/helpers/jetstream.js';
import { useGatewayE2e } from './e2e-harness.js';

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
  doubleValue?: number;
}
interface OtlpAttribute {
  key: string;
  value: OtlpValue;
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: OtlpAttribute[];
  links?: { traceId: string; spanId: string; traceState?: string }[];
}
interface OtlpBody {
  resourceSpans: { resource: { attributes: OtlpAttribute[] }; scopeSpans: { spans: OtlpSpan[] }[] }[];
}

/** A received span with its process's service name and its attributes as plain values. */
interface Seen {
  service: string;
  traceId: string;
  spanId: string;
  parent: string;
  name: string;
  attributes: Record<string, unknown>;
  links: { traceId: string; spanId: string; traceState?: string }[];
}

function plain(value: OtlpValue): unknown {
  return (
    value.stringValue ??
    (value.intValue === undefined ? undefined : Number(value.intValue)) ??
    value.boolValue ??
    value.doubleValue
  );
}

const received: Seen[] = [];
const contentTypes = new Set<string>();
const webhooks: string[] = [];
let receiver: Server;
// Filled in before the harness's beforeAll reads it (hooks run in the order they were registered).
const env: NodeJS.ProcessEnv = { GATEWAY_WEBHOOK_ALLOW_LOOPBACK: 'true', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' };
let receiverUrl = '';

beforeAll(async () => {
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      if (req.method === 'POST' && req.url === '/v1/traces') {
        contentTypes.add(String(req.headers['content-type']));
        const body = JSON.parse(text) as OtlpBody;
        for (const rs of body.resourceSpans) {
          const service = String(plain(rs.resource.attributes.find((a) => a.key === 'service.name')?.value ?? {}));
          for (const ss of rs.scopeSpans) {
            for (const s of ss.spans) {
              const attributes = Object.fromEntries((s.attributes ?? []).map((a) => [a.key, plain(a.value)]));
              received.push({
                service,
                traceId: s.traceId,
                spanId: s.spanId,
                parent: s.parentSpanId ?? '',
                name: s.name,
                attributes,
                links: (s.links ?? []).map((l) => ({
                  traceId: l.traceId,
                  spanId: l.spanId,
                  ...(l.traceState ? { traceState: l.traceState } : {}),
                })),
              });
            }
          }
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
        return;
      }
      if (req.method === 'POST' && req.url === '/hook') webhooks.push(text);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  env['OTEL_EXPORTER_OTLP_ENDPOINT'] = receiverUrl;
});

afterAll(() => {
  receiver?.closeAllConnections();
  receiver?.close();
});

const e2e = useGatewayE2e({
  name: 'media-tracing-',
  async files() {
    const photo = await sharp(path.join(BUNDLED_PHOTOS_DIR, 'chelsea.png')).resize(96, 64).png().toBuffer();
    return { '/photo.png': photo };
  },
  env,
});

/** The spans of one trace, by id. */
function traceOf(traceId: string): Map<string, Seen> {
  return new Map(received.filter((s) => s.traceId === traceId).map((s) => [s.spanId, s]));
}

/** Whether `span` descends from `ancestor` (its parent, or its parent's, ...) within the trace. */
function descends(spans: Map<string, Seen>, span: Seen, ancestor: Seen): boolean {
  for (let at = spans.get(span.parent); at !== undefined; at = spans.get(at.parent))
    if (at.spanId === ancestor.spanId) return true;
  return false;
}

/** The worker's spans named `name` below `ancestor`. */
function below(spans: Map<string, Seen>, name: string, ancestor: Seen): Seen[] {
  return [...spans.values()].filter(
    (s) => s.name === name && s.service === 'media-worker-worker' && descends(spans, s, ancestor),
  );
}

function one(spans: Map<string, Seen>, name: string, service: string): Seen {
  const found = [...spans.values()].filter((s) => s.name === name && s.service === service);
  expect(
    found.map((s) => s.name),
    `one ${name} span of ${service}`,
  ).toEqual([name]);
  return found[0]!;
}

describe('one trace per job', () => {
  it("holds the gateway's HTTP span, the worker's job span below it with its stages, the settling and the webhook delivery", async () => {
    const account = await e2e.newAccount(1000);
    const reply = await e2e.api('POST', '/api/v1/tools/upscale-image', account.key, {
      image_url: `${e2e.mediaUrl}/photo.png`,
      upscale_factor: '2',
      webhook_url: `${receiverUrl}/hook`,
    });
    expect(reply.status).toBe(200);
    const id = reply.body.data?.id ?? '';
    await waitFor(
      'the task to complete and its webhook to be delivered',
      async () => {
        const task = await e2e.api('GET', `/api/v1/tasks/${id}`, account.key);
        return (
          task.body.data?.['status'] === 'completed' &&
          (task.body.data['webhook'] as { status?: string } | undefined)?.status === 'delivered'
        );
      },
      120_000,
    );

    // Spans are exported in batches (every 5 s): wait for the last ones, the webhook delivery's.
    const http = await waitFor(
      "the submission's HTTP span",
      () => received.find((s) => s.name === 'POST /api/v1/tools/upscale-image' && s.attributes['media.task.id'] === id),
      30_000,
    );
    await waitFor(
      'the webhook delivery span',
      () => received.some((s) => s.traceId === http.traceId && s.name === 'webhook delivery'),
      30_000,
    );
    await waitFor(
      "the worker's event publish span",
      () => received.some((s) => s.traceId === http.traceId && s.name === 'event publish'),
      30_000,
    );
    const spans = traceOf(http.traceId);

    expect(contentTypes).toEqual(new Set(['application/json']));
    expect(http.service).toBe('media-worker-gateway');
    expect(http.attributes).toMatchObject({
      'http.request.method': 'POST',
      'http.route': '/api/v1/tools/upscale-image',
      'http.response.status_code': 200,
      'media.kind': 'image',
    });
    expect(new Set([...spans.values()].map((s) => s.service))).toEqual(
      new Set(['media-worker-gateway', 'media-worker-worker']),
    );

    // The job message carried the request's context to the worker.
    const job = one(spans, 'job image', 'media-worker-worker');
    expect(job.attributes).toMatchObject({
      'media.task.id': id,
      'media.kind': 'image',
      'media.model': 'vendor-image-upscale',
    });
    expect(descends(spans, job, http)).toBe(true);
    // The request and the outbox both publish the job (the server keeps one): both below the request's span, the job below the kept one.
    const publishes = [...spans.values()].filter(
      (s) => s.name === 'job publish' && s.service === 'media-worker-gateway',
    );
    expect(publishes.length).toBeGreaterThan(0);
    for (const publish of publishes) expect(descends(spans, publish, http)).toBe(true);
    expect(
      publishes.filter((publish) => descends(spans, job, publish)).map((p) => p.attributes['media.duplicate']),
    ).toEqual([false]);
    // The gateway's quote request reached the worker's quote service in the same trace, which fetched and probed.
    const quoteRequest = one(spans, 'quote request', 'media-worker-worker');
    expect(descends(spans, quoteRequest, one(spans, 'quote', 'media-worker-gateway'))).toBe(true);
    expect(descends(spans, quoteRequest, http)).toBe(true);
    for (const name of ['quote', 'fetch', 'probe'])
      expect(below(spans, name, quoteRequest), `${name} of the quote request`).toHaveLength(1);

    // The worker's stages, each below the job span (its quote again: fetch and probe).
    for (const name of ['quote', 'fetch', 'probe', 'run image', 'tiles', 'encode', 'store', 'event publish']) {
      expect(below(spans, name, job), `${name} of the job`).toHaveLength(1);
    }
    expect(descends(spans, below(spans, 'fetch', job)[0]!, below(spans, 'quote', job)[0]!)).toBe(true);
    expect(descends(spans, below(spans, 'tiles', job)[0]!, below(spans, 'run image', job)[0]!)).toBe(true);

    // Back at the gateway: the settling follows the worker's event, the webhook the submission.
    expect(
      descends(spans, one(spans, 'settle', 'media-worker-gateway'), one(spans, 'event publish', 'media-worker-worker')),
    ).toBe(true);
    const delivery = one(spans, 'webhook delivery', 'media-worker-gateway');
    expect(descends(spans, delivery, http)).toBe(true);
    expect(delivery.attributes).toMatchObject({ 'media.task.id': id, 'http.response.status_code': 204 });
    expect(webhooks.length).toBe(1);
  }, 240_000);

  it("a client's own traceparent is only linked, even unsampled, and its tracestate goes nowhere; a malformed one is ignored", async () => {
    const account = await e2e.newAccount(1000);
    const clientTrace = '4bf92f3577b34da6a3ce929d0e0e4736';
    const clientSpan = '00f067aa0ba902b7';
    // Sampled flag 0: the client asks for its request to go unrecorded; the operator's trace is kept all the same.
    const clientContext = { traceparent: `00-${clientTrace}-${clientSpan}-00`, tracestate: 'client=claimed-state' };
    const traced = await e2e.api(
      'POST',
      '/api/v1/tools/upscale-image',
      account.key,
      { image_url: `${e2e.mediaUrl}/photo.png`, upscale_factor: '2' },
      clientContext,
    );
    expect(traced.status).toBe(200);
    const id = traced.body.data?.id ?? '';
    const broken = await e2e.api(
      'POST',
      '/api/v1/estimate',
      account.key,
      { model: 'vendor-image-upscale', input: { image_url: `${e2e.mediaUrl}/photo.png`, upscale_factor: '2' } },
      { traceparent: '00-not-a-trace-01' },
    );
    expect(broken.status).toBe(200);

    const http = await waitFor(
      "the submission's HTTP span",
      () => received.find((s) => s.name === 'POST /api/v1/tools/upscale-image' && s.attributes['media.task.id'] === id),
      30_000,
    );
    expect([http.traceId === clientTrace, http.parent, http.links]).toEqual([
      false,
      '',
      [{ traceId: clientTrace, spanId: clientSpan }],
    ]);
    // The job still reaches the worker in the gateway's trace, and nothing of the client's state travels or is stored.
    const job = await waitFor(
      "the job's span",
      () => received.find((s) => s.name === 'job image' && s.attributes['media.task.id'] === id),
      120_000,
    );
    expect(job.traceId).toBe(http.traceId);
    expect(received.filter((s) => s.traceId === clientTrace)).toEqual([]);
    expect(JSON.stringify(received)).not.toContain('claimed-state');

    const estimate = await waitFor(
      "the estimate's span",
      () => received.find((s) => s.name === 'POST /api/v1/estimate'),
      30_000,
    );
    expect([estimate.parent, estimate.links]).toEqual(['', []]);
  }, 180_000);

  it("a cancel's request reaches the worker in the cancel's trace", async () => {
    const account = await e2e.newAccount(1000);
    // Music is priced but not run here: its task stays pending until cancelled.
    const submitted = await e2e.api('POST', '/api/v1/generate', account.key, {
      model: 'vendor-v5-generate-music',
      input: { prompt: 'a tune' },
    });
    const id = submitted.body.data?.id ?? '';
    expect((await e2e.api('POST', `/api/v1/tasks/${id}/cancel`, account.key)).status).toBe(200);
    const http = await waitFor(
      "the cancel's HTTP span",
      () =>
        received.find(
          (s) =>
            s.name === 'POST /api/v1/tasks/:id/cancel' && s.attributes['url.path'] === `/api/v1/tasks/${id}/cancel`,
        ),
      30_000,
    );
    const spans = await waitFor(
      "the worker's cancel request span",
      () => {
        const trace = traceOf(http.traceId);
        return [...trace.values()].some((s) => s.name === 'cancel request') ? trace : undefined;
      },
      30_000,
    );
    const request = one(spans, 'cancel request', 'media-worker-worker');
    expect(descends(spans, request, one(spans, 'cancel', 'media-worker-gateway'))).toBe(true);
    expect(request.attributes['media.task.id']).toBe(id);
    expect(descends(spans, one(spans, 'cancel', 'media-worker-gateway'), http)).toBe(true);
  }, 120_000);

  it('a job whose traceparent header is malformed runs and completes, in a trace of its own', async () => {
    const js = jetstream(e2e.cp.nc);
    const taskId = `tracing-malformed-${Date.now()}`;
    const h = natsHeaders();
    h.set('Nats-Msg-Id', taskId);
    h.set('traceparent', 'zz-definitely-not-w3c-zz');
    h.set('tracestate', '=,=,=');
    const job = {
      id: taskId,
      model: 'vendor-image-upscale',
      input: { image_url: `${e2e.mediaUrl}/photo.png`, upscale_factor: '2' },
      createdAt: new Date().toISOString(),
    };
    await js.publish('media.jobs.image.vendor-image-upscale', JSON.stringify(job), { headers: h });
    const [event] = await waitFor(
      "the job's terminal event",
      async () => {
        const found = await e2e.cp.eventsOf(taskId);
        return found.length > 0 ? found : undefined;
      },
      120_000,
    );
    expect(event?.status).toBe('completed');
    const span = await waitFor(
      "the job's span",
      () => received.find((s) => s.name === 'job image' && s.attributes['media.task.id'] === taskId),
      30_000,
    );
    expect(span.parent).toBe('');
  }, 180_000);
});
