/**
 * Tracing settings: OpenTelemetry's own environment variables (the OTel specification's names,
 * so an operator's collector set-up applies unchanged), in the table shape of src/settings-table.ts.
 * Tracing is on only when an OTLP endpoint is set, OTEL_SDK_DISABLED is not true and
 * OTEL_TRACES_EXPORTER names `otlp`; otherwise the SDK is never loaded (index.ts), and no OTEL_*
 * value can stop a start: these variables are shared with other programs, which may use what this
 * one does not (`grpc`, a `console` exporter). On, a bad value is a settings error naming it.
 * The headers, timeout, compression and certificate variables are read by the OTLP exporter
 * itself; they are listed here so that they are documented, checked and not reported as unknown.
 */
import { z } from 'zod';
import {
  absoluteUrl,
  inputFromEnv,
  booleanSetting,
  nonEmptyText,
  oneOfSetting,
  positiveInt,
  received,
  setting,
  settingsReader,
  SettingsError,
  type SettingSpec,
  tableSchema,
  type SettingsInput,
  type SettingsOf,
} from '../settings-table.js';

export const OTLP_PROTOCOLS = ['http/protobuf', 'http/json'] as const;
export type OtlpProtocol = (typeof OTLP_PROTOCOLS)[number];

const protocol = oneOfSetting(OTLP_PROTOCOLS);
const compression = oneOfSetting(['gzip', 'none']);
const httpEndpoint = absoluteUrl.refine((url) => /^https?:/i.test(url), {
  error: (issue) => `Expected an http or https URL but received ${received(issue.input)}`,
});

/**
 * OTEL_RESOURCE_ATTRIBUTES: `key=value` pairs separated by commas, values percent-encoded (the
 * OTel specification's format). Pure; throws with the words every setting uses.
 */
export function parseResourceAttributes(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const entry of text.split(',')) {
    if (entry.trim() === '') continue;
    const cut = entry.indexOf('=');
    const key = cut < 0 ? '' : entry.slice(0, cut).trim();
    let value: string | undefined;
    try {
      value = cut < 0 ? undefined : decodeURIComponent(entry.slice(cut + 1).trim());
    } catch {
      value = undefined;
    }
    if (key === '' || value === undefined)
      throw new Error(
        `Expected key=value pairs separated by commas (values percent-encoded) but received ${received(entry.trim())}`,
      );
    out[key] = value;
  }
  return out;
}

const resourceAttributes = z.string().transform((text, ctx) => {
  try {
    return parseResourceAttributes(text);
  } catch (err) {
    ctx.addIssue({ code: 'custom', message: (err as Error).message });
    return z.NEVER;
  }
});

/** The exporters this program can run; any other OTEL_TRACES_EXPORTER entry is warned about and ignored. */
const KNOWN_EXPORTERS: ReadonlySet<string> = new Set(['otlp', 'none']);

/** OTEL_TRACES_EXPORTER: a comma list (the OTel specification's format), lower-cased, blanks dropped. Pure. */
function exporterList(text: string): string[] {
  return text
    .split(',')
    .map((entry) => entry.trim().toLowerCase())
    .filter((entry) => entry !== '');
}

const exporters = z
  .string({ error: (issue) => `Expected a comma-separated list of exporters but received ${received(issue.input)}` })
  .transform(exporterList);

const EXPORTER_READS = 'Read by the OTLP exporter itself';

