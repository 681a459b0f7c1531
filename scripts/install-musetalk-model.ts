/**
 * Installs a MuseTalk 1.5 network that the operator exported from the official weights (the
 * recipe: docs/lipsync.md, "MuseTalk 1.5").
 *
 *   node dist/scripts/install-musetalk-model.js --from DIR [--sha256sums FILE] [--name musetalk]
 *       [--models-dir DIR] [--files-dir DIR] [--batch N]
 *
 * DIR holds whisper_encoder.onnx, positional_encoding.onnx, vae_encoder.onnx, unet.onnx and
 * vae_decoder.onnx (and <graph>.onnx.data where a graph keeps its weights outside, as a UNet over
 * 2 GB must), and SHA256SUMS (sha256sum's format) listing every one of those files. The script
 * checks every checksum, opens every graph with ONNX Runtime and holds it to its contract (names,
 * shapes, float32: src/kinds/lipsync/pipeline/musetalk/graph-contract.ts), then copies the files to
 * <files>/musetalk/<name>/ and writes <models>/musetalk/<name>.json with the parts' licences
 * (MuseTalk MIT and "any purpose, even commercially", sd-vae-ft-mse MIT, Whisper MIT). Nothing is
 * installed when a check fails. Settings as every command: MEDIA_WORKER_MODELS_DIR and
 * MEDIA_WORKER_MODEL_FILES_DIR from the environment, overridden by the flags.
 */
import { copyFile, mkdir, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import ort from 'onnxruntime-node';
import { loadConfig } from '../src/config.js';
import { defaultModelsDir, sha256File, writeFileAtomic } from '../src/inference/index.js';
import { ownedTempName } from '../src/media/index.js';
import {
  checkMuseTalkGraph,
  formatMuseTalkManifest,
  lipsyncNetworkOf,
  MUSETALK_COMMERCIAL_USE,
  MUSETALK_GRAPHS,
  MUSETALK_LICENCES,
  museTalkGraphDir,
  museTalkManifestPath,
  type MuseTalkManifest,
} from '../src/kinds/lipsync/pipeline/index.js';

export const DEFAULT_MUSETALK_NAME = 'musetalk';

export class MuseTalkInstallError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MuseTalkInstallError';
  }
}

export interface MuseTalkInstallOptions {
  from: string;
  sha256sums?: string;
  name?: string;
  modelsDir?: string;
  filesDir?: string;
  batch?: number;
}

/** sha256sum's lines ("<hex>  <file>" or "<hex> *<file>") as file -> hex. */
export function parseSha256Sums(text: string): Map<string, string> {
  const sums = new Map<string, string>();
  for (const [i, raw] of text.split('\n').entries()) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([0-9a-fA-F]{64}) [ *]([A-Za-z0-9_][A-Za-z0-9_.-]*)$/.exec(line);
    if (match === null)
      throw new MuseTalkInstallError(
        `Expected SHA256SUMS line ${i + 1} to read "<64 hex digits>  <plain file name>" but it reads ${JSON.stringify(line.slice(0, 120))}`,
      );
    sums.set(match[2]!, match[1]!.toLowerCase());
  }
  return sums;
}

