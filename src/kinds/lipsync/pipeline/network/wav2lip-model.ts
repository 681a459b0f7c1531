/**
 * The lip-sync network: Wav2Lip's ONNX contract, which manifest serves each public model id, and
 * loading and running it. Real weights an operator installs (scripts/install-lipsync-model.ts) and
 * the project's generated test model (wav2lip-test) load through the same code: manifest ->
 * verified file -> cached ONNX Runtime session.
 *
 * The contract (as the public Wav2Lip exports have it):
 * - `mel_spectrogram` [B, 1, 80, 16]: one window of 16 mel frames (0.2 s) per face, Wav2Lip's
 *   features (16 kHz, n_fft 800, hop 200, 80 bands 55-7600 Hz, normalised to [-4, 4]);
 * - `video_frames` [B, 6, 96, 96]: the face crop with its lower half zeroed, then a reference crop
 *   of the same face, BGR (Wav2Lip was trained on OpenCV frames) in 0..1;
 * - one output [B, 3, 96, 96]: the face with a mouth matching the audio, BGR in 0..1.
 */
import ort from 'onnxruntime-node';
import { ProcessingError } from '../../../../errors.js';
import type { LipsyncModelId } from '../../../../jobs/index.js';
import {
  MANIFEST_SCHEMA_VERSION,
  type LipsyncManifest,
  ensureModelFile,
  getManifest,
  ModelIntegrityError,
  ModelRegistryError,
  type RegistryOptions,
  type NamedTensor,
  type SessionCache,
} from '../../../../inference/index.js';
import { rawSession } from '../faces/index.js';
import {
  DEFAULT_LIPSYNC_MODEL_MAPPING,
  REAL_LIPSYNC_MODEL,
  TEST_LIPSYNC_MODEL,
  type LipsyncModelMapping,
} from '../../settings.js';
import { WAV2LIP_MEL } from '../audio/index.js';
import { withLipsyncGenerators } from './wav2lip-test-model.js';

export const WAV2LIP_MEL_INPUT = 'mel_spectrogram';
export const WAV2LIP_FACES_INPUT = 'video_frames';
export const WAV2LIP_FACE_SIZE = 96;
export const WAV2LIP_MEL_BANDS = WAV2LIP_MEL.melBands;
export const WAV2LIP_MEL_WINDOW = WAV2LIP_MEL.windowFrames;

/** How operators install real weights (named in every "not installed" message). */
export function installCommand(name = REAL_LIPSYNC_MODEL): string {
  const suffix = name === REAL_LIPSYNC_MODEL ? '' : ` --name ${name}`;
  return `node dist/scripts/install-lipsync-model.js --url URL --sha256 HEX${suffix}`;
}

/** The parts of a lip-sync manifest that every Wav2Lip-contract model shares. */
export function wav2lipContract(
  outputName: string,
): Pick<LipsyncManifest, 'inputs' | 'output' | 'face' | 'audio' | 'batch'> {
  return {
    inputs: {
      mel: {
        name: WAV2LIP_MEL_INPUT,
        dtype: 'float32',
        layout: 'NCHW',
        shape: ['B', 1, WAV2LIP_MEL_BANDS, WAV2LIP_MEL_WINDOW],
        range: [-WAV2LIP_MEL.maxAbs, WAV2LIP_MEL.maxAbs],
      },
      faces: {
        name: WAV2LIP_FACES_INPUT,
        dtype: 'float32',
        layout: 'NCHW',
        shape: ['B', 6, WAV2LIP_FACE_SIZE, WAV2LIP_FACE_SIZE],
        channels: 'BGR',
        range: [0, 1],
      },
    },
    output: {
      name: outputName,
      dtype: 'float32',
      layout: 'NCHW',
      shape: ['B', 3, WAV2LIP_FACE_SIZE, WAV2LIP_FACE_SIZE],
      channels: 'BGR',
      range: [0, 1],
    },
    face: { size: WAV2LIP_FACE_SIZE, maskFromRow: 0.5, pads: [0, 10, 0, 0] },
    // The features the networks were trained on (mel.ts), as the manifest states them.
    audio: { ...WAV2LIP_MEL, framesPerSecond: WAV2LIP_MEL.sampleRate / WAV2LIP_MEL.hop },
    batch: 16,
  };
}

