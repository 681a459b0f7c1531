/**
 * Installs real lip-sync weights (a Wav2Lip ONNX export) that an operator provides.
 *
 *   node dist/scripts/install-lipsync-model.js --url URL --sha256 HEX [--name wav2lip]
 *       [--models-dir DIR] [--files-dir DIR] [--max-bytes N] [--licence-spdx ID --licence-holder TEXT --licence-url URL]
 *
 * Writes where the worker reads: the manifest into MEDIA_WORKER_MODELS_DIR and the weights into
 * MEDIA_WORKER_MODEL_FILES_DIR (else beside the manifest), read from the environment like every
 * command's settings (so run it with the worker's environment file); --models-dir and --files-dir
 * override them. Downloads over https with the project's safe fetch (size cap, timeouts, no private
 * addresses; MEDIA_WORKER_ALLOW_PRIVATE_URLS=1 lifts that for tests), verifies the sha256 given,
 * checks that the graph has Wav2Lip's contract (inputs mel_spectrogram [B,1,80,16] and video_frames
 * [B,6,96,96], one [B,3,96,96] output), then writes <name>.onnx and <name>.json, each atomically.
 * Nothing is written when a check fails. The default name, wav2lip, is what every lip-sync model id
 * maps to by default. A running worker notices the new model at its next readiness check.
 */
import { mkdir, readFile, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/config.js';
import { ownedTempName, localize, type FetchOptions } from '../src/media/index.js';
import onnxProto from 'onnx-proto';
import ort from 'onnxruntime-node';
import {
  allowsCommercialUse,
  writeFileAtomic,
  formatManifest,
  type LipsyncManifest,
  defaultModelsDir,
  forgetVerifiedModels,
  sha256File,
} from '../src/inference/index.js';
import {
  buildLipsyncManifest,
  checkLipsyncGraph,
  REAL_LIPSYNC_MODEL,
  WAV2LIP_FACE_SIZE,
  WAV2LIP_FACES_INPUT,
  WAV2LIP_LICENCE,
  WAV2LIP_MEL_BANDS,
  WAV2LIP_MEL_INPUT,
  WAV2LIP_MEL_WINDOW,
} from '../src/kinds/lipsync/pipeline/index.js';

/** The public Wav2Lip GAN export is about 140 MB. */
export const DEFAULT_MAX_MODEL_BYTES = 1024 * 1024 * 1024;

export interface InstallOptions {
  url: string;
  sha256: string;
  name?: string;
  /** Where the manifest goes (the worker's MEDIA_WORKER_MODELS_DIR). */
  modelsDir?: string;
  /** Where the weights go (the worker's MEDIA_WORKER_MODEL_FILES_DIR); default: modelsDir. */
  filesDir?: string;
  maxBytes?: number;
  licence?: LipsyncManifest['licence'];
  /** Passed to the safe fetch (tests: allowHttp and allowPrivate for a local server). */
  fetch?: FetchOptions;
  signal?: AbortSignal;
}

export class InstallError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'InstallError';
  }
}

function dimsOf(session: ort.InferenceSession, name: string, kind: 'input' | 'output'): readonly (number | string)[] {
  const meta = (kind === 'input' ? session.inputMetadata : session.outputMetadata).find((m) => m.name === name);
  return meta !== undefined && meta.isTensor ? meta.shape : [];
}

function sameTail(dims: readonly (number | string)[], tail: readonly number[]): boolean {
  return dims.length === tail.length + 1 && tail.every((d, i) => dims[i + 1] === d);
}

/** Opens the file with ONNX Runtime and checks Wav2Lip's contract; returns the output's name. */
async function inspectGraph(file: string, name: string): Promise<string> {
  const session = await ort.InferenceSession.create(file, { logSeverityLevel: 3 });
  try {
    const outputName = session.outputNames[0];
    if (session.outputNames.length !== 1 || outputName === undefined) {
      throw new InstallError(
        `Expected the model to have one output but it has ${session.outputNames.length}: ${session.outputNames.join(', ')}`,
      );
    }
    const contract = {
      name,
      inputs: { mel: { name: WAV2LIP_MEL_INPUT }, faces: { name: WAV2LIP_FACES_INPUT } },
      output: { name: outputName },
    } as Pick<LipsyncManifest, 'name' | 'inputs' | 'output'>;
    try {
      checkLipsyncGraph(session, contract);
    } catch (cause) {
      throw new InstallError((cause as Error).message, { cause });
    }
    const checks: [string, readonly (number | string)[], number[]][] = [
      [WAV2LIP_MEL_INPUT, dimsOf(session, WAV2LIP_MEL_INPUT, 'input'), [1, WAV2LIP_MEL_BANDS, WAV2LIP_MEL_WINDOW]],
      [WAV2LIP_FACES_INPUT, dimsOf(session, WAV2LIP_FACES_INPUT, 'input'), [6, WAV2LIP_FACE_SIZE, WAV2LIP_FACE_SIZE]],
      [outputName, dimsOf(session, outputName, 'output'), [3, WAV2LIP_FACE_SIZE, WAV2LIP_FACE_SIZE]],
    ];
    for (const [tensor, dims, tail] of checks) {
      if (!sameTail(dims, tail)) {
        throw new InstallError(
          `Expected ${tensor} to have shape [B, ${tail.join(', ')}] but the graph declares [${dims.join(', ')}]`,
        );
      }
    }
    return outputName;
  } finally {
    await session.release();
  }
}

