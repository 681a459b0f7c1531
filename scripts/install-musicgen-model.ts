/**
 * Installs real MusicGen weights (the ONNX export in the Xenova/musicgen-small layout) that an
 * operator provides. They are CC-BY-NC-4.0 (non-commercial): the worker never fetches them itself.
 *
 *   npx tsc -p tsconfig.json && node dist/scripts/install-musicgen-model.js --checksums FILE
 *       (--base-url URL | --from DIR) [--name musicgen-small] [--models-dir DIR] [--max-bytes N]
 *
 * FILE lists every file to install in `sha256sum` format ("<hex>  <relative path>"), at least
 * onnx/text_encoder.onnx, onnx/decoder_model_merged.onnx, onnx/encodec_decode.onnx, config.json,
 * generation_config.json and tokenizer.json (plus any external-data files the graphs use). Each file
 * is downloaded from <base-url>/<path> with the project's safe fetch (size cap, timeouts, no private
 * addresses) or copied from DIR, its sha256 checked, the graphs opened and checked against the
 * contract, and only then is the folder moved into place with media-worker-model.json recording
 * every checksum (verified again before the first load). Nothing is installed when a check fails.
 */
import { randomUUID } from 'node:crypto';
import { copyFile, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { defaultModelsDir, sha256File } from '../src/inference/index.js';
import { localize, type FetchOptions } from '../src/media/index.js';
import { FOLDER_MANIFEST, REQUIRED_FILES, inspectMusicgenFolder } from '../src/kinds/music/pipeline/index.js';

export const MUSICGEN_LICENCE = {
  spdx: 'CC-BY-NC-4.0',
  holder: 'Meta Platforms, Inc. (MusicGen weights); ONNX export by Xenova',
  url: 'https://huggingface.co/facebook/musicgen-small',
  commercialUse: false,
} as const;

/** The fp32 decoder of musicgen-small is about 1.7 GB. */
export const DEFAULT_MAX_FILE_BYTES = 4 * 1024 * 1024 * 1024;

export class InstallError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'InstallError';
  }
}

export interface InstallMusicgenOptions {
  /** sha256sum-format text. */
  checksums: string;
  baseUrl?: string;
  from?: string;
  name?: string;
  modelsDir?: string;
  maxBytes?: number;
  fetch?: FetchOptions;
  signal?: AbortSignal;
}

/** "<hex>  <path>" lines (a `*` before the path, binary mode, allowed); relative paths only. */
export function parseChecksums(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const [i, raw] of text.split('\n').entries()) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([0-9a-fA-F]{64})\s+\*?(.+)$/.exec(line);
    if (m === null)
      throw new InstallError(
        `Expected "<sha256>  <path>" on checksums line ${i + 1} but received ${JSON.stringify(line.slice(0, 80))}`,
      );
    const rel = path.posix.normalize(m[2] as string);
    if (rel.startsWith('../') || path.isAbsolute(rel) || rel === FOLDER_MANIFEST)
      throw new InstallError(
        `Expected a relative path inside the model folder on line ${i + 1} but received ${JSON.stringify(m[2])}`,
      );
    out.set(rel, (m[1] as string).toLowerCase());
  }
  const missing = REQUIRED_FILES.filter((f) => !out.has(f));
  if (missing.length > 0) throw new InstallError(`Expected the checksums to list ${missing.join(', ')}`);
  return out;
}

