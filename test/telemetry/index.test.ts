/**
 * A start of tracing that fails (the SDK module rejects) leaves nothing behind: the next start
 * tries again and runs, instead of failing with the first one's rejected promise.
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