export const TELEMETRY_SETTINGS = {
  sdkDisabled: setting({
    env: 'OTEL_SDK_DISABLED',
    schema: booleanSetting,
    default: 'false',
    doc: 'true: no tracing whatever else is set.',
  }),
  tracesExporter: setting({
    env: 'OTEL_TRACES_EXPORTER',
    schema: exporters,
    default: 'otlp',
    doc: 'Exporters, separated by commas: tracing is on when the list holds `otlp` (OTLP over HTTP, the only one supported); `none` alone turns it off; any other (`console`, `zipkin`) is ignored with a warning in the log.',
  }),
  endpoint: setting({
    env: 'OTEL_EXPORTER_OTLP_ENDPOINT',
    schema: httpEndpoint,
    doc: 'Base URL of an OTLP/HTTP receiver (an OpenTelemetry Collector: `http://collector:4318`); traces go to `<it>/v1/traces`. Unset (and OTEL_EXPORTER_OTLP_TRACES_ENDPOINT unset): tracing is off and costs nothing (docs/operations.md, "Tracing"). While tracing is off, no OTEL_* value is checked: none stops a start.',
  }),
  tracesEndpoint: setting({
    env: 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
    schema: httpEndpoint,
    doc: 'Full URL traces are posted to, taken as given (no `/v1/traces` appended); wins over OTEL_EXPORTER_OTLP_ENDPOINT.',
  }),
  protocol: setting({
    env: 'OTEL_EXPORTER_OTLP_PROTOCOL',
    schema: protocol,
    default: 'http/protobuf',
    doc: "OTLP encoding: `http/protobuf` or `http/json`; `grpc` is not supported (a Collector's otlp receiver takes both HTTP encodings on :4318): with tracing on it is a settings error, unless OTEL_EXPORTER_OTLP_TRACES_PROTOCOL is set.",
  }),
  tracesProtocol: setting({
    env: 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL',
    schema: protocol,
    doc: "The encoding of traces, when not OTEL_EXPORTER_OTLP_PROTOCOL's.",
  }),
  serviceName: setting({
    env: 'OTEL_SERVICE_NAME',
    schema: nonEmptyText,
    doc: "The `service.name` of this process's spans; unset: `service.name` from OTEL_RESOURCE_ATTRIBUTES, else `media-worker-gateway` for the gateway and `media-worker-worker` for `serve`.",
  }),
  resourceAttributes: setting({
    env: 'OTEL_RESOURCE_ATTRIBUTES',
    schema: resourceAttributes,
    doc: 'More resource attributes of every span, `key=value` pairs separated by commas (`deployment.environment.name=prod,host.name=gpu-7`).',
  }),
  headers: setting({
    env: 'OTEL_EXPORTER_OTLP_HEADERS',
    schema: nonEmptyText,
    secret: true,
    doc: `HTTP headers of each export, \`key=value\` pairs separated by commas (a collector's API key). ${EXPORTER_READS}.`,
  }),
  tracesHeaders: setting({
    env: 'OTEL_EXPORTER_OTLP_TRACES_HEADERS',
    schema: nonEmptyText,
    secret: true,
    doc: `The same for traces only (added to OTEL_EXPORTER_OTLP_HEADERS). ${EXPORTER_READS}.`,
  }),
  timeoutMs: setting({
    env: 'OTEL_EXPORTER_OTLP_TIMEOUT',
    schema: positiveInt,
    doc: `Longest wait for one export, ms (exporter default 10000). ${EXPORTER_READS}.`,
  }),
  tracesTimeoutMs: setting({
    env: 'OTEL_EXPORTER_OTLP_TRACES_TIMEOUT',
    schema: positiveInt,
    doc: `The same for traces only. ${EXPORTER_READS}.`,
  }),
  compression: setting({
    env: 'OTEL_EXPORTER_OTLP_COMPRESSION',
    schema: compression,
    doc: `\`gzip\` or \`none\` (exporter default). ${EXPORTER_READS}.`,
  }),
  tracesCompression: setting({
    env: 'OTEL_EXPORTER_OTLP_TRACES_COMPRESSION',
    schema: compression,
    doc: `The same for traces only. ${EXPORTER_READS}.`,
  }),
  certificate: setting({
    env: 'OTEL_EXPORTER_OTLP_CERTIFICATE',
    schema: nonEmptyText,
    doc: `CA certificate file (PEM) that signed the receiver's certificate. ${EXPORTER_READS}.`,
  }),
  tracesCertificate: setting({
    env: 'OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE',
    schema: nonEmptyText,
    doc: `The same for traces only. ${EXPORTER_READS}.`,
  }),
  clientCertificate: setting({
    env: 'OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE',
    schema: nonEmptyText,
    doc: `Client certificate file (PEM) for mutual TLS. ${EXPORTER_READS}.`,
  }),
  tracesClientCertificate: setting({
    env: 'OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE',
    schema: nonEmptyText,
    doc: `The same for traces only. ${EXPORTER_READS}.`,
  }),
  clientKey: setting({
    env: 'OTEL_EXPORTER_OTLP_CLIENT_KEY',
    schema: nonEmptyText,
    doc: `Key file (PEM) of the client certificate. ${EXPORTER_READS}.`,
  }),
  tracesClientKey: setting({
    env: 'OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY',
    schema: nonEmptyText,
    doc: `The same for traces only. ${EXPORTER_READS}.`,
  }),
} as const;