export async function installMusicgenModel(options: InstallMusicgenOptions): Promise<{ dir: string; files: number }> {
  const name = options.name ?? 'musicgen-small';
  if (!/^[a-z0-9][a-z0-9.-]*$/.test(name))
    throw new InstallError(
      `Expected a folder name of lower-case letters, digits, dots and dashes but received ${JSON.stringify(name)}`,
    );
  if ((options.baseUrl === undefined) === (options.from === undefined))
    throw new InstallError('Expected exactly one of --base-url URL and --from DIR');
  const sums = parseChecksums(options.checksums);
  const modelsDir = path.resolve(options.modelsDir ?? defaultModelsDir());
  await mkdir(modelsDir, { recursive: true });
  const work = path.join(modelsDir, `.install-${randomUUID()}`);
  await mkdir(work);
  try {
    const entries: Record<string, { sha256: string; bytes: number }> = {};
    for (const [rel, expected] of sums) {
      const target = path.join(work, rel);
      await mkdir(path.dirname(target), { recursive: true });
      if (options.from !== undefined) await copyFile(path.join(options.from, rel), target);
      else {
        const url = new URL(rel, options.baseUrl?.endsWith('/') ? options.baseUrl : `${options.baseUrl}/`).toString();
        const tmp = path.join(work, '.download');
        await mkdir(tmp, { recursive: true });
        try {
          const got = await localize(url, 'video', {
            ...options.fetch,
            detailedNetworkErrors: true,
            dir: tmp,
            maxBytes: { video: options.maxBytes ?? DEFAULT_MAX_FILE_BYTES },
            ...(options.signal ? { signal: options.signal } : {}),
          });
          await rename(got.path, target);
        } catch (cause) {
          throw new InstallError(
            `Expected to download ${rel} but ${(cause as Error).message.replaceAll('the video input', rel)}`,
            { cause },
          );
        }
      }
      const actual = await sha256File(target);
      if (actual !== expected)
        throw new InstallError(`${rel} has sha256 ${actual} but ${expected} was expected: refusing to install`);
      entries[rel] = { sha256: actual, bytes: (await readFile(target)).byteLength };
    }
    await rm(path.join(work, '.download'), { recursive: true, force: true });
    await inspectMusicgenFolder(work).catch((cause: unknown) => {
      throw new InstallError(
        `The files do not have MusicGen's ONNX contract: ${(cause as Error).message.split('\n', 1)[0]}`,
        { cause },
      );
    });
    const manifest = {
      schemaVersion: 1,
      name,
      testModel: false,
      description: `MusicGen ONNX export installed by the operator from ${options.baseUrl === undefined ? 'a local copy' : new URL(options.baseUrl).host}. Instrumental music only; non-commercial licence.`,
      licence: MUSICGEN_LICENCE,
      source: { kind: 'external', ...(options.baseUrl === undefined ? {} : { url: options.baseUrl }) },
      files: entries,
    };
    await writeFile(path.join(work, FOLDER_MANIFEST), `${JSON.stringify(manifest, null, 2)}\n`);
    const dir = path.join(modelsDir, name);
    const old = path.join(modelsDir, `.old-${randomUUID()}`);
    await rename(dir, old).catch(() => undefined);
    await rename(work, dir);
    await rm(old, { recursive: true, force: true });
    return { dir, files: sums.size };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      checksums: { type: 'string' },
      'base-url': { type: 'string' },
      from: { type: 'string' },
      name: { type: 'string' },
      'models-dir': { type: 'string' },
      'max-bytes': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help === true) {
    console.log(
      'usage: node dist/scripts/install-musicgen-model.js --checksums FILE (--base-url URL | --from DIR) [--name musicgen-small] [--models-dir DIR] [--max-bytes N]\n' +
        "Installs MusicGen ONNX weights (CC-BY-NC-4.0) after checking every sha256 in FILE and the graphs' contract; see docs/music.md.",
    );
    return;
  }
  if (values.checksums === undefined)
    throw new InstallError('Expected --checksums FILE (sha256sum format) and --base-url URL or --from DIR');
  const maxBytes = values['max-bytes'] === undefined ? undefined : Number(values['max-bytes']);
  if (maxBytes !== undefined && !(Number.isInteger(maxBytes) && maxBytes > 0))
    throw new InstallError(
      `Expected a positive integer for --max-bytes but received ${JSON.stringify(values['max-bytes'])}`,
    );
  const result = await installMusicgenModel({
    checksums: await readFile(values.checksums, 'utf8'),
    ...(values['base-url'] ? { baseUrl: values['base-url'] } : {}),
    ...(values.from ? { from: values.from } : {}),
    ...(values.name ? { name: values.name } : {}),
    ...(values['models-dir'] ? { modelsDir: values['models-dir'] } : {}),
    ...(maxBytes ? { maxBytes } : {}),
  });
  console.log(`installed ${result.files} files into ${result.dir} (licence ${MUSICGEN_LICENCE.spdx})`);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exitCode = 1;
  });
}
