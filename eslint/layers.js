/**
 * The layers of src/ from their one table, in docs/layers.md ("The table"), for the boundaries rule
 * (eslint/boundaries.js): the table is the rule, so the documentation cannot drift from what
 * `npm run lint` enforces. `layersOf` throws, failing the lint, when the table does not parse, when
 * its "May import" column does not say what the rule does (every lower layer), or, given the rooms
 * of src/, when a room is missing from it or named twice, or it names a room that does not exist.
 */
import fs from 'node:fs';
import path from 'node:path';

const START = /^<!-- layers\b.*-->$/;
const END = /^<!-- \/layers -->$/;

/**
 * The layers, lowest first, each a list of rooms as the boundaries rule names them: a folder
 * without its slash (`media`), a file at src/'s top with its extension (`config.ts`).
 * `rooms`: the rooms src/ has (roomsOf), checked against the table when given.
 */
export function layersOf(markdown, rooms) {
  const lines = markdown.split('\n').map((line) => line.trim());
  const start = lines.findIndex((line) => START.test(line));
  const end = lines.findIndex((line, i) => i > start && END.test(line));
  if (start < 0 || end < 0) throw new Error('docs/layers.md: no table between <!-- layers --> and <!-- /layers -->');
  const rows = lines.slice(start + 1, end).filter((line) => line.startsWith('|'));
  const [header, rule, ...body] = rows.map(cells);
  if (
    header?.[0] !== 'Layer' ||
    header[1] !== 'Rooms' ||
    header[2] !== 'May import' ||
    rule === undefined ||
    !rule.every((c) => /^:?-+:?$/.test(c))
  ) {
    throw new Error(
      'docs/layers.md: the layers table must open with | Layer | Rooms | May import | ... | and its rule line',
    );
  }
  if (body.length === 0) throw new Error('docs/layers.md: the layers table has no layer');
  const seen = new Map();
  const layers = body.map(([layer, names, imports], i) => {
    const n = i + 1;
    if (layer !== String(n))
      throw new Error(
        `docs/layers.md: row ${n} of the layers table is layer ${JSON.stringify(layer)}, expected ${n} (lowest first, one row a layer)`,
      );
    const expected = n === 1 ? 'none' : n === 2 ? '1' : `1–${n - 1}`;
    if (imports !== expected)
      throw new Error(
        `docs/layers.md: layer ${n} "May import" says ${JSON.stringify(imports)}; a layer imports every lower one and nothing else: ${JSON.stringify(expected)}`,
      );
    const found = [...(names ?? '').matchAll(/`([^`]+)`/g)].map((m) => m[1].replace(/\/$/, ''));
    if (found.length === 0)
      throw new Error(
        `docs/layers.md: layer ${n} names no room (rooms are written in backticks: \`media/\`, \`config.ts\`)`,
      );
    for (const room of found) {
      if (seen.has(room)) throw new Error(`docs/layers.md: ${room} is in layer ${seen.get(room)} and in layer ${n}`);
      seen.set(room, n);
    }
    return found;
  });
  if (rooms !== undefined) {
    const missing = rooms.filter((room) => !seen.has(room));
    const extra = [...seen.keys()].filter((room) => !rooms.includes(room));
    if (missing.length > 0)
      throw new Error(`docs/layers.md: src/ has rooms the layers table does not place: ${missing.join(', ')}`);
    if (extra.length > 0)
      throw new Error(`docs/layers.md: the layers table names rooms src/ does not have: ${extra.join(', ')}`);
  }
  return layers;
}

/**
 * The rooms of the src/ folder at `srcDir`: its folders and its .ts files, as the boundaries rule names
 * them. src/kinds/ is not one room: each job kind's folder (src/kinds/<kind>/) holds parts that sit in
 * different layers (its contract, its pipeline, its runtime half, its command), named `kinds/*\/<part>`
 * for every kind alike.
 */
export function roomsOf(srcDir) {
  const entries = (dir) =>
    fs
      .readdirSync(dir, { withFileTypes: true })
      .filter((e) => (e.isDirectory() && !e.name.startsWith('.')) || (e.isFile() && e.name.endsWith('.ts')));
  const rooms = new Set();
  for (const e of entries(srcDir)) {
    if (e.name !== KINDS || !e.isDirectory()) {
      rooms.add(e.name);
      continue;
    }
    for (const kind of entries(path.join(srcDir, KINDS))) {
      if (!kind.isDirectory()) rooms.add(`${KINDS}/${kind.name}`);
      else for (const part of entries(path.join(srcDir, KINDS, kind.name))) rooms.add(`${KINDS}/*/${part.name}`);
    }
  }
  return [...rooms].sort();
}

/** The folder of src/ whose sub-folders are the job kinds. */
export const KINDS = 'kinds';

/**
 * The parts of a kind that join another room of their layer: a layer with one room besides kind
 * parts (jobs/, app/, cli/) takes them in, so that a kind's contract is read with the generic contract
 * it fills, its runtime half with the corridor that runs it, its command with the command line; in a
 * layer of several rooms (the pipelines beside worker/ and gateway/) a kind's part is a room of its
 * own. Returns { 'kinds/*\/contract': 'jobs', ... }.
 */
export function joinsOf(layers) {
  const joins = {};
  for (const rooms of layers) {
    const generic = rooms.filter((room) => !room.startsWith(`${KINDS}/`));
    if (generic.length !== 1) continue;
    for (const room of rooms) if (room.startsWith(`${KINDS}/`)) joins[room] = generic[0];
  }
  return joins;
}

/** The layers of the repository at `root`: its docs/layers.md table, checked against its src/. */
export function repositoryLayers(root) {
  return layersOf(fs.readFileSync(path.join(root, 'docs', 'layers.md'), 'utf8'), roomsOf(path.join(root, 'src')));
}

/** A table row's cells, trimmed. */
function cells(row) {
  return row
    .replace(/^\|/, '')
    .replace(/\|$/, '')
    .split('|')
    .map((cell) => cell.trim());
}
