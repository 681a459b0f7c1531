/**
 * Where a MuseTalk network's manifest and graphs live, and getting its graphs ready: the manifest
 * at <models>/musetalk/<name>.json, the graphs in <files>/musetalk/<name>/ (files: the worker's
 * MEDIA_WORKER_MODEL_FILES_DIR, else the models folder). Every file is checked against the
 * manifest's sha256 before a session opens it, its external data file too; the test networks are
 * generated when missing, and refused, like real graphs, when what is there differs.
 */
import { createHash } from 'node:crypto';
import { mkdir, open, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { sha256File, sha256Hex, writeFileAtomic } from '../../../../inference/index.js';
import { writeThenRename } from '../../../../media/index.js';
import { MUSETALK_GRAPHS, type MuseTalkGraph } from './graph-contract.js';
import {
  MUSETALK_MANIFEST_DIR,
  MuseTalkManifestError,
  parseMuseTalkManifest,
  type MuseTalkGraphFile,
  type MuseTalkManifest,
} from './manifest.js';
import {
  buildMuseTalkNetworks,
  MUSETALK_TEST_GENERATOR,
  MUSETALK_TEST_GENERATOR_VERSION,
  type BuiltMuseTalkGraph,
} from './test-networks.js';

export const MUSETALK_TEST_MODEL = 'musetalk-test';

export function museTalkManifestPath(modelsDir: string, name: string): string {
  return path.join(modelsDir, MUSETALK_MANIFEST_DIR, `${name}.json`);
}

export function museTalkGraphDir(filesDir: string, name: string): string {
  return path.join(filesDir, MUSETALK_MANIFEST_DIR, name);
}

export async function readMuseTalkManifest(modelsDir: string, name: string): Promise<MuseTalkManifest> {
  const file = museTalkManifestPath(modelsDir, name);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (cause) {
    throw new MuseTalkManifestError(
      `Expected a MuseTalk manifest at ${file} but it cannot be read (${(cause as NodeJS.ErrnoException).code ?? 'error'}): ` +
        'export the graphs with the recipe in docs/lipsync.md ("MuseTalk 1.5") and install them with node dist/scripts/install-musetalk-model.js --from DIR',
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new MuseTalkManifestError(`Expected ${file} to hold JSON but it does not parse`);
  }
  const manifest = parseMuseTalkManifest(json, file);
  if (manifest.name !== name)
    throw new MuseTalkManifestError(`Expected ${file} to describe ${name} but it names ${manifest.name}`);
  return manifest;
}

async function exists(file: string): Promise<boolean> {
  return stat(file).then(
    (s) => s.isFile(),
    () => false,
  );
}

async function verify(file: string, want: { sha256: string; bytes: number }, name: string): Promise<void> {
  const size = (await stat(file)).size;
  if (size !== want.bytes)
    throw new MuseTalkManifestError(
      `Expected ${name}'s ${path.basename(file)} to be ${want.bytes} bytes but it is ${size}: refusing to load it`,
    );
  const actual = await sha256File(file);
  if (actual !== want.sha256)
    throw new MuseTalkManifestError(
      `Expected ${name}'s ${path.basename(file)} to have sha256 ${want.sha256} but it has ${actual}: refusing to load it`,
    );
}

/**
 * The graphs' paths once every file is there and verified; generates the test networks' missing
 * files first, with the options their manifest names (their bytes are deterministic, so the
 * manifest's sha256 holds for them too).
 */
export async function ensureMuseTalkGraphs(
  manifest: MuseTalkManifest,
  filesDir: string,
): Promise<Record<MuseTalkGraph, string>> {
  const dir = museTalkGraphDir(filesDir, manifest.name);
  const paths = {} as Record<MuseTalkGraph, string>;
  let built: Record<MuseTalkGraph, BuiltMuseTalkGraph> | undefined;
  for (const graph of MUSETALK_GRAPHS) {
    const entry = manifest.graphs[graph];
    const file = path.join(dir, entry.file);
    const data = entry.externalData === undefined ? undefined : path.join(dir, entry.externalData.file);
    if (!(await exists(file)) || (data !== undefined && !(await exists(data)))) {
      const { source } = manifest;
      if (source.kind !== 'generated' || source.generator !== MUSETALK_TEST_GENERATOR) {
        throw new MuseTalkManifestError(
          `Expected ${manifest.name}'s ${graph} graph at ${file}${data === undefined ? '' : ' and its external data'} but it is missing: ${source.kind === 'installed' ? source.instructions : `no generator ${source.generator}`}`,
        );
      }
      if (source.generatorVersion !== MUSETALK_TEST_GENERATOR_VERSION) {
        throw new MuseTalkManifestError(
          `Expected ${manifest.name} to come from generator version ${MUSETALK_TEST_GENERATOR_VERSION} but its manifest names ${source.generatorVersion}`,
        );
      }
      built ??= buildMuseTalkNetworks(source.options);
      await writeMuseTalkGraph(dir, graph, built[graph], entry);
    }
    await verify(file, entry, manifest.name);
    if (entry.externalData !== undefined && data !== undefined) await verify(data, entry.externalData, manifest.name);
    paths[graph] = file;
  }
  return paths;
}

/** Streams a graph's external data into `file` (through a partial name), hashing as it goes; returns the sha256. */
async function writeExternalData(
  file: string,
  data: NonNullable<BuiltMuseTalkGraph['externalData']>,
  want: MuseTalkGraphFile['externalData'],
): Promise<string> {
  return writeThenRename(file, async (partial) => {
    const hash = createHash('sha256');
    let written = 0;
    const handle = await open(partial, 'w');
    try {
      for (const chunk of data.chunks()) {
        hash.update(chunk);
        await handle.write(chunk);
        written += chunk.byteLength;
      }
    } finally {
      await handle.close();
    }
    if (written !== data.bytes)
      throw new Error(`Expected ${data.bytes} bytes of ${path.basename(file)} but ${written} were made`);
    const sha256 = hash.digest('hex');
    // Checked before the rename: a generator that drifted from its manifest leaves no file behind.
    if (want !== undefined && sha256 !== want.sha256)
      throw new MuseTalkManifestError(
        `Expected the generated ${path.basename(file)} to have sha256 ${want.sha256} but it has ${sha256}`,
      );
    return sha256;
  });
}

/**
 * Writes one built graph into `dir` (each file through a partial name, renamed when whole) and
 * returns its manifest entry; with `want`, refuses bytes other than the manifest's. External data
 * is streamed one tensor at a time, so memory holds one tensor, never all the weights.
 */
async function writeMuseTalkGraph(
  dir: string,
  graph: MuseTalkGraph,
  built: BuiltMuseTalkGraph,
  want?: MuseTalkGraphFile,
): Promise<MuseTalkGraphFile> {
  const { model, externalData } = built;
  const entry: MuseTalkGraphFile = {
    file: want?.file ?? `${graph}.onnx`,
    sha256: sha256Hex(model),
    bytes: model.byteLength,
  };
  if (
    want !== undefined &&
    (entry.sha256 !== want.sha256 || (externalData === undefined) !== (want.externalData === undefined))
  )
    throw new MuseTalkManifestError(
      `Expected the generated ${graph} graph to have sha256 ${want.sha256}${want.externalData === undefined ? '' : ' and external data'} but it has ${entry.sha256}${externalData === undefined ? '' : ' and external data'}`,
    );
  await mkdir(dir, { recursive: true });
  await writeFileAtomic(path.join(dir, entry.file), model);
  if (externalData === undefined) return entry;
  const sha256 = await writeExternalData(path.join(dir, externalData.file), externalData, want?.externalData);
  return { ...entry, externalData: { file: externalData.file, sha256, bytes: externalData.bytes } };
}

/** Writes built graphs into `dir` and returns the manifest's entries for them (a sized build's manifest). */
export async function writeMuseTalkGraphFiles(
  dir: string,
  built: Readonly<Record<MuseTalkGraph, BuiltMuseTalkGraph>>,
): Promise<MuseTalkManifest['graphs']> {
  const graphs = {} as Record<MuseTalkGraph, MuseTalkGraphFile>;
  for (const graph of MUSETALK_GRAPHS) graphs[graph] = await writeMuseTalkGraph(dir, graph, built[graph]);
  return graphs;
}
