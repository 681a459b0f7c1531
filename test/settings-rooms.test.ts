/**
 * Each setting lives in its room (issue 55, item 2; docs/settings.md): its name, schema, default and
 * doc are written once, in the settings file of the folder that uses it (`src/<room>/settings.ts`,
 * a kind's `src/kinds/<kind>/settings.ts`); src/config.ts only assembles them. The names follow
 * one convention, and no variable is read outside its room: a file of src/ that reads a variable
 * by name (`process.env['X']`, `env['X']`, `env.X`) reads one that its own room's settings file
 * declares, as a setting or among the room's VARIABLES_NOT_SETTINGS. Other reads go through a
 * room's helper or the assembled config.
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { PIPELINE_GROUPS, SETTINGS, SETTINGS_SECTIONS, knownSettingNames } from '../src/config.js';
import { PACKAGE_ROOT } from '../src/paths.js';
import { NOT_SETTINGS } from '../src/settings-table.js';

const SRC = path.join(PACKAGE_ROOT, 'src');

/** The variables src/ reads that belong to other programs, each with why it is read. */
const NOT_OURS: Readonly<Record<string, string>> = {
  PATH: "the operating system's search path, where media/binaries.ts looks for ffmpeg and ffprobe",
};

/**
 * The naming convention (docs/settings.md, "Names"): the prefix says which process reads a
 * variable, so each room's names start with its process's prefix.
 */
const PIPELINES = /^MEDIA_WORKER_[A-Z0-9_]+$/;
const ROOM_NAMES: Readonly<Record<string, RegExp>> = {
  logging: /^LOG_[A-Z0-9_]+$/,
  media: PIPELINES,
  inference: PIPELINES,
  video: PIPELINES,
  jobs: PIPELINES,
  'kinds/image-upscale': PIPELINES,
  'kinds/video-upscale': PIPELINES,
  'kinds/lipsync': PIPELINES,
  'kinds/music': PIPELINES,
  'kinds/music-video': PIPELINES,
  // The connection, the JetStream names and retention, where results live: shared by every process.
  protocol: /^(NATS_[A-Z0-9_]+|RESULTS_[A-Z0-9_]+|MEDIA_[A-Z]+_STREAM|MEDIA_EVENTS_MAX_AGE_DAYS)$/,
  worker: /^(WORKER_[A-Z0-9_]+|RESULTS_[A-Z0-9_]+|MEDIA_CONSUMER_PREFIX)$/,
  gateway: /^GATEWAY_[A-Z0-9_]+$/,
  // OpenTelemetry's own names, as its specification spells them.
  telemetry: /^OTEL_[A-Z0-9_]+$/,
};

/** The documented exceptions to ROOM_NAMES (docs/settings.md, "Names"), each with why. */
const NAME_EXCEPTIONS: Readonly<Record<string, string>> = {
  FFMPEG_PATH: 'the name ffmpeg tooling uses for the binary',
  FFPROBE_PATH: 'the name ffmpeg tooling uses for the binary',
  WORKER_PRECISION:
    "a pipeline setting under the daemon's prefix, named before the convention; renaming breaks operators",
};

/** Durations end in their unit; OpenTelemetry's names are its specification's. */
const DURATION_WORD = /_(TIMEOUT|INTERVAL|DEADLINE|GRACE|LIFETIME|DELAYS?|LEASE|AGE|EXPIRES|WAIT)(_|$)/;
const DURATION_UNIT = /_(MS|SECONDS|DAYS)$/;
/** Sizes of memory and disk end in their unit. */
const SIZE_WORD = /_(MEMORY|RAM|RESERVE)(_|$)/;
const SIZE_UNIT = /_(MB|BYTES)$/;

async function sourceFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  const nested = await Promise.all(
    entries.map((entry) => {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) return sourceFiles(full);
      return Promise.resolve(entry.name.endsWith('.ts') ? [full] : []);
    }),
  );
  return nested.flat();
}

