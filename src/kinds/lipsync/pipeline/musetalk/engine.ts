/**
 * MuseTalk 1.5 in process: its five graphs on ONNX Runtime sessions with the worker's session
 * cache's settings (the same execution providers and threads as every other network), each on a
 * worker thread of its own (graph-threads.ts), and the reference's per-frame flow, for faces the
 * caller has detected:
 *
 *   audio   30 s segments -> log-mel (whisper-mel.ts) -> whisper_encoder, one segment a call
 *   frame   face box (face-geometry.ts) -> 256 x 256 Lanczos crop -> vae_encoder on the crop with its
 *           lower half blacked out and on the whole crop -> 8 x 32 x 32 latents; audio window of
 *           the frame (audio-window.ts) -> positional_encoding; unet; vae_decoder -> 256 x 256 RGB
 *           -> feathered blend into the frame (blend.ts)
 *
 * Frames go through the graphs `batch` at a time, so memory stays bounded by the batch whatever
 * the clip's length. The lip-sync pipeline (timeline, sync modes, tracking, encoding) is the
 * caller's; this module is the network's part.
 */
import ort from 'onnxruntime-node';
import { rawSession } from '../faces/index.js';
import type { ExecutionProviderName, SessionCache } from '../../../../inference/index.js';
import type { Rational } from '../timeline.js';
import type { DeepRgbFrame, FaceBox, RgbFrame } from '../types.js';
import {
  joinWhisperSegments,
  museTalkAudioWindow,
  MUSETALK_AUDIO_ROWS,
  whisperActivePositions,
  WHISPER_TINY_WIDTH,
  type WhisperHiddenStates,
} from './audio-window.js';
import { blendMuseTalkFace, museTalkBlendMask } from './blend.js';
import { cropMuseTalkFace, museTalkDecodedImage, museTalkImageTensor, MUSETALK_FACE_SIZE } from './crop.js';
import { museTalkFaceBox, type MuseTalkFaceOptions, type PixelBox } from './face-geometry.js';
import {
  MUSETALK_CONTRACTS,
  MUSETALK_GRAPHS,
  MUSETALK_LATENT_CHANNELS,
  MUSETALK_LATENT_SIZE,
  type MuseTalkGraph,
} from './graph-contract.js';
import { ensureMuseTalkGraphs, readMuseTalkManifest } from './graph-files.js';
import { checkMuseTalkGraph } from './graph-session.js';
import { threadedGraphs } from './graph-threads.js';
import type { MuseTalkManifest } from './manifest.js';
import { whisperLogMel, whisperSegments, WHISPER_MEL_BANDS, WHISPER_SEGMENT_FRAMES } from './whisper-mel.js';

/** Runs one graph: named float32 inputs in, its one output's values out. */
export type MuseTalkGraphRunner = (
  graph: MuseTalkGraph,
  inputs: Record<string, { data: Float32Array; dims: readonly number[] }>,
) => Promise<Float32Array>;

/** The clip's audio as the UNet reads it. */
export interface MuseTalkAudio {
  states: WhisperHiddenStates;
  active: number;
}

/** A frame to lip-sync: the face the caller chose in it, and which audio frame drives it. */
export interface MuseTalkFrame {
  frame: RgbFrame;
  face: FaceBox;
  /** Index into the audio at `fps` (the timeline's frame). */
  audioFrame: number;
}

/** A face cut out and ready for the graphs: its box in the frame and its 256 x 256 crop. */
export interface MuseTalkPreparedFace {
  face: FaceBox;
  box: PixelBox;
  crop: Uint8Array;
  audioFrame: number;
  /** The box's longer side in frame pixels. */
  screenSize: number;
}

export interface MuseTalkRenderStats {
  /** Frames whose face box was usable and that were blended. */
  rendered: number;
  /** Frames whose box lay outside the frame: passed through untouched. */
  skipped: number;
  /** Graph calls of the UNet. */
  unetCalls: number;
}

const LATENT_PLANE = MUSETALK_LATENT_SIZE * MUSETALK_LATENT_SIZE;
const IMAGE_VALUES = 3 * MUSETALK_FACE_SIZE * MUSETALK_FACE_SIZE;

export class MuseTalkEngine {
  readonly manifest: MuseTalkManifest;
  readonly batch: number;
  /** The execution provider each graph's session opened on, when the loader knows it. */
  readonly providers: Partial<Record<MuseTalkGraph, ExecutionProviderName>>;
  readonly #run: MuseTalkGraphRunner;
  readonly #face: MuseTalkFaceOptions;