export const WAV2LIP_LICENCE = {
  spdx: 'LicenseRef-Wav2Lip-research',
  holder: 'Rudrabha Mukhopadhyay, K R Prajwal and co-authors (IIIT Hyderabad)',
  upstream: 'https://github.com/Rudrabha/Wav2Lip',
  // Its README: "any form of commercial use is strictly prohibited".
  commercialUse: false,
} as const;

/** Manifest for a Wav2Lip-contract file (the install script's, and the test model's via its generator). */
export function buildLipsyncManifest(fields: {
  name: string;
  description: string;
  sha256: string;
  bytes: number;
  opset: number;
  params: number;
  outputName: string;
  architecture: string;
  testModel: boolean;
  licence: LipsyncManifest['licence'];
  source: LipsyncManifest['source'];
}): LipsyncManifest {
  return {
    schemaVersion: MANIFEST_SCHEMA_VERSION,
    name: fields.name,
    task: 'lipsync',
    description: fields.description,
    file: `${fields.name}.onnx`,
    sha256: fields.sha256,
    bytes: fields.bytes,
    format: 'onnx',
    opset: fields.opset,
    params: fields.params,
    licence: fields.licence,
    source: fields.source,
    architecture: fields.architecture,
    testModel: fields.testModel,
    ...wav2lipContract(fields.outputName),
  };
}

// ------------------------------------------------------------------ loading and running

export interface LipsyncModel {
  /** The manifest's name. */
  readonly name: string;
  readonly manifest: LipsyncManifest;
  /** True for the generated test model. */
  readonly testModel: boolean;
  /** Faces per call the pipeline should gather (the manifest's, or the loader's override). */
  readonly batch: number;
  /**
   * `count` faces: mel [count*80*16], faces [count*6*96*96] (masked then reference, BGR 0..1) in,
   * [count*3*96*96] BGR 0..1 out (clamped). Any count; graphs with a fixed batch are fed in chunks.
   */
  run(mel: Float32Array, faces: Float32Array, count: number): Promise<Float32Array>;
}

export interface LoadLipsyncModelOptions {
  /**
   * Made with `{ thread: false }`: the network has two inputs (see blazeface.ts rawSession). On a
   * worker thread (model-thread.ts) only its settings are used: the session opens on the thread.
   */
  sessions: SessionCache;
  mapping?: LipsyncModelMapping;
  registry?: RegistryOptions;
  /** Faces per call override. */
  batch?: number;
}

function notInstalled(modelId: string, name: string, detail: string, cause: unknown): ProcessingError {
  return new ProcessingError(
    `Expected lip-sync weights ${name} for ${modelId} but they are not installed (${detail}): install real Wav2Lip ONNX weights with ` +
      `${installCommand(name)} run with the worker's environment (it writes where MEDIA_WORKER_MODELS_DIR and MEDIA_WORKER_MODEL_FILES_DIR point), ` +
      `or select the test model explicitly (mapping ${modelId} to ${TEST_LIPSYNC_MODEL}; it does not lip-sync)`,
    { cause },
  );
}

/**
 * What the contract check reads of a graph: an ONNX Runtime session, or a worker thread's
 * description of its session (session-thread.ts).
 */
export type LipsyncGraph = Pick<ort.InferenceSession, 'inputNames' | 'outputNames' | 'inputMetadata'>;

/** One call of the network: float32 inputs by name in, the named output's data out (checked by the caller). */
export type LipsyncRun = (feeds: readonly NamedTensor[], output: string) => Promise<unknown>;