function graphFacts(bytes: Uint8Array): { opset: number; params: number } {
  const model = onnxProto.onnx.ModelProto.decode(bytes);
  const opset = Number(model.opsetImport.find((o) => (o.domain ?? '') === '')?.version ?? 0);
  let params = 0;
  for (const t of model.graph?.initializer ?? []) params += (t.dims ?? []).reduce((a: number, d) => a * Number(d), 1);
  return { opset: Math.max(1, opset), params: Math.max(1, params) };
}

/** Downloads, verifies and installs; returns the manifest written. */
export async function installLipsyncModel(
  options: InstallOptions,
): Promise<{ manifest: LipsyncManifest; file: string; manifestPath: string }> {
  const name = options.name ?? REAL_LIPSYNC_MODEL;
  if (!/^[a-z0-9][a-z0-9.-]*$/.test(name)) {
    throw new InstallError(
      `Expected a model name of lower-case letters, digits, dots and dashes but received ${JSON.stringify(name)}`,
    );
  }
  const expected = options.sha256.toLowerCase();
  if (!/^[0-9a-f]{64}$/.test(expected))
    throw new InstallError(`Expected a sha256 of 64 hex digits but received ${JSON.stringify(options.sha256)}`);
  const modelsDir = path.resolve(options.modelsDir ?? defaultModelsDir());
  const filesDir = path.resolve(options.filesDir ?? modelsDir);
  await mkdir(modelsDir, { recursive: true });
  await mkdir(filesDir, { recursive: true });
  // Inside the weights' directory, so the final rename stays on one filesystem; named after this
  // process, so a worker's sweep removes it if the installer is killed.
  const work = path.join(filesDir, ownedTempName('install'));
  await mkdir(work);
  try {
    let downloaded;
    try {
      downloaded = await localize(options.url, 'video', {
        ...options.fetch,
        detailedNetworkErrors: true,
        dir: work,
        maxBytes: { video: options.maxBytes ?? DEFAULT_MAX_MODEL_BYTES },
        ...(options.signal ? { signal: options.signal } : {}),
      });
    } catch (cause) {
      // The safe fetch words its errors for job inputs ("the video input"); say what this is.
      const detail = (cause as Error).message.replaceAll('the video input', 'the model weights');
      throw new InstallError(`Expected to download the lip-sync weights but ${detail}`, { cause });
    }
    const actual = await sha256File(downloaded.path);
    if (actual !== expected) {
      throw new InstallError(
        `Downloaded weights have sha256 ${actual} but ${expected} was expected: refusing to install them`,
      );
    }
    const outputName = await inspectGraph(downloaded.path, name).catch((cause: unknown) => {
      if (cause instanceof InstallError) throw cause;
      throw new InstallError(
        `Expected an ONNX model that ONNX Runtime can open but ${(cause as Error).message.split('\n', 1)[0]}`,
        { cause },
      );
    });
    const bytes = await readFile(downloaded.path);
    const facts = graphFacts(bytes);
    const manifest = buildLipsyncManifest({
      name,
      description: `Wav2Lip lip-sync weights installed by the operator from ${new URL(options.url).host}`,
      sha256: actual,
      bytes: bytes.byteLength,
      opset: facts.opset,
      params: facts.params,
      outputName,
      architecture: 'Wav2Lip',
      testModel: false,
      licence: options.licence ?? { ...WAV2LIP_LICENCE },
      source: {
        kind: 'external',
        url: options.url,
        instructions: `install it with node dist/scripts/install-lipsync-model.js --url ${options.url} --sha256 ${actual}${name === REAL_LIPSYNC_MODEL ? '' : ` --name ${name}`}`,
      },
    });
    const file = path.join(filesDir, manifest.file);
    const manifestPath = path.join(modelsDir, `${name}.json`);
    await rename(downloaded.path, file);
    await writeFileAtomic(manifestPath, new TextEncoder().encode(formatManifest(manifest)));
    // A long-lived process that verified an older file under this name must check again.
    forgetVerifiedModels();
    return { manifest, file, manifestPath };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

const USAGE = `Usage: node dist/scripts/install-lipsync-model.js --url URL --sha256 HEX [options]

Downloads Wav2Lip ONNX weights, verifies their sha256 and their graph, and installs them where the
worker reads models: the manifest into MEDIA_WORKER_MODELS_DIR, the weights into
MEDIA_WORKER_MODEL_FILES_DIR (else beside the manifest). Run it with the worker's environment
(e.g. \`set -a; . /etc/media-worker/media-worker.env; set +a\`) and as a user that may write there.

Options:
  --url URL             https address of the .onnx weights (required)
  --sha256 HEX          their expected sha256 (required)
  --name NAME           manifest name (default: wav2lip, what every lip-sync model id maps to by default)
  --models-dir DIR      where the manifest goes (default: MEDIA_WORKER_MODELS_DIR, else <package>/models)
  --files-dir DIR       where the weights go (default: MEDIA_WORKER_MODEL_FILES_DIR, else the models dir)
  --max-bytes N         largest download accepted (default: ${DEFAULT_MAX_MODEL_BYTES})
  --licence-spdx ID --licence-holder TEXT --licence-url URL
                        the weights' licence, all three together (default: Wav2Lip's research licence)
  -h, --help            this text
`;

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      url: { type: 'string' },
      sha256: { type: 'string' },
      name: { type: 'string' },
      'models-dir': { type: 'string' },
      'files-dir': { type: 'string' },
      'max-bytes': { type: 'string' },
      'licence-spdx': { type: 'string' },
      'licence-holder': { type: 'string' },
      'licence-url': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help === true) {
    process.stdout.write(USAGE);
    return;
  }
  if (values.url === undefined || values.sha256 === undefined) {
    throw new InstallError(
      `Expected --url URL and --sha256 HEX (the weights to install and their checksum)\n\n${USAGE}`,
    );
  }
  // The same settings as the worker: the layout it reads, and whether private addresses are allowed.
  const config = loadConfig(process.env);
  const licenceGiven = [values['licence-spdx'], values['licence-holder'], values['licence-url']];
  if (licenceGiven.some((v) => v !== undefined) && licenceGiven.some((v) => v === undefined)) {
    throw new InstallError('Expected --licence-spdx, --licence-holder and --licence-url together');
  }
  const maxBytes = values['max-bytes'] === undefined ? undefined : Number(values['max-bytes']);
  if (maxBytes !== undefined && !(Number.isInteger(maxBytes) && maxBytes > 0)) {
    throw new InstallError(
      `Expected a positive integer for --max-bytes but received ${JSON.stringify(values['max-bytes'])}`,
    );
  }
  const filesDir = values['files-dir'] ?? config.modelFilesDir;
  const { manifest, file, manifestPath } = await installLipsyncModel({
    url: values.url,
    sha256: values.sha256,
    ...(values.name ? { name: values.name } : {}),
    modelsDir: values['models-dir'] ?? config.modelsDir,
    ...(filesDir === undefined ? {} : { filesDir }),
    ...(config.allowPrivateUrls ? { fetch: { allowHttp: true, allowPrivate: true } } : {}),
    ...(maxBytes ? { maxBytes } : {}),
    ...(values['licence-spdx'] && values['licence-holder'] && values['licence-url']
      ? {
          licence: withCommercialUse({
            spdx: values['licence-spdx'],
            holder: values['licence-holder'],
            upstream: values['licence-url'],
          }),
        }
      : {}),
  });
  console.log(
    `${manifest.sha256}  ${file}  ${manifest.bytes} bytes  ${manifest.params} params  output ${manifest.output.name}`,
  );
  console.log(`manifest written: ${manifestPath}`);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exitCode = 1;
  });
}

/** A licence given on the command line, with whether it allows commercial use where its SPDX identifier says (inference/licence.ts). */
function withCommercialUse<L extends { spdx: string }>(licence: L): L & { commercialUse?: boolean } {
  const verdict = allowsCommercialUse(licence);
  return verdict === undefined ? licence : { ...licence, commercialUse: verdict };
}