  constructor(
    manifest: MuseTalkManifest,
    run: MuseTalkGraphRunner,
    options: {
      batch?: number;
      face?: MuseTalkFaceOptions;
      providers?: Partial<Record<MuseTalkGraph, ExecutionProviderName>>;
    } = {},
  ) {
    this.manifest = manifest;
    this.providers = options.providers ?? {};
    this.#run = run;
    this.batch = options.batch ?? manifest.batch;
    this.#face = options.face ?? {};
    if (!(Number.isInteger(this.batch) && this.batch > 0))
      throw new RangeError(`Expected a positive integer batch but received ${this.batch}`);
  }

  /** The encoder's hidden states of 16 kHz mono audio, one 30 s segment per call. */
  async audio(samples: Float32Array, signal?: AbortSignal): Promise<MuseTalkAudio> {
    const outputs: Float32Array[] = [];
    for (const segment of whisperSegments(samples)) {
      signal?.throwIfAborted();
      const mel = whisperLogMel(segment);
      outputs.push(
        await this.#run('whisper_encoder', {
          input_features: { data: mel.data, dims: [1, WHISPER_MEL_BANDS, WHISPER_SEGMENT_FRAMES] },
        }),
      );
    }
    return { states: joinWhisperSegments(outputs), active: whisperActivePositions(samples.length) };
  }

  /** The face's box and crop, or undefined when the box lies outside the frame (the frame then passes through). */
  prepare(frame: DeepRgbFrame, face: FaceBox, audioFrame: number): MuseTalkPreparedFace | undefined {
    const box = museTalkFaceBox(face, frame.width, frame.height, this.#face);
    if (box === undefined) return undefined;
    const crop = cropMuseTalkFace(frame, box);
    return { face, box, crop, audioFrame, screenSize: Math.max(box.x2 - box.x1, box.y2 - box.y1) };
  }

  /**
   * One pass of the graphs over up to `batch` prepared faces: the VAE encoder on the masked and
   * whole crops, the audio windows through the positional encoding, the UNet, the decoder. Returns
   * each face's 256 x 256 RGB result. Stops between graphs when `signal` is aborted.
   */
  async generate(
    items: readonly MuseTalkPreparedFace[],
    audio: MuseTalkAudio,
    fps: Rational,
    signal?: AbortSignal,
  ): Promise<Uint8Array[]> {
    const n = items.length;
    if (n > this.batch) throw new RangeError(`Expected at most ${this.batch} faces per call but received ${n}`);
    if (n === 0) return [];
    signal?.throwIfAborted();
    // Masked crops first, whole crops after: one encoder call for both.
    const images = new Float32Array(2 * n * IMAGE_VALUES);
    items.forEach((item, k) => {
      museTalkImageTensor(item.crop, MUSETALK_FACE_SIZE, true, images, k * IMAGE_VALUES);
      museTalkImageTensor(item.crop, MUSETALK_FACE_SIZE, false, images, (n + k) * IMAGE_VALUES);
    });
    const latents = await this.#run('vae_encoder', {
      image: { data: images, dims: [2 * n, 3, MUSETALK_FACE_SIZE, MUSETALK_FACE_SIZE] },
    });
    signal?.throwIfAborted();
    const perLatent = MUSETALK_LATENT_CHANNELS * LATENT_PLANE;
    const sample = new Float32Array(n * 2 * perLatent);
    for (let k = 0; k < n; k++) {
      sample.set(latents.subarray(k * perLatent, (k + 1) * perLatent), k * 2 * perLatent);
      sample.set(latents.subarray((n + k) * perLatent, (n + k + 1) * perLatent), (k * 2 + 1) * perLatent);
    }
    const windowSize = MUSETALK_AUDIO_ROWS * WHISPER_TINY_WIDTH;
    const windows = new Float32Array(n * windowSize);
    items.forEach((item, k) =>
      museTalkAudioWindow(audio.states, audio.active, item.audioFrame, fps, windows, k * windowSize),
    );
    const encoded = await this.#run('positional_encoding', {
      audio_features: { data: windows, dims: [n, MUSETALK_AUDIO_ROWS, WHISPER_TINY_WIDTH] },
    });
    signal?.throwIfAborted();
    const predicted = await this.#run('unet', {
      sample: { data: sample, dims: [n, 2 * MUSETALK_LATENT_CHANNELS, MUSETALK_LATENT_SIZE, MUSETALK_LATENT_SIZE] },
      encoder_hidden_states: { data: encoded, dims: [n, MUSETALK_AUDIO_ROWS, WHISPER_TINY_WIDTH] },
    });
    signal?.throwIfAborted();
    const decoded = await this.#run('vae_decoder', {
      latents: { data: predicted, dims: [n, MUSETALK_LATENT_CHANNELS, MUSETALK_LATENT_SIZE, MUSETALK_LATENT_SIZE] },
    });
    return items.map((_, k) => museTalkDecodedImage(decoded, MUSETALK_FACE_SIZE, k * IMAGE_VALUES));
  }

  /** Blends a result (`size` x `size`: 256, or larger after the mouth pass) into its frame, in place. */
  blend(frame: DeepRgbFrame, item: MuseTalkPreparedFace, generated: Uint8Array, size = MUSETALK_FACE_SIZE): void {
    blendMuseTalkFace(frame, generated, size, museTalkBlendMask(item.face, item.box));
  }

  /** Lip-syncs the frames in place, `batch` frames per UNet call. */
  async render(
    frames: readonly MuseTalkFrame[],
    audio: MuseTalkAudio,
    fps: Rational,
    signal?: AbortSignal,
  ): Promise<MuseTalkRenderStats> {
    const stats: MuseTalkRenderStats = { rendered: 0, skipped: 0, unetCalls: 0 };
    const usable = frames.flatMap((item) => {
      const prepared = this.prepare(item.frame, item.face, item.audioFrame);
      if (prepared === undefined) stats.skipped++;
      return prepared === undefined ? [] : [{ frame: item.frame, prepared }];
    });
    for (let start = 0; start < usable.length; start += this.batch) {
      signal?.throwIfAborted();
      const chunk = usable.slice(start, start + this.batch);
      const faces = await this.generate(
        chunk.map((item) => item.prepared),
        audio,
        fps,
        signal,
      );
      stats.unetCalls++;
      chunk.forEach((item, k) => {
        this.blend(item.frame, item.prepared, faces[k]!);
        stats.rendered++;
      });
    }
    return stats;
  }
}