export async function installMuseTalkModel(
  options: MuseTalkInstallOptions,
): Promise<{ manifest: MuseTalkManifest; manifestPath: string; dir: string }> {
  const name = options.name ?? DEFAULT_MUSETALK_NAME;
  // MEDIA_WORKER_LIPSYNC_MODELS tells a MuseTalk manifest by its name (settings.ts lipsyncNetworkOf).
  if (!/^[a-z0-9][a-z0-9.-]*$/.test(name) || lipsyncNetworkOf(name) !== 'musetalk')
    throw new MuseTalkInstallError(
      `Expected a model name that starts with "musetalk", of lower-case letters, digits, dots and dashes, but received ${JSON.stringify(name)}`,
    );
  const batch = options.batch ?? 8;
  if (!(Number.isInteger(batch) && batch > 0))
    throw new MuseTalkInstallError(`Expected a positive integer batch but received ${String(options.batch)}`);
  const from = path.resolve(options.from);
  const sumsFile = path.resolve(options.sha256sums ?? path.join(from, 'SHA256SUMS'));
  const sums = parseSha256Sums(
    await readFile(sumsFile, 'utf8').catch(() => {
      throw new MuseTalkInstallError(`Expected the checksums at ${sumsFile} but it cannot be read`);
    }),
  );
  const present = new Set(await readdir(from));
  const graphs = {} as MuseTalkManifest['graphs'];
  const files: string[] = [];
  for (const graph of MUSETALK_GRAPHS) {
    const file = `${graph}.onnx`;
    const parts = present.has(`${file}.data`) ? [file, `${file}.data`] : [file];
    const facts: { file: string; sha256: string; bytes: number }[] = [];
    for (const part of parts) {
      if (!present.has(part))
        throw new MuseTalkInstallError(
          `Expected ${part} in ${from} (the export writes all five graphs) but it is not there`,
        );
      const want = sums.get(part);
      if (want === undefined) throw new MuseTalkInstallError(`Expected ${sumsFile} to list ${part} but it does not`);
      const actual = await sha256File(path.join(from, part));
      if (actual !== want)
        throw new MuseTalkInstallError(
          `${part} has sha256 ${actual} but ${sumsFile} says ${want}: refusing to install it`,
        );
      const bytes = (await stat(path.join(from, part))).size;
      facts.push({ file: part, sha256: actual, bytes });
      files.push(part);
    }
    const session = await ort.InferenceSession.create(path.join(from, file), { logSeverityLevel: 3 }).catch(
      (cause: unknown) => {
        throw new MuseTalkInstallError(
          `Expected ${file} to be an ONNX graph that ONNX Runtime opens but ${(cause as Error).message.split('\n', 1)[0]}`,
        );
      },
    );
    try {
      checkMuseTalkGraph(session, graph);
    } catch (cause) {
      throw new MuseTalkInstallError((cause as Error).message);
    } finally {
      await session.release();
    }
    graphs[graph] = { ...facts[0]!, ...(facts[1] === undefined ? {} : { externalData: facts[1] }) };
  }
  const manifest: MuseTalkManifest = {
    schemaVersion: 1,
    name,
    task: 'lipsync-musetalk',
    description: `MuseTalk 1.5 (TMElyralab) exported to ONNX by the operator from the official weights, installed from ${path.basename(from)}`,
    testModel: false,
    licences: MUSETALK_LICENCES.map((l) => ({ ...l })),
    commercialUse: { ...MUSETALK_COMMERCIAL_USE },
    source: {
      kind: 'installed',
      instructions:
        'export the graphs with the recipe in docs/lipsync.md ("MuseTalk 1.5") and install them with node dist/scripts/install-musetalk-model.js --from DIR',
    },
    graphs,
    batch,
  };
  const modelsDir = path.resolve(options.modelsDir ?? defaultModelsDir());
  const filesDir = path.resolve(options.filesDir ?? modelsDir);
  const dir = museTalkGraphDir(filesDir, name);
  await mkdir(path.dirname(dir), { recursive: true });
  // Copied beside the final folder (one filesystem), named after this process so that a worker's
  // sweep removes it if the installer is killed; then swapped in.
  const staging = path.join(path.dirname(dir), ownedTempName(`install-${name}`));
  const old = path.join(path.dirname(dir), ownedTempName(`old-${name}`));
  try {
    await mkdir(staging);
    for (const f of files) await copyFile(path.join(from, f), path.join(staging, f));
    await rename(dir, old).catch((cause: NodeJS.ErrnoException) => {
      if (cause.code !== 'ENOENT') throw cause;
    });
    await rename(staging, dir);
    const manifestPath = museTalkManifestPath(modelsDir, name);
    await mkdir(path.dirname(manifestPath), { recursive: true });
    await writeFileAtomic(manifestPath, new TextEncoder().encode(formatMuseTalkManifest(manifest)));
    return { manifest, manifestPath, dir };
  } finally {
    await rm(staging, { recursive: true, force: true });
    await rm(old, { recursive: true, force: true });
  }
}

const USAGE = `Usage: node dist/scripts/install-musetalk-model.js --from DIR [options]

Checks and installs the five MuseTalk 1.5 ONNX graphs exported by the recipe in docs/lipsync.md.

Options:
  --from DIR          the export: <graph>.onnx (and .onnx.data) for whisper_encoder, positional_encoding,
                      vae_encoder, unet, vae_decoder, and SHA256SUMS (required)
  --sha256sums FILE   the checksums (default DIR/SHA256SUMS)
  --name NAME         the network's name, starting with musetalk (default ${DEFAULT_MUSETALK_NAME})
  --models-dir DIR    where the manifest goes (default MEDIA_WORKER_MODELS_DIR, else <package>/models)
  --files-dir DIR     where the graphs go (default MEDIA_WORKER_MODEL_FILES_DIR, else the models dir)
  --batch N           frames per UNet call by default (default 8)
  -h, --help          this text
`;

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      from: { type: 'string' },
      sha256sums: { type: 'string' },
      name: { type: 'string' },
      'models-dir': { type: 'string' },
      'files-dir': { type: 'string' },
      batch: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help === true) {
    process.stdout.write(USAGE);
    return;
  }
  if (values.from === undefined)
    throw new MuseTalkInstallError(`Expected --from DIR (the exported graphs)\n\n${USAGE}`);
  const config = loadConfig(process.env);
  const filesDir = values['files-dir'] ?? config.modelFilesDir;
  const { manifest, manifestPath, dir } = await installMuseTalkModel({
    from: values.from,
    ...(values.sha256sums === undefined ? {} : { sha256sums: values.sha256sums }),
    ...(values.name === undefined ? {} : { name: values.name }),
    modelsDir: values['models-dir'] ?? config.modelsDir,
    ...(filesDir === undefined ? {} : { filesDir }),
    ...(values.batch === undefined ? {} : { batch: Number(values.batch) }),
  });
  for (const g of MUSETALK_GRAPHS)
    console.log(
      `${manifest.graphs[g].sha256}  ${path.join(dir, manifest.graphs[g].file)}  ${manifest.graphs[g].bytes} bytes`,
    );
  console.log(`manifest written: ${manifestPath}`);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exitCode = 1;
  });
}