function fixedBatch(session: LipsyncGraph, input: string): number | undefined {
  const meta = session.inputMetadata.find((m) => m.name === input);
  const first = meta !== undefined && meta.isTensor ? meta.shape[0] : undefined;
  return typeof first === 'number' && first > 0 ? first : undefined;
}

/** Checks the graph against the manifest's contract; returns the fixed batch, if any. */
export function checkLipsyncGraph(
  session: LipsyncGraph,
  manifest: Pick<LipsyncManifest, 'name' | 'inputs' | 'output'>,
): number | undefined {
  const wanted = [manifest.inputs.mel.name, manifest.inputs.faces.name];
  const missing = wanted.filter((n) => !session.inputNames.includes(n));
  if (missing.length > 0 || !session.outputNames.includes(manifest.output.name)) {
    throw new Error(
      `Expected ${manifest.name} to take ${wanted.join(' and ')} and return ${manifest.output.name} but its graph takes ` +
        `${session.inputNames.join(', ')} and returns ${session.outputNames.join(', ')}`,
    );
  }
  const melBatch = fixedBatch(session, manifest.inputs.mel.name);
  const faceBatch = fixedBatch(session, manifest.inputs.faces.name);
  if (melBatch !== faceBatch) {
    throw new Error(
      `Expected ${manifest.name}'s inputs to share one batch dimension but they have ${String(melBatch)} and ${String(faceBatch)}`,
    );
  }
  return melBatch;
}

/**
 * The LipsyncModel contract over a way to run the network: on the calling thread (OnnxLipsyncModel)
 * or on a worker thread (model-thread.ts). Checks the graph, splits the faces into the graph's
 * batches and clamps the output.
 */
export class LipsyncNetworkModel implements LipsyncModel {
  readonly name: string;
  readonly manifest: LipsyncManifest;
  readonly testModel: boolean;
  readonly batch: number;
  readonly #runNetwork: LipsyncRun;
  readonly #fixedBatch: number | undefined;

  constructor(manifest: LipsyncManifest, graph: LipsyncGraph, runNetwork: LipsyncRun, batch?: number) {
    this.name = manifest.name;
    this.manifest = manifest;
    this.testModel = manifest.testModel;
    this.#runNetwork = runNetwork;
    this.#fixedBatch = checkLipsyncGraph(graph, manifest);
    this.batch = this.#fixedBatch ?? batch ?? manifest.batch;
    if (!(Number.isInteger(this.batch) && this.batch > 0))
      throw new RangeError(`Expected a positive integer batch but received ${this.batch}`);
  }

  async run(mel: Float32Array, faces: Float32Array, count: number): Promise<Float32Array> {
    const [, , melH, melW] = this.manifest.inputs.mel.shape;
    const [, faceC, faceH, faceW] = this.manifest.inputs.faces.shape;
    const [, outC, outH, outW] = this.manifest.output.shape;
    const melSize = melH * melW;
    const faceSize = faceC * faceH * faceW;
    const outSize = outC * outH * outW;
    if (!(Number.isInteger(count) && count > 0))
      throw new RangeError(`Expected a positive integer face count but received ${count}`);
    if (mel.length !== count * melSize || faces.length !== count * faceSize) {
      throw new RangeError(
        `Expected ${count * melSize} mel values and ${count * faceSize} face values for ${count} faces but received ${mel.length} and ${faces.length}`,
      );
    }
    const out = new Float32Array(count * outSize);
    const chunk = this.#fixedBatch ?? count;
    for (let start = 0; start < count; start += chunk) {
      const n = Math.min(chunk, count - start);
      const size = this.#fixedBatch ?? n;
      // A fixed-batch graph gets its last chunk padded with zeros; the padding's output is dropped.
      const melChunk =
        size === n
          ? mel.subarray(start * melSize, (start + n) * melSize)
          : padded(mel, start * melSize, n * melSize, size * melSize);
      const faceChunk =
        size === n
          ? faces.subarray(start * faceSize, (start + n) * faceSize)
          : padded(faces, start * faceSize, n * faceSize, size * faceSize);
      const data = await this.#runNetwork(
        [
          { name: this.manifest.inputs.mel.name, data: melChunk, dims: [size, 1, melH, melW] },
          { name: this.manifest.inputs.faces.name, data: faceChunk, dims: [size, faceC, faceH, faceW] },
        ],
        this.manifest.output.name,
      );
      if (!(data instanceof Float32Array) || data.length < n * outSize) {
        throw new Error(
          `Expected ${this.name} to return float32 ${this.manifest.output.name} of ${size * outSize} values`,
        );
      }
      const [low, high] = this.manifest.output.range;
      for (let i = 0; i < n * outSize; i += 1) {
        const v = data[i] as number;
        out[start * outSize + i] = v < low ? low : v > high ? high : v;
      }
    }
    return out;
  }
}