export type TelemetrySettings = SettingsOf<typeof TELEMETRY_SETTINGS>;
export type TelemetrySettingsInput = SettingsInput<typeof TELEMETRY_SETTINGS>;

export class TelemetrySettingsError extends SettingsError {}

type TelemetryKey = keyof typeof TELEMETRY_SETTINGS;

const reader = settingsReader(TELEMETRY_SETTINGS, tableSchema(TELEMETRY_SETTINGS), TelemetrySettingsError);

export const telemetrySettingsReference = reader.reference;

/** A value given for `key`, as its own setting reads it; undefined when unset, blank or invalid. */
function valueOf(input: TelemetrySettingsInput, key: TelemetryKey): unknown {
  const spec: SettingSpec = TELEMETRY_SETTINGS[key];
  const given = input[key] ?? spec.default;
  if (given === undefined || (typeof given === 'string' && given.trim() === '')) return undefined;
  const parsed = spec.schema.safeParse(given);
  return parsed.success ? parsed.data : undefined;
}

/**
 * Whether the input leaves tracing off whatever the rest says (no endpoint, disabled, or no `otlp`
 * exporter); an endpoint that is set counts as asking for tracing even when it is malformed. Pure.
 */
function leavesTracingOff(input: TelemetrySettingsInput): boolean {
  const blank = (value: unknown): boolean => value === undefined || (typeof value === 'string' && value.trim() === '');
  if (blank(input.endpoint) && blank(input.tracesEndpoint)) return true;
  if (valueOf(input, 'sdkDisabled') === true) return true;
  const list = valueOf(input, 'tracesExporter');
  return Array.isArray(list) && !list.includes('otlp');
}

/**
 * Settings whose value cannot matter with this input: every one when tracing stays off, the
 * general protocol when the traces' own is set. An invalid value of one of them is dropped (its
 * default applies) instead of refused: it must not stop a start.
 */
function irrelevantKeys(input: TelemetrySettingsInput): Set<TelemetryKey> {
  if (leavesTracingOff(input)) return new Set(Object.keys(TELEMETRY_SETTINGS) as TelemetryKey[]);
  return new Set(valueOf(input, 'tracesProtocol') === undefined ? [] : ['protocol']);
}

/** The settings given in code or read from the environment; throws a TelemetrySettingsError naming the variable of a bad value that matters. */
export function parseTelemetrySettings(input: TelemetrySettingsInput = {}): TelemetrySettings {
  const ignored = irrelevantKeys(input);
  const kept = Object.fromEntries(
    Object.entries(input).filter(
      ([key, value]) =>
        !ignored.has(key as TelemetryKey) ||
        (TELEMETRY_SETTINGS[key as TelemetryKey] as SettingSpec).schema.safeParse(value).success,
    ),
  );
  return reader.parse(kept);
}

export function telemetrySettingsFromEnv(env: NodeJS.ProcessEnv = process.env): TelemetrySettings {
  return parseTelemetrySettings(inputFromEnv(TELEMETRY_SETTINGS, env));
}

/** OTEL_TRACES_EXPORTER's entries this program cannot run (`console`, `zipkin`): ignored, each worth a warning. Pure. */
export function unsupportedExporters(settings: TelemetrySettings): string[] {
  return settings.tracesExporter.filter((entry) => !KNOWN_EXPORTERS.has(entry));
}

/** Where spans go, and how: null when tracing is off (no endpoint, disabled, or no `otlp` exporter). Pure. */
export function traceExport(settings: TelemetrySettings): { url: string; protocol: OtlpProtocol } | null {
  if (settings.sdkDisabled || !settings.tracesExporter.includes('otlp')) return null;
  const url =
    settings.tracesEndpoint ??
    (settings.endpoint === undefined ? undefined : `${settings.endpoint.replace(/\/+$/, '')}/v1/traces`);
  if (url === undefined) return null;
  return { url, protocol: settings.tracesProtocol ?? settings.protocol };
}

/** The service name: OTEL_SERVICE_NAME, then `service.name` of OTEL_RESOURCE_ATTRIBUTES, then the process's own. Pure. */
export function serviceNameOf(settings: TelemetrySettings, fallback: string): string {
  return settings.serviceName ?? settings.resourceAttributes?.['service.name'] ?? fallback;
}
