/**
 * The machinery behind every settings table of the project (src/config.ts for the pipelines,
 * src/protocol/settings.ts for what workers and gateways share, src/worker/settings.ts for the
 * daemon, src/gateway/settings.ts for the gateway): one row per setting with its environment variable, a zod
 * schema that accepts the environment's spelling (a string) as well as an already typed value, the
 * default as the environment would spell it, and one line of documentation. A bad value is reported
 * as `Invalid setting <ENV>: Expected … but received …`, the same words for every setting. A value
 * is printed with the credentials written into its URLs hidden (shownSetting, redactCredentials).
 */
import { z } from 'zod';

/** A bad setting: the message names the environment variable. Commands print it and exit 1. */
export class SettingsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

export interface SettingSpec<S extends z.ZodType = z.ZodType> {
  env: string;
  schema: S;
  /** Default as the environment would spell it; undefined means "unset". */
  default?: string;
  doc: string;
  /** A credential: `media-worker config` shows whether it is set, never its value. */
  secret?: boolean;
}

export type SettingsTable = Record<string, SettingSpec>;

/** `const T` keeps whether a default exists in the type, so only unset-able settings come out optional. */
export function setting<const T extends SettingSpec>(spec: T): T {
  return spec;
}

export type SettingValue<S extends SettingSpec> = S extends { default: string }
  ? z.output<S['schema']>
  : z.output<S['schema']> | undefined;
export type SettingsOf<T extends SettingsTable> = { [K in keyof T]: SettingValue<T[K]> };
/** Values handed over in code: each in its environment spelling or already typed. */
export type SettingsInput<T extends SettingsTable> = { [K in keyof T]?: z.input<T[K]['schema']> | string };

/** A refused input as a message quotes it, credentials in URLs hidden (redactCredentials). */
export const received = (input: unknown): string => JSON.stringify(redactValue(input)) ?? String(input);

/** An integer in range, given as a number or its decimal spelling. */
export function intSchema(expectation: string, min: number, max = Number.MAX_SAFE_INTEGER) {
  return z
    .union([z.number(), z.string()], {
      error: (issue) => `Expected ${expectation} but received ${received(issue.input)}`,
    })
    .transform((input, ctx) => {
      const value = typeof input === 'number' ? input : input.trim() === '' ? Number.NaN : Number(input.trim());
      if (!Number.isSafeInteger(value) || value < min || value > max) {
        ctx.addIssue({ code: 'custom', message: `Expected ${expectation} but received ${received(input)}` });
        return z.NEVER;
      }
      return value;
    });
}

export const positiveInt = intSchema('a positive integer', 1);
export const nonNegativeInt = intSchema('a non-negative integer', 0);
/** A TCP port; 0 lets the system choose a free one. */
export const portNumber = intSchema('a port number from 0 to 65535', 0, 65535);

export const absoluteUrl = z.url({
  error: (issue) => `Expected an absolute URL but received ${received(issue.input)}`,
});

/** An http or https URL. */
export const httpUrl = z.url({
  protocol: /^https?$/,
  error: (issue) => `Expected an http or https URL but received ${received(issue.input)}`,
});

/** A setting read by a parser of its own module, whose error message becomes the setting's. */
export function parsedBy<T>(parse: (text: string) => T): z.ZodType<T, string> {
  return z.string().transform((value, ctx) => {
    try {
      return parse(value);
    } catch (err) {
      ctx.addIssue({ code: 'custom', message: (err as Error).message });
      return z.NEVER;
    }
  });
}

export const nonEmptyText = z
  .string({ error: (issue) => `Expected a non-empty string but received ${received(issue.input)}` })
  .min(1, {
    error: (issue) => `Expected a non-empty string but received ${received(issue.input)}`,
  });

const TRUE_WORDS = ['1', 'true', 'yes', 'on'];
const FALSE_WORDS = ['0', 'false', 'no', 'off'];

