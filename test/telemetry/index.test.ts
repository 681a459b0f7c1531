/**
 * A start of tracing that fails (the SDK module rejects) leaves nothing behind: the next start
 * tries again and runs, instead of failing with the first one's rejected promise. The start's log
 * line names the endpoint without a password written into it.
 */
import pino from 'pino';
import { describe, expect, it, vi } from 'vitest';
import { startTracing, telemetrySettingsFromEnv, tracingOn } from '../../src/telemetry/index.js';

const { startSdk } = vi.hoisted(() => ({ startSdk: vi.fn() }));
vi.mock('../../src/telemetry/sdk.js', () => ({ startSdk }));

describe('a failed start of tracing', () => {
  it('does not block a later start', async () => {
    const shutdown = vi.fn(async () => undefined);
    startSdk.mockRejectedValueOnce(new Error('the exporter could not load')).mockResolvedValueOnce({ shutdown });
    const settings = telemetrySettingsFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' });
    const logger = pino({ level: 'silent' });

    await expect(startTracing(settings, { serviceName: 'test', logger })).rejects.toThrow(
      'the exporter could not load',
    );
    expect(tracingOn()).toBe(false);

    const tracing = await startTracing(settings, { serviceName: 'test', logger });
    expect([tracing.on, tracingOn(), startSdk.mock.calls.length]).toEqual([true, true, 2]);
    await tracing.shutdown();
    expect([tracingOn(), shutdown.mock.calls.length]).toEqual([false, 1]);
  });
});

describe('a start of tracing', () => {
  it("logs the endpoint without the collector's password", async () => {
    startSdk.mockResolvedValueOnce({ shutdown: vi.fn(async () => undefined) });
    const settings = telemetrySettingsFromEnv({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'https://otel:pa55@collector.example:4318',
    });
    const lines: string[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(line) });

    const tracing = await startTracing(settings, { serviceName: 'test', logger });
    await tracing.shutdown();
    const started = lines
      .map((line) => JSON.parse(line) as { msg: string; url?: string })
      .find((r) => r.msg.startsWith('Tracing'));
    expect(started?.url).toBe('https://otel:***@collector.example:4318/v1/traces');
    expect(lines.join('')).not.toContain('pa55');
  });
});
