/**
 * A stop does not wait on a collector that never answers (src/telemetry/sdk.ts, SHUTDOWN_FLUSH_MS):
 * the receiver here accepts the connection and says nothing. With the exporter's own timeout set to
 * a minute, the shutdown still returns (well inside the test's limit) and says in the log that the
 * last spans were dropped.
 */
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { SHUTDOWN_FLUSH_MS } from '../../src/telemetry/sdk.js';
import { startTracing, telemetrySettingsFromEnv, withSpan } from '../../src/telemetry/index.js';

let silent: Server;
const sockets: Socket[] = [];

beforeAll(async () => {
  silent = createServer((socket) => void sockets.push(socket));
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  // Without the bound the flush would wait for this (capped at the batch processor's 30 s).
  vi.stubEnv('OTEL_EXPORTER_OTLP_TIMEOUT', '60000');
});

afterAll(() => {
  vi.unstubAllEnvs();
  for (const socket of sockets) socket.destroy();
  silent?.close();
});

describe('tracing shutdown', () => {
  it('returns within its own bound when the collector never answers', async () => {
    const lines: string[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => void lines.push(line) });
    const endpoint = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
    const tracing = await startTracing(
      telemetrySettingsFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' }),
      { serviceName: 'test', logger },
    );
    expect(tracing.on).toBe(true);
    await withSpan('step', {}, async () => undefined);

    await tracing.shutdown();
    expect(sockets.length).toBeGreaterThan(0);
    expect(lines.map((line) => JSON.parse(line) as { msg: string; boundMs?: number })).toContainEqual(
      expect.objectContaining({
        msg: 'Tracing: the collector did not take the last spans in time; they are dropped',
        boundMs: SHUTDOWN_FLUSH_MS,
      }),
    );
  }, 20_000);
});
