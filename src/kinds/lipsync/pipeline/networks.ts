/**
 * The lip-sync network a job runs on, whichever the manifest its model id maps to is for
 * (MEDIA_WORKER_LIPSYNC_MODELS; settings.ts lipsyncNetworkOf): Wav2Lip's contract or MuseTalk 1.5. Both give the
 * pipeline the same three things: a name for the outcome, the rate the job's audio is decoded at,
 * and, per output pass, a FaceGenerator with the fitted audio made into the network's features.
 */
import { ProcessingError } from '../../../errors.js';
import { defaultModelsDir, type RegistryOptions, type SessionCache } from '../../../inference/index.js';
import type { LipsyncModelId } from '../../../jobs/index.js';
import { definedFields } from '../../../defined-fields.js';
import { melSpectrogram } from './audio/index.js';
import { wav2lipGenerator, type FaceGenerator } from './compose/index.js';
import { loadLipsyncModel, loadThreadedLipsyncModel, type LipsyncModel } from './network/index.js';
import {
  loadMuseTalk,
  MUSETALK_FACE_SIZE,
  MUSETALK_UPPER_BOUNDARY,
  WHISPER_SAMPLE_RATE,
  type MuseTalkEngine,
  type MuseTalkPreparedFace,
} from './musetalk/index.js';
import { lipsyncProfile } from '../contract/profiles.js';
import { DEFAULT_LIPSYNC_MODEL_MAPPING, lipsyncNetworkOf, type LipsyncModelMapping } from '../settings.js';
import type { Rational } from './timeline.js';

export interface PipelineNetwork {
  /** The manifest that runs, and whether it is a generated test network. */
  readonly name: string;
  readonly testModel: boolean;
  /** The job's audio is decoded at this rate, mono. */
  readonly sampleRate: number;
  /** The network for one output pass, over the audio fitted to its timeline (`fps`: the timeline's). */
  generator(fitted: Float32Array, fps: Rational, signal?: AbortSignal): Promise<FaceGenerator>;
}

export interface NetworkChoice {
  sessions: SessionCache;
  registry: RegistryOptions;
  /** Which manifest serves each id, and so which network; default DEFAULT_LIPSYNC_MODEL_MAPPING. */
  mapping?: LipsyncModelMapping;
  /** Wav2Lip: on a worker thread of its own (default true). */
  modelThread?: boolean;
  /** Wav2Lip: a stand-in loader (benchmarks). */
  loadModel?: (modelId: LipsyncModelId) => Promise<LipsyncModel>;
  /** Faces per network call; default the manifest's. */
  batch?: number;
}

/**
 * Loads the network that serves `model`: the one its manifest is for. Refuses a network its profile
 * does not allow (the settings refuse such a mapping already; a mapping built in code is checked here).
 */
export async function loadPipelineNetwork(model: LipsyncModelId, o: NetworkChoice): Promise<PipelineNetwork> {
  const manifest = (o.mapping ?? DEFAULT_LIPSYNC_MODEL_MAPPING)[model];
  const network = lipsyncNetworkOf(manifest);
  const profile = lipsyncProfile(model);
  if (!profile.networks.includes(network))
    throw new ProcessingError(
      `Expected a network that serves ${model} (${profile.networks.join(', ')}) but it is mapped to ${manifest}, a ${network} manifest`,
    );
  return network === 'musetalk' ? museTalkNetwork(manifest, o) : wav2lipNetwork(model, o);
}

async function wav2lipNetwork(modelId: LipsyncModelId, o: NetworkChoice): Promise<PipelineNetwork> {
  const load =
    o.loadModel ??
    ((id: LipsyncModelId) =>
      (o.modelThread === false ? loadLipsyncModel : loadThreadedLipsyncModel)(id, {
        sessions: o.sessions,
        registry: o.registry,
        ...definedFields({ mapping: o.mapping, batch: o.batch }),
      }));
  const model = await load(modelId);
  const { manifest } = model;
  const faceSize = manifest.face.size;
  const [, outC, outH, outW] = manifest.output.shape;
  if (outC !== 3 || outH !== faceSize || outW !== faceSize) {
    throw new ProcessingError(
      `Expected ${manifest.name} to return [B, 3, ${faceSize}, ${faceSize}] faces but its manifest says [B, ${outC}, ${outH}, ${outW}]`,
    );
  }
  const { align } = lipsyncProfile(modelId);
  return {
    name: model.name,
    testModel: model.testModel,
    sampleRate: manifest.audio.sampleRate,
    generator: async (fitted, fps) =>
      wav2lipGenerator({ model, mel: melSpectrogram(fitted, manifest.audio), fps, align }) as FaceGenerator,
  };
}

/**
 * Engines loaded per session cache, manifest and batch: a real export's graphs are hashed once per
 * process, not per job (a failed load is tried again next time).
 */
const engines = new WeakMap<SessionCache, Map<string, Promise<MuseTalkEngine>>>();

export function loadMuseTalkEngine(
  name: string,
  o: Pick<NetworkChoice, 'sessions' | 'registry' | 'batch'>,
): Promise<MuseTalkEngine> {
  const modelsDir = o.registry.modelsDir ?? defaultModelsDir();
  const key = JSON.stringify([modelsDir, o.registry.filesDir, name, o.batch]);
  let byKey = engines.get(o.sessions);
  if (byKey === undefined) engines.set(o.sessions, (byKey = new Map()));
  const known = byKey.get(key);
  if (known !== undefined) return known;
  const loading = loadMuseTalk(name, {
    sessions: o.sessions,
    modelsDir,
    ...definedFields({ filesDir: o.registry.filesDir, batch: o.batch }),
  });
  byKey.set(key, loading);
  loading.catch(() => byKey.delete(key));
  return loading;
}

async function museTalkNetwork(manifest: string, o: NetworkChoice): Promise<PipelineNetwork> {
  const engine = await loadMuseTalkEngine(manifest, o);
  return {
    name: engine.manifest.name,
    testModel: engine.manifest.testModel,
    sampleRate: WHISPER_SAMPLE_RATE,
    async generator(fitted, fps, signal) {
      const audio = await engine.audio(fitted, signal);
      const generator: FaceGenerator<MuseTalkPreparedFace> = {
        name: engine.manifest.name,
        testModel: engine.manifest.testModel,
        batch: engine.batch,
        faceSize: MUSETALK_FACE_SIZE,
        mouthTop: MUSETALK_UPPER_BOUNDARY,
        prepare: (frame, box, outputFrame) => engine.prepare(frame, box, outputFrame),
        generate: (items, stop) => engine.generate(items, audio, fps, stop),
        paste: (frame, item, face) => engine.blend(frame, item, face.data, face.size),
      };
      return generator as FaceGenerator;
    },
  };
}
