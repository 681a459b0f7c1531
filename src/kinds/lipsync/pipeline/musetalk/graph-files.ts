/**
 * Where a MuseTalk network's manifest and graphs live, and getting its graphs ready: the manifest
 * at <models>/musetalk/<name>.json, the graphs in <files>/musetalk/<name>/ (files: the worker's
 * MEDIA_WORKER_MODEL_FILES_DIR, else the models folder). Every file is checked against the
 * manifest's sha256 before a session opens it; the test networks are generated when missing, and
 * refused, like real graphs, when what is there differs.
 */
import { mkdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { sha256File, sha256Hex, writeFileAtomic } from '../../../../inference/index.js';
import { MUSETALK_GRAPHS, type MuseTalkGraph } from './graph-contract.js';
import {
  MUSETALK_MANIFEST_DIR,
  MuseTalkManifestError,
  parseMuseTalkManifest,
  type MuseTalkManifest,
} from './manifest.js';
import {
  buildMuseTalkTestNetworks,
  MUSETALK_TEST_GENERATOR,
  MUSETALK_TEST_GENERATOR_VERSION,
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
      `Expected a MuseTalk manifest at ${file} but it cannot be read (${(cause as NodeJS.ErrnoException).code ?? 'error'})`,
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
 * files first (their bytes are deterministic, so the manifest's sha256 holds for them too).
 */
export async function ensureMuseTalkGraphs(
  manifest: MuseTalkManifest,
  filesDir: string,
): Promise<Record<MuseTalkGraph, string>> {
  const dir = museTalkGraphDir(filesDir, manifest.name);
  const paths = {} as Record<MuseTalkGraph, string>;
  let built: Record<MuseTalkGraph, Uint8Array> | undefined;
  for (const graph of MUSETALK_GRAPHS) {
    const entry = manifest.graphs[graph];
    const file = path.join(dir, entry.file);
    if (!(await exists(file))) {
      const { source } = manifest;
      if (source.kind !== 'generated' || source.generator !== MUSETALK_TEST_GENERATOR) {
        throw new MuseTalkManifestError(
          `Expected ${manifest.name}'s ${graph} graph at ${file} but it is missing: ${source.kind === 'installed' ? source.instructions : `no generator ${source.generator}`}`,
        );
      }
      if (source.generatorVersion !== MUSETALK_TEST_GENERATOR_VERSION) {
        throw new MuseTalkManifestError(
          `Expected ${manifest.name} to come from generator version ${MUSETALK_TEST_GENERATOR_VERSION} but its manifest names ${source.generatorVersion}`,
        );
      }
      built ??= buildMuseTalkTestNetworks();
      const bytes = built[graph];
      if (sha256Hex(bytes) !== entry.sha256)
        throw new MuseTalkManifestError(
          `Expected the generated ${graph} graph to have sha256 ${entry.sha256} but it has ${sha256Hex(bytes)}`,
        );
      await mkdir(dir, { recursive: true });
      await writeFileAtomic(file, bytes);
    }
    await verify(file, entry, manifest.name);
    if (entry.externalData !== undefined)
      await verify(path.join(dir, entry.externalData.file), entry.externalData, manifest.name);
    paths[graph] = file;
  }
  return paths;
}