export const booleanSetting = z
  .union([z.boolean(), z.string()], {
    error: (issue) =>
      `Expected one of ${[...TRUE_WORDS, ...FALSE_WORDS].join(', ')} but received ${received(issue.input)}`,
  })
  .transform((input, ctx) => {
    if (typeof input === 'boolean') return input;
    const word = input.trim().toLowerCase();
    if (TRUE_WORDS.includes(word)) return true;
    if (FALSE_WORDS.includes(word)) return false;
    ctx.addIssue({
      code: 'custom',
      message: `Expected one of ${[...TRUE_WORDS, ...FALSE_WORDS].join(', ')} but received ${received(input)}`,
    });
    return z.NEVER;
  });

/** One of a fixed set of words. */
export function oneOfSetting<const W extends readonly [string, ...string[]]>(words: W) {
  return z.enum(words, {
    error: (issue) => `Expected one of ${words.join(', ')} but received ${received(issue.input)}`,
  });
}

/**
 * "a" or "b, a": an ordered list of known names (backends in the operator's order of preference),
 * each at most once. `what` names one (a "backend") in the message about a repeat.
 */
export function parseNameList<const N extends readonly string[]>(value: string, names: N, what: string): N[number][] {
  const out: N[number][] = [];
  for (const name of value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')) {
    if (!names.includes(name))
      throw new Error(`Expected a comma-separated list of ${names.join(', ')} but received ${JSON.stringify(value)}`);
    if (out.includes(name)) throw new Error(`Expected each ${what} once but ${name} is listed twice`);
    out.push(name);
  }
  return out;
}

function fieldSchema(spec: SettingSpec): z.ZodType {
  const { default: fallback, schema } = spec;
  if (fallback === undefined) return schema.optional();
  // The default goes through the schema like an environment value, so it is parsed the same way.
  return z.preprocess((value) => (value === undefined || value === '' ? fallback : value), schema);
}

/**
 * A check across rows of one table (a room's settings that must agree): the problems it finds, each
 * on the row whose variable the message names.
 */
export type SettingsCheck<T extends SettingsTable> = (
  values: SettingsOf<T>,
) => { key: keyof T & string; message: string }[];

/** The table as one zod object (add cross-field checks with superRefine). */
export function tableSchema<T extends SettingsTable>(table: T): z.ZodType<SettingsOf<T>, SettingsInput<T>> {
  const shape = Object.fromEntries(Object.entries(table).map(([key, spec]) => [key, fieldSchema(spec)]));
  return z.object(shape) as unknown as z.ZodType<SettingsOf<T>, SettingsInput<T>>;
}

/** The table's variables that are set (and not blank) in `env`, keyed by setting. */
export function inputFromEnv<T extends SettingsTable>(table: T, env: NodeJS.ProcessEnv): SettingsInput<T> {
  const input: Record<string, string> = {};
  for (const [key, spec] of Object.entries(table)) {
    const value = env[spec.env];
    if (value !== undefined && value.trim() !== '') input[key] = value;
  }
  return input as SettingsInput<T>;
}

/** Parses with `schema`; on failure returns one `Invalid setting ENV: …` line per problem. */
export function parseSettings<T extends SettingsTable>(
  table: T,
  schema: z.ZodType<SettingsOf<T>, SettingsInput<T>>,
  input: SettingsInput<T>,
): { ok: true; value: SettingsOf<T> } | { ok: false; problems: string[] } {
  const parsed = schema.safeParse(input);
  if (parsed.success) return { ok: true, value: parsed.data };
  return {
    ok: false,
    problems: parsed.error.issues.map((issue) => {
      const key = issue.path[0];
      const env = typeof key === 'string' && key in table ? (table[key] as SettingSpec).env : String(key);
      return `Invalid setting ${env}: ${issue.message}`;
    }),
  };
}

/** One room's rows under a heading of the settings reference (its folder's settings.ts). */
export interface SettingsGroup {
  title: string;
  table: SettingsTable;
  /** Variables the room no longer reads, each with what to set instead (the unknown-variable warning says it). */
  retired?: Readonly<Record<string, string>>;
}

