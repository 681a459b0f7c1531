/**
 * The OTEL_* settings (src/telemetry/settings.ts): when tracing is on and where spans go, the
 * encodings accepted (a refused one names its variable), the resource attributes' format, and which
 * service name wins.
 */
import { describe, expect, it } from 'vitest';
import { parseResourceAttributes, parseTelemetrySettings, serviceNameOf, telemetrySettingsFromEnv, traceExport } from '../../src/telemetry/settings.js';

describe('tracing settings', () => {
  it('is off without an endpoint, when disabled, or with the exporter none', () => {
    expect(traceExport(telemetrySettingsFromEnv({}))).toBeNull();
    expect(traceExport(telemetrySettingsFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'true' }))).toBeNull();
    expect(traceExport(telemetrySettingsFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_EXPORTER: 'none' }))).toBeNull();
    // Set but blank counts as unset, as for every setting.
    expect(traceExport(telemetrySettingsFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: ' ' }))).toBeNull();
  });

  it('posts to <endpoint>/v1/traces, or to the traces endpoint as given; protobuf unless told otherwise', () => {
    expect(traceExport(telemetrySettingsFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }))).toEqual({ url: 'http://collector:4318/v1/traces', protocol: 'http/protobuf' });
    expect(traceExport(telemetrySettingsFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'https://otel.example/base/', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' }))).toEqual({ url: 'https://otel.example/base/v1/traces', protocol: 'http/json' });
    expect(
      traceExport(telemetrySettingsFromEnv({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://traces:9999/ingest',
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
        OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
      })),
    ).toEqual({ url: 'http://traces:9999/ingest', protocol: 'http/json' });
  });

  it('refuses what it cannot do, naming the variable', () => {
    expect(() => telemetrySettingsFromEnv({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toThrow('Invalid setting OTEL_EXPORTER_OTLP_PROTOCOL: Expected one of http/protobuf, http/json but received "grpc"');
    expect(() => telemetrySettingsFromEnv({ OTEL_TRACES_EXPORTER: 'zipkin' })).toThrow(/^Invalid setting OTEL_TRACES_EXPORTER: Expected one of otlp, none/);
    expect(() => telemetrySettingsFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' })).toThrow(/^Invalid setting OTEL_EXPORTER_OTLP_ENDPOINT: /);
    expect(() => telemetrySettingsFromEnv({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'ftp://c/x' })).toThrow('Invalid setting OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: Expected an http or https URL but received "ftp://c/x"');
    expect(() => telemetrySettingsFromEnv({ OTEL_RESOURCE_ATTRIBUTES: 'team=media,broken' })).toThrow('Invalid setting OTEL_RESOURCE_ATTRIBUTES: Expected key=value pairs separated by commas (values percent-encoded) but received "broken"');
  });

  it('reads resource attributes as key=value pairs with percent-encoded values', () => {
    expect(parseResourceAttributes('deployment.environment.name=prod, team=media%20ops,,')).toEqual({ 'deployment.environment.name': 'prod', team: 'media ops' });
    expect(() => parseResourceAttributes('=x')).toThrow(/received "=x"/);
    expect(() => parseResourceAttributes('a=%E0%A4%A')).toThrow(/received "a=%E0%A4%A"/);
  });

  it('names the service by OTEL_SERVICE_NAME, then the resource attributes\' service.name, then the process', () => {
    expect(serviceNameOf(parseTelemetrySettings({}), 'media-worker-gateway')).toBe('media-worker-gateway');
    expect(serviceNameOf(parseTelemetrySettings({ resourceAttributes: 'service.name=edge' }), 'media-worker-gateway')).toBe('edge');
    expect(serviceNameOf(parseTelemetrySettings({ resourceAttributes: 'service.name=edge', serviceName: 'gw-eu' }), 'media-worker-gateway')).toBe('gw-eu');
  });
});