/** The folder of src/ a file is in ('' for the files at the top). */
const roomOf = (file: string): string => {
  const parts = path.relative(SRC, file).split(path.sep);
  // A job kind's folder is one room (src/kinds/<kind>/, its settings.ts beside its parts).
  if (parts[0] === 'kinds' && parts.length > 2) return `kinds/${parts[1]}`;
  return parts.length > 1 ? (parts[0] as string) : '';
};

const isSettingsFile = (file: string): boolean => /(^|-)settings\.ts$/.test(path.basename(file));

interface Declarations {
  /** Variable -> the settings file whose row names it (`env: 'X'`). */
  settings: Map<string, string[]>;
  /** Room -> the variables its settings files declare, settings and VARIABLES_NOT_SETTINGS alike. */
  byRoom: Map<string, Set<string>>;
}

async function declarations(): Promise<Declarations> {
  const settings = new Map<string, string[]>();
  const byRoom = new Map<string, Set<string>>();
  for (const file of (await sourceFiles(SRC)).filter(isSettingsFile)) {
    if (roomOf(file) === '') continue; // settings-table.ts: the machinery, no rows
    const room = byRoom.get(roomOf(file)) ?? new Set<string>();
    byRoom.set(roomOf(file), room);
    const text = await readFile(file, 'utf8');
    for (const [, name] of text.matchAll(/\benv: '([A-Z][A-Z0-9_]*)'/g)) {
      settings.set(name!, [...(settings.get(name!) ?? []), path.relative(PACKAGE_ROOT, file)]);
      room.add(name!);
    }
    const module = (await import(pathToFileURL(file).href)) as { VARIABLES_NOT_SETTINGS?: object };
    for (const name of Object.keys(module.VARIABLES_NOT_SETTINGS ?? {})) room.add(name);
  }
  return { settings, byRoom };
}