/**
 * Markdown of the groups, each under a `####` heading; a table of one group (or one with rows) has
 * no heading. Empty groups (a kind without settings of its own) are left out.
 */
export function groupedReference(groups: readonly SettingsGroup[], shownDefault?: (value: string) => string): string {
  const shown = groups.filter((group) => Object.keys(group.table).length > 0);
  if (shown.length === 1) return settingsReference((shown[0] as SettingsGroup).table, shownDefault);
  return shown.map((group) => `#### ${group.title}\n\n${settingsReference(group.table, shownDefault)}`).join('\n\n');
}

/**
 * One process's settings, as src/config.ts lists them (SETTINGS_SECTIONS): `media-worker config`
 * prints and validates each, the settings reference is generated from them, and the
 * unknown-variable check knows a name as soon as a section's table reads it.
 */
export interface SettingsSection {
  /** Key in `media-worker config`'s JSON. */
  key: string;
  /** Heading in the settings reference (docs/configuration.md). */
  title: string;
  table: SettingsTable;
  /** Reads and validates the section from the environment; throws a SettingsError naming the variable. */
  load(env: NodeJS.ProcessEnv): Record<string, unknown>;
  /** Markdown tables of the section, one per room. */
  reference(): string;
}

/** What each settings module offers for its table (`parseWorkerSettings`, `workerSettingsFromEnv`, …). */
export interface SettingsReader<T extends SettingsTable> {
  /** Values given in code, in environment spelling or already typed; unset ones take their defaults. */
  parse(input?: SettingsInput<T>): SettingsOf<T>;
  /** The table's variables in `env` (process.env by default; unset and blank ones take their defaults), `overrides` taking precedence. */
  fromEnv(env?: NodeJS.ProcessEnv, overrides?: SettingsInput<T>): SettingsOf<T>;
  /** Markdown table of the settings (settingsReference). */
  reference(): string;
}

/**
 * The reader of one table: `parse` and `fromEnv` validate with `schema` (the table's, with any
 * cross-field checks) and throw `Failure` with one `Invalid setting ENV: …` line per problem.
 * `groups` split the reference by room (the table's rows, in its order); by default one table.
 */
export function settingsReader<T extends SettingsTable>(
  table: T,
  schema: z.ZodType<SettingsOf<T>, SettingsInput<T>>,
  Failure: new (message: string) => SettingsError,
  shownDefault?: (value: string) => string,
  groups: readonly SettingsGroup[] = [{ title: '', table }],
): SettingsReader<T> {
  const parse = (input: SettingsInput<T> = {}): SettingsOf<T> => {
    const parsed = parseSettings(table, schema, input);
    if (!parsed.ok) throw new Failure(parsed.problems.join('\n'));
    return parsed.value;
  };
  return {
    parse,
    fromEnv: (env = process.env, overrides = {}) => parse({ ...inputFromEnv(table, env), ...overrides }),
    reference: () => groupedReference(groups, shownDefault),
  };
}

