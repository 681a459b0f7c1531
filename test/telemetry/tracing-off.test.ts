/**
 * Off when unset, and then free of the SDK: with no OTLP endpoint a process that starts tracing
 * loads nothing of OpenTelemetry beyond @opentelemetry/api, makes no span and sends no header; with
 * one set the SDK and the configured exporter are loaded. Checked on the built modules (dist/) in
 * fresh processes, whose module resolutions are recorded by a resolve hook.
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { PACKAGE_ROOT } from '../../src/paths.js';

interface Run {
  on: boolean;
  packages: string[];
  headers: Record<string, string>;
  value: number;
}

/** Starts tracing with `env` in a fresh process and reports which OpenTelemetry packages it resolved. */
function startIn(env: Record<string, string>): Run {
  const telemetry = pathToFileURL(path.join(PACKAGE_ROOT, 'dist', 'src', 'telemetry', 'index.js')).href;
  const logger = pathToFileURL(path.join(PACKAGE_ROOT, 'dist', 'src', 'logger.js')).href;
  const script = [
    "import { registerHooks } from 'node:module';",
    'const seen = new Set();',
    'registerHooks({ resolve(specifier, context, next) { const m = /^@opentelemetry\\/[^/]+/.exec(specifier); if (m) seen.add(m[0]); return next(specifier, context); } });',
    `const t = await import(${JSON.stringify(telemetry)});`,
    `const { createLogger } = await import(${JSON.stringify(logger)});`,
    "const tracing = await t.startTracing(t.telemetrySettingsFromEnv(process.env), { serviceName: 'test', logger: createLogger('silent') });",
    "const value = await t.withSpan('step', {}, async () => t.withSpan('inner', {}, async () => 42));",
    "const headers = await t.withSpan('outer', {}, async () => t.traceHeaders());",
    'await tracing.shutdown();',
    'console.log(JSON.stringify({ on: tracing.on, packages: [...seen].sort(), headers, value }));',
  ].join('\n');
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('OTEL_')));
  return JSON.parse(
    execFileSync(process.execPath, ['--input-type=module', '-e', script], {
      encoding: 'utf8',
      env: { ...clean, ...env },
    }),
  ) as Run;
}

describe('tracing off when unset', () => {
  it('without an endpoint: only @opentelemetry/api is loaded, the work runs, no header is sent', () => {
    expect(startIn({})).toEqual({ on: false, packages: ['@opentelemetry/api'], headers: {}, value: 42 });
  });

  it('disabled, or with the exporter none, even with an endpoint: the same', () => {
    const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' };
    expect(startIn({ ...endpoint, OTEL_SDK_DISABLED: 'true' }).packages).toEqual(['@opentelemetry/api']);
    expect(startIn({ ...endpoint, OTEL_TRACES_EXPORTER: 'none' }).packages).toEqual(['@opentelemetry/api']);
  });

  it('with an endpoint: the SDK and the configured exporter, and a W3C traceparent on what is sent', () => {
    const json = startIn({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_EXPORTER_OTLP_TIMEOUT: '200',
    });
    expect(json.on).toBe(true);
    expect(json.value).toBe(42);
    expect(json.packages).toEqual(
      expect.arrayContaining([
        '@opentelemetry/sdk-trace',
        '@opentelemetry/exporter-trace-otlp-http',
        '@opentelemetry/context-async-hooks',
      ]),
    );
    expect(json.packages).not.toContain('@opentelemetry/exporter-trace-otlp-proto');
    expect(json.headers.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    const proto = startIn({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9', OTEL_EXPORTER_OTLP_TIMEOUT: '200' });
    expect(proto.packages).toContain('@opentelemetry/exporter-trace-otlp-proto');
    expect(proto.packages).not.toContain('@opentelemetry/exporter-trace-otlp-http');
  });
});