/** The network on the calling thread. */
export class OnnxLipsyncModel extends LipsyncNetworkModel {
  constructor(manifest: LipsyncManifest, session: ort.InferenceSession, batch?: number) {
    const runNetwork: LipsyncRun = async (feeds, output) => {
      const result = await session.run(
        Object.fromEntries(feeds.map((f) => [f.name, new ort.Tensor('float32', f.data, f.dims)])),
      );
      return result[output]?.data;
    };
    super(manifest, session, runNetwork, batch);
  }
}

function padded(source: Float32Array, offset: number, length: number, size: number): Float32Array {
  const out = new Float32Array(size);
  out.set(source.subarray(offset, offset + length));
  return out;
}

/**
 * The manifest serving a public model id and its verified file. Fails with a ProcessingError (the
 * job's LIPSYNC_FAILED) when the mapped weights are not installed (naming the install command) or
 * do not verify.
 */
export async function lipsyncModelFile(
  modelId: LipsyncModelId,
  options: Pick<LoadLipsyncModelOptions, 'mapping' | 'registry'>,
): Promise<{ manifest: LipsyncManifest; path: string }> {
  const mapping = options.mapping ?? DEFAULT_LIPSYNC_MODEL_MAPPING;
  const name = mapping[modelId];
  const registry = withLipsyncGenerators(options.registry ?? {});
  let manifest;
  try {
    manifest = await getManifest(name, registry);
  } catch (error) {
    if (error instanceof ModelRegistryError) throw notInstalled(modelId, name, 'no manifest', error);
    throw new ProcessingError(`Expected a valid manifest for lip-sync model ${name} but ${(error as Error).message}`, {
      cause: error,
    });
  }
  if (manifest.task !== 'lipsync') {
    throw new ProcessingError(`Expected a lip-sync model for ${modelId} but ${name} is a ${manifest.task} model`);
  }
  let file;
  try {
    file = await ensureModelFile(name, registry);
  } catch (error) {
    if (error instanceof ModelRegistryError && manifest.source.kind === 'external')
      throw notInstalled(modelId, name, 'no weights file', error);
    const retryable = !(error instanceof ModelIntegrityError);
    throw new ProcessingError(`Expected to load lip-sync model ${name} but ${(error as Error).message}`, {
      cause: error,
      retryable,
    });
  }
  return { manifest, path: file.path };
}

/**
 * The lip-sync network serving a public model id, on the calling thread. Fails as lipsyncModelFile
 * does, and when the graph does not open or breaks the contract.
 */
export async function loadLipsyncModel(
  modelId: LipsyncModelId,
  options: LoadLipsyncModelOptions,
): Promise<LipsyncModel> {
  const file = await lipsyncModelFile(modelId, options);
  const session = rawSession(await options.sessions.get(file.path), file.manifest.name);
  return new OnnxLipsyncModel(file.manifest, session, options.batch);
}
