/**
 * Tracing (docs/operations.md, "Tracing"): one trace per job, from the gateway's HTTP request
 * through NATS (W3C traceparent in the message headers) into the worker's stages. What the rest of
 * the code calls is here: `withSpan` around a step, the headers to send with a message, a parent
 * read from a message's headers. Off (no OTLP endpoint set), the SDK is never loaded and each of
 * these is one check of a variable before the work itself runs: nothing is created or recorded.
 */
import type { EventEmitter } from 'node:events';
import {
  context,
  isSpanContextValid,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Link,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import { errorMessage } from '../errors.js';
import type { Logger } from '../logger.js';
import { PACKAGE_VERSION } from '../paths.js';
import { redactCredentials } from '../settings-table.js';
import { serviceNameOf, traceExport, unsupportedExporters, type TelemetrySettings } from './settings.js';

export { telemetrySettingsFromEnv, type TelemetrySettings } from './settings.js';
export type { Attributes } from '@opentelemetry/api';

/** Set while the SDK runs in this process; null: tracing is off and every helper only runs its work. */
let tracer: Tracer | null = null;
/** Several starts in one process (tests run gateways side by side) share one SDK, stopped by the last. */
let running: { users: number; sdk: Promise<{ shutdown(): Promise<void> }> } | null = null;

export interface Tracing {
  /** Whether spans are exported from this process. */
  readonly on: boolean;
  /** Sends the spans still batched and stops the SDK (the last user's call does). */
  shutdown(): Promise<void>;
}

const OFF: Tracing = { on: false, shutdown: async () => undefined };

export function tracingOn(): boolean {
  return tracer !== null;
}

/**
 * Starts the SDK when the settings ask for it (an endpoint, an `otlp` exporter, not disabled);
 * `serviceName` is the process's default `service.name`. Off, nothing beyond @opentelemetry/api is
 * loaded. An exporter named but not supported (`console`) is one warning, naming the variable.
 */
export async function startTracing(
  settings: TelemetrySettings,
  o: { serviceName: string; logger: Logger },
): Promise<Tracing> {
  const unsupported = unsupportedExporters(settings);
  if (unsupported.length > 0 && !settings.sdkDisabled) {
    o.logger.warn(
      { variable: 'OTEL_TRACES_EXPORTER', ignored: unsupported },
      `OTEL_TRACES_EXPORTER: ${unsupported.join(', ')} is not supported and is ignored (otlp is the only exporter)`,
    );
  }
  const target = traceExport(settings);
  if (target === null) return OFF;
  if (running === null) {
    const { startSdk } = await import('./sdk.js');
    // Checked again: another start may have begun while the module loaded.
    if (running === null) {
      const starting = {
        users: 0,
        sdk: startSdk({
          ...target,
          serviceName: serviceNameOf(settings, o.serviceName),
          resourceAttributes: settings.resourceAttributes ?? {},
          logger: o.logger,
        }),
      };
      running = starting;
      // A start that failed is forgotten, so that a later one tries again instead of failing with it.
      starting.sdk.catch(() => {
        if (running === starting) running = null;
      });
    }
  }
  const mine = running;
  mine.users += 1;
  try {
    await mine.sdk;
  } catch (err) {
    mine.users -= 1;
    throw err;
  }
  tracer = trace.getTracer('media-worker', PACKAGE_VERSION);
  // The endpoint may carry a collector's password (OTEL_EXPORTER_OTLP_ENDPOINT=https://u:p@collector).
  o.logger.info(
    { url: redactCredentials(target.url), protocol: target.protocol },
    'Tracing: spans are exported over OTLP',
  );
  let stopped = false;
  return {
    on: true,
    async shutdown() {
      if (stopped) return;
      stopped = true;
      mine.users -= 1;
      if (mine.users > 0) return;
      if (running === mine) running = null;
      tracer = null;
      await (await mine.sdk).shutdown();
    },
  };
}

export type SpanRole = 'internal' | 'server' | 'client' | 'producer' | 'consumer';

const KINDS: Readonly<Record<SpanRole, SpanKind>> = {
  internal: SpanKind.INTERNAL,
  server: SpanKind.SERVER,
  client: SpanKind.CLIENT,
  producer: SpanKind.PRODUCER,
  consumer: SpanKind.CONSUMER,
};

export interface SpanOptions {
  attributes?: Attributes;
  kind?: SpanRole;
}

/** What a step may add to its span once it knows more (tile counts, a result's size). */
export interface SpanNotes {
  setAttributes(attributes: Attributes): void;
}

const NO_NOTES: SpanNotes = { setAttributes: () => undefined };

/** A failed step's span says so, with the error's code when it has one (a JobError's). */
function failed(span: Span, err: unknown): void {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string') span.setAttribute('error.type', code);
  if (err instanceof Error) span.recordException(err);
  span.setStatus({ code: SpanStatusCode.ERROR, message: errorMessage(err) });
}

/** Runs `fn` in a span `name`, child of the active one; off, just runs it. */
export function withSpan<T>(name: string, options: SpanOptions, fn: (span: SpanNotes) => Promise<T>): Promise<T> {
  if (tracer === null) return fn(NO_NOTES);
  const spanOptions = {
    kind: KINDS[options.kind ?? 'internal'],
    ...(options.attributes === undefined ? {} : { attributes: options.attributes }),
  };
  return tracer.startActiveSpan(name, spanOptions, async (span) => {
    try {
      return await fn(span);
    } catch (err) {
      failed(span, err);
      throw err;
    } finally {
      span.end();
    }
  });
}

/** Adds attributes to the active span (the request's, the job's), if any. */
export function noteOnSpan(attributes: Attributes): void {
  if (tracer === null) return;
  trace.getActiveSpan()?.setAttributes(attributes);
}

/** Reads one header of a received message; '' or undefined when absent. */
export type HeaderReader = (name: string) => string | undefined;

/**
 * The context a message's (or a stored record's) W3C headers name. A header from another process
 * is a claim: one that is malformed is ignored (a new trace starts), never an error.
 */
function extracted(read: HeaderReader): Context {
  return propagation.extract(ROOT_CONTEXT, null, {
    get: (_carrier, key) => {
      const value = read(key);
      return value === undefined || value === '' ? undefined : value;
    },
    keys: () => [],
  });
}

/** Runs `fn` with the trace the headers carry as its parent (none: a trace of its own); off, just runs it. */
export function withParentFrom<T>(read: HeaderReader, fn: () => T): T {
  if (tracer === null) return fn();
  return context.with(extracted(read), fn);
}

/** W3C Trace Context of the active span (`traceparent`, perhaps `tracestate`), to send with a message; {} when off or none. */
export function traceHeaders(): Record<string, string> {
  if (tracer === null) return {};
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier;
}

/** A span's W3C Trace Context kept with a record, for work that descends from it later (a webhook delivery). */
export interface StoredTrace {
  traceparent: string;
  tracestate?: string | undefined;
}

/** Reads a stored trace as a message's headers are read (withParentFrom). */
export function storedTraceReader(stored: StoredTrace | undefined): HeaderReader {
  return (name) =>
    name === 'traceparent' ? stored?.traceparent : name === 'tracestate' ? stored?.tracestate : undefined;
}

/** W3C Trace Context's own bounds: a version-00 traceparent, a tracestate of at most 512 characters. */
export const STORED_TRACE_LIMITS = { traceparent: 55, tracestate: 512 } as const;

/**
 * The active span's context to store, or undefined when off or none. A tracestate past the W3C
 * bound is left out rather than stored (a client's never gets this far: startServerSpan drops it).
 */
export function traceToStore(): StoredTrace | undefined {
  const { traceparent, tracestate } = traceHeaders();
  if (traceparent === undefined || traceparent.length > STORED_TRACE_LIMITS.traceparent) return undefined;
  return tracestate === undefined || tracestate.length > STORED_TRACE_LIMITS.tracestate
    ? { traceparent }
    : { traceparent, tracestate };
}

/** An HTTP request's span, begun when the request comes in and ended with its answer. */
export interface ServerSpan {
  /** Runs `fn` (the rest of the request's handling) with this span active. */
  run<T>(fn: () => T): T;
  /** Makes the listeners of `emitter` (the request's body stream) run with this span active. */
  bind<E extends EventEmitter>(emitter: E): E;
  setName(name: string): void;
  end(attributes: Attributes, error: boolean): void;
}

/**
 * The link to a client's own trace: its traceparent, when valid, and nothing of its tracestate.
 * A client is outside the trust boundary: it may point at its trace, never choose ours.
 */
function clientLinks(read: HeaderReader): Link[] {
  const claimed = trace.getSpanContext(extracted(read));
  if (claimed === undefined || !isSpanContextValid(claimed)) return [];
  return [
    { context: { traceId: claimed.traceId, spanId: claimed.spanId, traceFlags: claimed.traceFlags, isRemote: true } },
  ];
}

/**
 * A public request's server span: the root of a new trace, so a client can neither pick the trace
 * id nor leave its job unsampled (hidden from operators) with a sampled flag of 0. The client's
 * traceparent, when valid, is kept as a span link (OTel's practice at a trust boundary); its
 * tracestate is dropped, so it is never sent on in NATS headers nor stored. Null when off.
 */
export function startServerSpan(name: string, read: HeaderReader, attributes: Attributes): ServerSpan | null {
  if (tracer === null) return null;
  const span = tracer.startSpan(
    name,
    { kind: SpanKind.SERVER, attributes, links: clientLinks(read), root: true },
    ROOT_CONTEXT,
  );
  const active = trace.setSpan(ROOT_CONTEXT, span);
  return {
    run: (fn) => context.with(active, fn),
    bind: (emitter) => context.bind(active, emitter),
    setName: (n) => span.updateName(n),
    end(more, error) {
      span.setAttributes(more);
      if (error) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    },
  };
}