/** Reads of a variable by its name in `text`, writes (`=`, `??=`) left out. */
function namedReads(text: string): string[] {
  const read =
    /\b(?:process\.env|env)\s*(?:\?\.)?(?:\[\s*['"`]([A-Z][A-Z0-9_]*)['"`]\s*\]|\.([A-Z][A-Z0-9_]*)\b)(?!\s*(?:=(?!=)|\?\?=))/g;
  return [...text.matchAll(read)].map((m) => (m[1] ?? m[2]) as string);
}

/** Reads by a computed name, other than through a table's row (`env[spec.env]`). */
function computedReads(text: string): string[] {
  const read = /\b(?:process\.env|env)\s*(?:\?\.)?\[\s*([^\]'"`\s][^\]]*)\](?!\s*(?:=(?!=)|\?\?=))/g;
  return [...text.matchAll(read)].map((m) => (m[1] as string).trim()).filter((index) => !/\.env$/.test(index));
}

describe('settings in their rooms', () => {
  it("declares every setting once, in a room's settings file, and src/config.ts none", async () => {
    const { settings } = await declarations();
    const repeated = [...settings].filter(([, files]) => files.length > 1);
    expect(repeated).toEqual([]);
    expect([...settings.keys()].sort()).toEqual([...knownSettingNames()].sort());
    expect(await readFile(path.join(SRC, 'config.ts'), 'utf8')).not.toMatch(/\benv: '/);
  });

  it("assembles the pipelines' rooms without losing or repeating a key", () => {
    const keys = PIPELINE_GROUPS.flatMap((group) => Object.keys(group.table));
    expect(keys).toHaveLength(new Set(keys).size);
    expect(keys.sort()).toEqual(Object.keys(SETTINGS).sort());
    for (const group of PIPELINE_GROUPS)
      for (const [key, spec] of Object.entries(group.table)) expect(SETTINGS[key as keyof typeof SETTINGS]).toBe(spec);
  });

  it('names every variable by the convention, with the documented exceptions', async () => {
    const { settings } = await declarations();
    const wrong: string[] = [];
    for (const [name, [file]] of settings) {
      const room = roomOf(path.join(PACKAGE_ROOT, file!));
      const rule = ROOM_NAMES[room];
      if (rule === undefined) wrong.push(`${name}: ${file} is a room without a naming rule`);
      else if (!rule.test(name) && NAME_EXCEPTIONS[name] === undefined) wrong.push(`${name} (${room}): ${rule}`);
      if (!/^[A-Z][A-Z0-9]*(_[A-Z0-9]+)+$/.test(name)) wrong.push(`${name}: not upper-case words joined by _`);
      if (room !== 'telemetry' && DURATION_WORD.test(name) && !DURATION_UNIT.test(name))
        wrong.push(`${name}: a duration without its unit (_MS, _SECONDS, _DAYS)`);
      if (SIZE_WORD.test(name) && !SIZE_UNIT.test(name)) wrong.push(`${name}: a size without its unit (_MB, _BYTES)`);
    }
    expect(wrong).toEqual([]);
    // An exception that no longer names a setting is stale.
    for (const name of Object.keys(NAME_EXCEPTIONS)) expect(settings.has(name)).toBe(true);
  });

  it('can tell a bad name: the rules refuse what they should', () => {
    expect(ROOM_NAMES['gateway']!.test('WORKER_PORT')).toBe(false);
    expect(ROOM_NAMES['media']!.test('MEDIA_MAX_BYTES')).toBe(false);
    expect(DURATION_WORD.test('GATEWAY_QUOTE_TIMEOUT') && !DURATION_UNIT.test('GATEWAY_QUOTE_TIMEOUT')).toBe(true);
    expect(namedReads("const a = process.env['A_B']; env.C_D; env['E_F'] = 'x'; env['G'] ??= 'y'")).toEqual([
      'A_B',
      'C_D',
    ]);
    expect(computedReads('env[spec.env]; process.env[name]; env[name] = 1')).toEqual(['name']);
  });

  it('reads no variable outside its room', async () => {
    const { byRoom } = await declarations();
    const outside: string[] = [];
    for (const file of await sourceFiles(SRC)) {
      const text = await readFile(file, 'utf8');
      const where = path.relative(PACKAGE_ROOT, file);
      const room = roomOf(file);
      for (const name of namedReads(text)) {
        if (NOT_OURS[name] !== undefined || byRoom.get(room)?.has(name) === true) continue;
        outside.push(`${where} reads ${name}, which src/${room || '.'}/settings.ts does not declare`);
      }
      if (where !== path.join('src', 'settings-table.ts'))
        for (const index of computedReads(text)) outside.push(`${where} reads env[${index}]: name it, or read a row`);
    }
    expect(outside).toEqual([]);
  });

  it('passes over the variables that are not settings in the unknown-variable check', async () => {
    const { byRoom } = await declarations();
    const known = new Set(knownSettingNames());
    const notSettings = [...byRoom.values()].flatMap((names) => [...names]).filter((name) => !known.has(name));
    expect(notSettings.length).toBeGreaterThan(0);
    // The client's variables of `tasks watch` are warned about as before (a client's, not the service's).
    const warned = ['MEDIA_WORKER_URL', 'MEDIA_WORKER_API_KEY'];
    for (const name of notSettings.filter((n) => !warned.includes(n))) expect(NOT_SETTINGS.has(name)).toBe(true);
  });

  it('lists each section in the reference under its heading, by room', () => {
    for (const section of SETTINGS_SECTIONS) {
      const rows = section.reference().match(/^\| `[A-Z0-9_]+` \|/gm) ?? [];
      expect(rows).toHaveLength(Object.keys(section.table).length);
    }
    const pipelines = SETTINGS_SECTIONS[0]!.reference();
    const headings = pipelines.match(/^#### .+$/gm) ?? [];
    expect(headings).toHaveLength(PIPELINE_GROUPS.filter((group) => Object.keys(group.table).length > 0).length);
  });
});
