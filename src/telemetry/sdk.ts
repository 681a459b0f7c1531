/**
 * The OpenTelemetry SDK, loaded (dynamic import, index.ts) only when tracing is on: a tracer
 * provider with a batching processor and the OTLP/HTTP exporter of the configured encoding,
 * AsyncLocalStorage for the active span, and W3C Trace Context (traceparent, tracestate) as the
 * one propagator. The exporter reads its headers, timeout, compression and certificates from the
 * environment itself.
 */
import os from 'node:os';
import { context, diag, DiagLogLevel, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, TracerProvider, type SpanExporter } from '@opentelemetry/sdk-trace';
import type { Logger } from '../logger.js';
import { PACKAGE_VERSION } from '../paths.js';
import type { OtlpProtocol } from './settings.js';

export interface SdkOptions {
  url: string;
  protocol: OtlpProtocol;
  serviceName: string;
  resourceAttributes: Record<string, string>;
  logger: Logger;
}

/**
 * Longest wait for the last spans at a stop. The exporter's own timeout (OTEL_EXPORTER_OTLP_TIMEOUT,
 * 10 s by default, and the batch processor's 30 s) would let a collector that never answers hold
 * the process past its shutdown grace; losing the last batch is the lesser harm.
 */
export const SHUTDOWN_FLUSH_MS = 2_500;

export interface Sdk {
  shutdown(): Promise<void>;
}

async function exporterFor(protocol: OtlpProtocol, url: string): Promise<SpanExporter> {
  if (protocol === 'http/json')
    return new (await import('@opentelemetry/exporter-trace-otlp-http')).OTLPTraceExporter({ url });
  return new (await import('@opentelemetry/exporter-trace-otlp-proto')).OTLPTraceExporter({ url });
}

export async function startSdk(o: SdkOptions): Promise<Sdk> {
  // The SDK's own complaints (a collector that refuses or is away) in the process's log, not lost.
  const log = o.logger.child({ component: 'tracing' });
  diag.setLogger(
    {
      error: (message, ...args) => log.warn({ args }, message),
      warn: (message, ...args) => log.warn({ args }, message),
      info: (message) => log.debug(message),
      debug: () => undefined,
      verbose: () => undefined,
    },
    DiagLogLevel.WARN,
  );
  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  const provider = new TracerProvider({
    resource: resourceFromAttributes({
      'host.name': os.hostname(),
      ...o.resourceAttributes,
      'service.name': o.serviceName,
      'service.version': PACKAGE_VERSION,
    }),
    spanProcessors: [new BatchSpanProcessor({ exporter: await exporterFor(o.protocol, o.url) })],
  });
  trace.setGlobalTracerProvider(provider);
  return {
    async shutdown() {
      // Spans still batched are sent before the process ends, within a bound; then the globals go back to no-ops.
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), SHUTDOWN_FLUSH_MS)));
      const flushed = provider.shutdown().then(
        () => 'sent' as const,
        (err: unknown) => log.warn({ err }, 'Tracing shutdown failed; spans may be lost'),
      );
      if ((await Promise.race([flushed, late])) === 'late')
        log.warn(
          { boundMs: SHUTDOWN_FLUSH_MS },
          'Tracing: the collector did not take the last spans in time; they are dropped',
        );
      clearTimeout(timer);
      trace.disable();
      propagation.disable();
      context.disable();
      diag.disable();
    },
  };
}