/** Markdown table of the settings; `shownDefault` may replace machine-specific defaults by a placeholder. */
export function settingsReference(table: SettingsTable, shownDefault: (value: string) => string = (v) => v): string {
  const rows = Object.values(table).map(
    (s) => `| \`${s.env}\` | ${s.default === undefined ? '(unset)' : `\`${shownDefault(s.default)}\``} | ${s.doc} |`,
  );
  return ['| variable | default | meaning |', '|---|---|---|', ...rows].join('\n');
}

// ------------------------------------------------------------------------------ unknown settings

/**
 * Variables with one of these prefixes are taken as meant for this program: one that no table
 * reads is reported. The prefixes of every table's own variables are added by `settingPrefixes`.
 */
export const PROJECT_PREFIXES = [
  'MEDIA_WORKER_',
  'MEDIA_',
  'WORKER_',
  'RESULTS_',
  'NATS_',
  'GATEWAY_',
  'LOG_',
  'FFMPEG_',
  'FFPROBE_',
] as const;

/**
 * Variables with a project prefix that are read by something else, not settings: the test helpers'
 * nats-server, and the test-only kill point (worker/kill-point.ts).
 */
export const NOT_SETTINGS: ReadonlySet<string> = new Set(['NATS_SERVER_BIN', 'MEDIA_WORKER_TEST_KILL_AT']);

/** The project's prefixes plus the first word of every variable the tables read, longest first. */
export function settingPrefixes(names: Iterable<string>): string[] {
  const prefixes = new Set<string>(PROJECT_PREFIXES);
  for (const name of names) {
    const cut = name.indexOf('_');
    if (cut > 0) prefixes.add(name.slice(0, cut + 1));
  }
  return [...prefixes].sort((a, b) => b.length - a.length || a.localeCompare(b));
}

export interface UnknownSetting {
  /** The variable set in the environment that no setting reads. */
  name: string;
  /** The setting it most resembles (a misspelling, or another table's prefix). */
  closest: string | undefined;
  /** A variable no longer read: what to set instead. */
  instead?: string;
}

/**
 * Variables of `env` that carry a project prefix but that no setting of `known` reads, each with
 * the closest known variable. Closeness compares the names with and without their prefixes, so
 * `MEDIA_WORKER_RESULTS_DIR` finds `RESULTS_DIR` and `WORKER_CONCURENCY` finds `WORKER_CONCURRENCY`.
 */
export function unknownSettings(
  env: NodeJS.ProcessEnv,
  known: readonly string[],
  retired: Readonly<Record<string, string>> = {},
): UnknownSetting[] {
  const knownSet = new Set(known);
  const prefixes = settingPrefixes(known);
  const out: UnknownSetting[] = [];
  for (const name of Object.keys(env).sort()) {
    if (knownSet.has(name) || NOT_SETTINGS.has(name)) continue;
    if (!prefixes.some((p) => name.startsWith(p))) continue;
    const instead = retired[name];
    out.push(
      instead === undefined
        ? { name, closest: closestSetting(name, known, prefixes) }
        : { name, closest: undefined, instead },
    );
  }
  return out;
}

/** The known name nearest to `name` by edit distance, prefixes aside; undefined when none is near. */
export function closestSetting(
  name: string,
  known: readonly string[],
  prefixes: readonly string[] = settingPrefixes(known),
): string | undefined {
  const strip = (n: string): string => {
    const prefix = prefixes.find((p) => n.startsWith(p) && n.length > p.length);
    return prefix === undefined ? n : n.slice(prefix.length);
  };
  const bare = strip(name);
  let best: { name: string; score: number } | undefined;
  for (const candidate of known) {
    const score = Math.min(
      editDistance(name, candidate),
      editDistance(bare, candidate) + 1,
      editDistance(bare, strip(candidate)) + 2,
    );
    if (best === undefined || score < best.score) best = { name: candidate, score };
  }
  // Past half the name's length the "closest" one is a guess that would mislead.
  return best !== undefined && best.score <= Math.max(3, Math.ceil(bare.length / 2)) ? best.name : undefined;
}

/** Levenshtein distance. */
export function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i += 1) {
    const current = [i];
    for (let j = 1; j <= b.length; j += 1) {
      const substitution = (previous[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min((previous[j] as number) + 1, (current[j - 1] as number) + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length] as number;
}

/** One line per unknown variable, for logs and `media-worker config`. */
export function unknownSettingMessage(unknown: UnknownSetting): string {
  if (unknown.instead !== undefined)
    return `Unknown setting ${unknown.name}: no setting reads it any more, it is ignored; ${unknown.instead}`;
  const hint = unknown.closest === undefined ? '' : `; did you mean ${unknown.closest}?`;
  return `Unknown setting ${unknown.name}: no setting reads it, it is ignored${hint}`;
}

// ------------------------------------------------------------------------------ credentials in shown values

/*
 * Credentials written into URLs, hidden wherever a setting's value is printed (`media-worker
 * config`, an invalid setting's message, start-up logs): `https://user:pass@sync.example`,
 * `nats://u:p@a:4222,nats://u:p@b:4222` or a callback URL whose query carries a token are shown as
 * `https://user:***@sync.example` (the user name kept: it says which account), with the query's
 * credential-looking parameters' values hidden too. The rest is kept as written, so an operator
 * recognises the value. Settings marked `secret` are not shown at all (`(set)`).
 */

export const HIDDEN = '***';

/** A setting's value as it is printed: a secret as `(set)` (null when unset), any other with its URLs' credentials hidden. */
export function shownSetting(spec: SettingSpec, value: unknown): unknown {
  if (spec.secret === true) return value === undefined ? null : '(set)';
  return redactValue(value ?? null);
}

/** Query parameters that carry a credential: presigned URLs' signatures (`X-Amz-Signature`, `sig`), tokens, keys. */
const SECRET_PARAMETER = /sig|token|secret|key|pass|pwd|auth|credential|session/i;
/** `scheme://` (RFC 3986: a letter, then letters, digits, `+`, `-`, `.`). */
const SCHEME = /^[a-z][a-z0-9+.-]*:\/\//i;
/** `user:password@` at the start of a URL without a scheme (NATS_URL accepts `u:p@host:4222`). */
const BARE_USER_PASSWORD = /^([^\s/?#@:]+):[^\s/?#@]*@/;

/** `text` with the credentials of every URL in it hidden; URLs are separated by commas or spaces. */
export function redactCredentials(text: string): string {
  return text.replace(/[^,\s]+/g, redactUrl);
}

/** Each string inside a settings value (an array, a plain object) redacted; other values as they are. */
export function redactValue(value: unknown): unknown {
  if (typeof value === 'string') return redactCredentials(value);
  if (Array.isArray(value)) return value.map(redactValue);
  if (value !== null && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype)
    return Object.fromEntries(Object.entries(value).map(([key, v]) => [key, redactValue(v)]));
  return value;
}

function redactUrl(url: string): string {
  const scheme = SCHEME.exec(url)?.[0];
  if (scheme === undefined) return url.replace(BARE_USER_PASSWORD, `$1:${HIDDEN}@`);
  const rest = url.slice(scheme.length);
  const authorityEnd = rest.search(/[/?#]/);
  const authority = authorityEnd < 0 ? rest : rest.slice(0, authorityEnd);
  const tail = authorityEnd < 0 ? '' : rest.slice(authorityEnd);
  return `${scheme}${redactAuthority(authority)}${redactQuery(tail)}`;
}

/** `user:pass@host` -> `user:***@host`; a lone `token@host` (NATS's token in a URL) -> `***@host`. */
function redactAuthority(authority: string): string {
  const at = authority.lastIndexOf('@');
  if (at < 0) return authority;
  const userinfo = authority.slice(0, at);
  const colon = userinfo.indexOf(':');
  const shown = colon < 0 ? HIDDEN : `${userinfo.slice(0, colon)}:${HIDDEN}`;
  return `${shown}${authority.slice(at)}`;
}

/** `/path?X-Amz-Signature=abc&size=2#f` -> `/path?X-Amz-Signature=***&size=2#f`. */
function redactQuery(tail: string): string {
  const start = tail.indexOf('?');
  if (start < 0) return tail;
  const hash = tail.indexOf('#', start);
  const end = hash < 0 ? tail.length : hash;
  const query = tail
    .slice(start + 1, end)
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      if (eq < 0) return pair;
      return SECRET_PARAMETER.test(safeDecode(pair.slice(0, eq))) ? `${pair.slice(0, eq)}=${HIDDEN}` : pair;
    })
    .join('&');
  return `${tail.slice(0, start + 1)}${query}${tail.slice(end)}`;
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '));
  } catch {
    return text;
  }
}