/** A runner over ONNX Runtime sessions, one per graph, each held to its contract. */
export function sessionRunner(sessions: Readonly<Record<MuseTalkGraph, ort.InferenceSession>>): MuseTalkGraphRunner {
  for (const graph of MUSETALK_GRAPHS) checkMuseTalkGraph(sessions[graph], graph);
  return async (graph, inputs) => {
    const feeds: Record<string, ort.Tensor> = {};
    for (const [name, { data, dims }] of Object.entries(inputs)) feeds[name] = new ort.Tensor('float32', data, dims);
    const output = MUSETALK_CONTRACTS[graph].outputs[0]!.name;
    const result = await sessions[graph].run(feeds);
    return result[output]!.data as Float32Array;
  };
}

export interface LoadMuseTalkOptions {
  /**
   * Made with `{ thread: false }` (several inputs: see faces/blazeface.ts rawSession). On threads
   * (the default) only its settings are used: each graph opens on its thread (graph-threads.ts).
   */
  sessions: SessionCache;
  modelsDir: string;
  /** Where the graphs live (MEDIA_WORKER_MODEL_FILES_DIR); default modelsDir. */
  filesDir?: string;
  batch?: number;
  face?: MuseTalkFaceOptions;
  /** Run the graphs on worker threads (default), or on the calling thread (the cache's sessions). */
  onThreads?: boolean;
}

/**
 * Manifest -> verified graphs (the test networks generated on first use) -> a session per graph,
 * opened once, on a thread of its own (graph-threads.ts; from the cache, on the calling thread,
 * with `onThreads: false`), each checked against its contract -> engine.
 */
export async function loadMuseTalk(name: string, options: LoadMuseTalkOptions): Promise<MuseTalkEngine> {
  const manifest = await readMuseTalkManifest(options.modelsDir, name);
  const paths = await ensureMuseTalkGraphs(manifest, options.filesDir ?? options.modelsDir);
  let run: MuseTalkGraphRunner;
  let providers: Record<MuseTalkGraph, ExecutionProviderName>;
  if (options.onThreads ?? true) {
    const threaded = await threadedGraphs(options.sessions, paths);
    run = (graph, inputs) => threaded.runs[graph](inputs);
    providers = threaded.providers;
  } else {
    const sessions = {} as Record<MuseTalkGraph, ort.InferenceSession>;
    providers = {} as Record<MuseTalkGraph, ExecutionProviderName>;
    for (const graph of MUSETALK_GRAPHS) {
      const session = await options.sessions.get(paths[graph]);
      sessions[graph] = rawSession(session, `${name}/${graph}`);
      providers[graph] = session.provider;
    }
    run = sessionRunner(sessions);
  }
  return new MuseTalkEngine(manifest, run, {
    providers,
    ...(options.batch === undefined ? {} : { batch: options.batch }),
    ...(options.face === undefined ? {} : { face: options.face }),
  });
}
