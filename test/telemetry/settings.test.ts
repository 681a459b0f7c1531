/**
 * The OTEL_* settings (src/telemetry/settings.ts): when tracing is on and where spans go, the
 * encodings accepted (a refused one names its variable, and only when tracing is on: off, no OTEL_*
 * value stops a start), the exporter list, the resource attributes' format, and which service name
 * wins.
 */
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { startTracing } from '../../src/telemetry/index.js';
import {
  parseResourceAttributes,
  parseTelemetrySettings,
  serviceNameOf,
  telemetrySettingsFromEnv,
  traceExport,
  unsupportedExporters,
} from '../../src/telemetry/settings.js';

const ENDPOINT = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' };

describe('tracing settings', () => {
  it('is off without an endpoint, when disabled, or with the exporter none', () => {
    expect(traceExport(telemetrySettingsFromEnv({}))).toBeNull();
    expect(
      traceExport(
        telemetrySettingsFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'true' }),
      ),
    ).toBeNull();
    expect(
      traceExport(
        telemetrySettingsFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_EXPORTER: 'none' }),
      ),
    ).toBeNull();
    // Set but blank counts as unset, as for every setting.
    expect(traceExport(telemetrySettingsFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: ' ' }))).toBeNull();
  });

  it('posts to <endpoint>/v1/traces, or to the traces endpoint as given; protobuf unless told otherwise', () => {
    expect(traceExport(telemetrySettingsFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }))).toEqual({
      url: 'http://collector:4318/v1/traces',
      protocol: 'http/protobuf',
    });
    expect(
      traceExport(
        telemetrySettingsFromEnv({
          OTEL_EXPORTER_OTLP_ENDPOINT: 'https://otel.example/base/',
          OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        }),
      ),
    ).toEqual({ url: 'https://otel.example/base/v1/traces', protocol: 'http/json' });
    expect(
      traceExport(
        telemetrySettingsFromEnv({
          OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
          OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://traces:9999/ingest',
          OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
          OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
        }),
      ),
    ).toEqual({ url: 'http://traces:9999/ingest', protocol: 'http/json' });
  });

  it('with tracing on, refuses what it cannot do, naming the variable', () => {
    expect(() => telemetrySettingsFromEnv({ ...ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toThrow(
      'Invalid setting OTEL_EXPORTER_OTLP_PROTOCOL: Expected one of http/protobuf, http/json but received "grpc"',
    );
    expect(() =>
      telemetrySettingsFromEnv({
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c/t',
        OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'grpc',
      }),
    ).toThrow(/^Invalid setting OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: /);
    expect(() => telemetrySettingsFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' })).toThrow(
      /^Invalid setting OTEL_EXPORTER_OTLP_ENDPOINT: /,
    );
    expect(() => telemetrySettingsFromEnv({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'ftp://c/x' })).toThrow(
      'Invalid setting OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: Expected an http or https URL but received "ftp://c/x"',
    );
    expect(() => telemetrySettingsFromEnv({ ...ENDPOINT, OTEL_RESOURCE_ATTRIBUTES: 'team=media,broken' })).toThrow(
      'Invalid setting OTEL_RESOURCE_ATTRIBUTES: Expected key=value pairs separated by commas (values percent-encoded) but received "broken"',
    );
    expect(() => telemetrySettingsFromEnv({ ...ENDPOINT, OTEL_SDK_DISABLED: 'maybe' })).toThrow(
      /^Invalid setting OTEL_SDK_DISABLED: /,
    );
  });

  it('with tracing off (no endpoint, disabled, no otlp exporter), no OTEL_* value stops a start', () => {
    const unusable = {
      OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'grpc',
      OTEL_RESOURCE_ATTRIBUTES: 'broken',
      OTEL_EXPORTER_OTLP_TIMEOUT: 'soon',
      OTEL_SDK_DISABLED: 'maybe',
    };
    for (const env of [
      unusable,
      { OTEL_TRACES_EXPORTER: 'otlp,console' },
      { ...unusable, OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318', OTEL_SDK_DISABLED: 'true' },
      { ...unusable, ...ENDPOINT, OTEL_SDK_DISABLED: 'true' },
      { ...unusable, ...ENDPOINT, OTEL_SDK_DISABLED: 'false', OTEL_TRACES_EXPORTER: 'none' },
      { ...unusable, ...ENDPOINT, OTEL_SDK_DISABLED: 'false', OTEL_TRACES_EXPORTER: 'console' },
    ]) {
      expect(traceExport(telemetrySettingsFromEnv(env)), JSON.stringify(env)).toBeNull();
    }
    // What is valid is still read as given.
    expect(
      telemetrySettingsFromEnv({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_SERVICE_NAME: 'edge' }).serviceName,
    ).toBe('edge');
  });

  it('reads the general protocol only when the traces have none of their own', () => {
    expect(
      traceExport(
        telemetrySettingsFromEnv({
          ...ENDPOINT,
          OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
          OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
        }),
      ),
    ).toEqual({ url: 'http://c:4318/v1/traces', protocol: 'http/json' });
  });

  it('takes OTEL_TRACES_EXPORTER as a comma list: on when it holds otlp, other entries ignored', () => {
    const on = telemetrySettingsFromEnv({ ...ENDPOINT, OTEL_TRACES_EXPORTER: ' OTLP , console,' });
    expect(traceExport(on)).toEqual({ url: 'http://c:4318/v1/traces', protocol: 'http/protobuf' });
    expect(unsupportedExporters(on)).toEqual(['console']);
    expect(unsupportedExporters(telemetrySettingsFromEnv({ ...ENDPOINT, OTEL_TRACES_EXPORTER: 'zipkin' }))).toEqual([
      'zipkin',
    ]);
    expect(unsupportedExporters(telemetrySettingsFromEnv({ OTEL_TRACES_EXPORTER: 'none' }))).toEqual([]);
    expect(traceExport(telemetrySettingsFromEnv({ ...ENDPOINT, OTEL_TRACES_EXPORTER: 'zipkin' }))).toBeNull();
  });

  it('warns in one log line naming the variable about an exporter it ignores', async () => {
    const lines: string[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => void lines.push(line) });
    const tracing = await startTracing(telemetrySettingsFromEnv({ OTEL_TRACES_EXPORTER: 'otlp,console' }), {
      serviceName: 'test',
      logger,
    });
    expect(tracing.on).toBe(false);
    expect(lines.map((line) => (JSON.parse(line) as { msg: string }).msg)).toEqual([
      'OTEL_TRACES_EXPORTER: console is not supported and is ignored (otlp is the only exporter)',
    ]);
  });

  it('reads resource attributes as key=value pairs with percent-encoded values', () => {
    expect(parseResourceAttributes('deployment.environment.name=prod, team=media%20ops,,')).toEqual({
      'deployment.environment.name': 'prod',
      team: 'media ops',
    });
    expect(() => parseResourceAttributes('=x')).toThrow(/received "=x"/);
    expect(() => parseResourceAttributes('a=%E0%A4%A')).toThrow(/received "a=%E0%A4%A"/);
  });

  it("names the service by OTEL_SERVICE_NAME, then the resource attributes' service.name, then the process", () => {
    expect(serviceNameOf(parseTelemetrySettings({}), 'media-worker-gateway')).toBe('media-worker-gateway');
    expect(
      serviceNameOf(parseTelemetrySettings({ resourceAttributes: 'service.name=edge' }), 'media-worker-gateway'),
    ).toBe('edge');
    expect(
      serviceNameOf(
        parseTelemetrySettings({ resourceAttributes: 'service.name=edge', serviceName: 'gw-eu' }),
        'media-worker-gateway',
      ),
    ).toBe('gw-eu');
  });
});
