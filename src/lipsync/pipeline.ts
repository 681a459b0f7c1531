/**
 * Lip-sync, files in, MP4 out: `lipsyncFile(request, deps)`.
 *
 * 1. Models first (a missing lip-sync model fails before any decoding), the job's audio decoded
 *    to the model's sample rate meanwhile.
 * 2. Face pass (face-pass.ts): the source frames the output can show are decoded at a detection
 *    size, faces detected (vendor-lipsync-3: the `robust` detector profile) and tracked; the faces
 *    to drive are chosen (faces.ts); no face at all fails with LIPSYNC_FAILED.
 * 3. Features: the audio fitted to the timeline's duration (cut or padded with silence, exactly as
 *    the result's audio), its mel spectrogram, and window i for output frame i.
 * 4. Output pass (output-pass.ts), streamed in output order: source frames from a bounded cache
 *    (re-decoding for loop and bounce: source-frames.ts); each driven face cropped (turned upright
 *    for vendor-lipsync-3), batched through the network on its worker thread (model-thread.ts),
 *    super-resolved for vendor-lipsync-2-pro (mouth-sr.ts) and pasted with the feathered mouth mask;
 *    frames without a driven face pass through untouched; an ffmpeg encoder takes the frames from
 *    a pipe, with the job's audio fitted to the timeline (encode.ts). Decoding, the network,
 *    pasting and encoding overlap; memory is bounded by a few batches of frames and the cache.
 *
 * The face pass and the output pass run together (passes.ts). The timeline needs the video's frame count,
 * which containers such as WebM and GIF do not declare, so it is forecast from the video stream's
 * packets (ffprobe -count_packets: demuxing, no decoding) and checked against the frames the face
 * pass decodes; each frame's face is decided once detection is 2 s past it (face-schedule.ts), so
 * the output pass trails detection by that much. When the count differs from the forecast (a
 * stream whose decoder drops frames) or cannot be forecast (variable frame rate, resampled by the
 * decoder), the output pass runs again, or only, after the face pass, from the counted frames.
 *
 * Active speaker: the envelope the mouths are compared with is the video's own soundtrack when it
 * has an audible one (the speech the faces in the picture actually follow, in the source's time,
 * whatever the sync mode); otherwise the job's audio, mapped onto source frames through the
 * timeline (each source frame takes the audio of the first output frame showing it).
 *
 * Cancellation: the request's signal (the caller enforces the 4-minute limit with it) stops every
 * stage at once: both ffmpeg processes are killed and reaped, queued frames dropped, the partial
 * output removed, and the call rejects with the signal's reason. The MP4 is written under a
 * temporary name beside the target and renamed into place when complete.
 */
import { randomBytes } from 'node:crypto';
import { rename, rm } from 'node:fs/promises';
import { basename, dirname, join, resolve as resolvePath } from 'node:path';
import type { RegistryOptions } from '../inference/model-registry.js';
import type { SessionCache } from '../inference/session.js';
import { JobError } from '../jobs/errors.js';
import type { LipsyncModelId } from '../jobs/models.js';
import { priceLipsync } from '../jobs/pricing.js';
import type { SyncMode } from '../jobs/types.js';
import { isProcessError, resolveFfmpeg } from '../media/index.js';
import type { MediaInfo, VideoStreamInfo } from '../media/types.js';
import type { LoadedSrModel, SrModelLoader } from '../upscale/image-pipeline.js';
import { DEFAULT_ENCODER, type EncoderSettings, inputMatrix } from '../video/index.js';
import { chooseEncoder, type InfoLogger } from '../video/index.js';
import { ffmpegReason, type PathNames } from '../video/index.js';
import { displayedSize, formatRate, frameTiming, type Size } from '../video/index.js';
import { probeVideoExtras, probeVideoPacketCount, type VideoExtras } from '../video/index.js';
import { audioEnvelope } from './active-speaker.js';
import { decodeAudio, fitSamples } from './audio.js';
import { loadBlazeFace, type BlazeFaceDetector } from './blazeface.js';
import { evenSize, type VideoQuality } from './encode.js';
import { detectionSize, letterboxSize, runFacePass, scaleBox, toFramePixels } from './face-pass.js';
import { FACE_DETECTION_PROFILES, type DrivenFaces } from './faces.js';
import { melSpectrogram } from './mel.js';
import { loadThreadedLipsyncModel } from './model-thread.js';
import { DEFAULT_CACHE_BYTES, PipelineStopped, runOutputPass, type OutputPassTimings } from './output-pass.js';
import { passesInTurn, passesTogether, type PassSteps, type Passes } from './passes.js';
import { DecoderFailure, type SourceDecodeSpec } from './source-frames.js';
import { DEFAULT_MAX_OUTPUT_SECONDS, framesForSeconds, planTimeline, type Rational, type TimelinePlan } from './timeline.js';
import { loadLipsyncModel, type LipsyncModel, type LipsyncModelMapping } from './wav2lip-model.js';

export { DEFAULT_CACHE_BYTES } from './output-pass.js';

export type LipsyncStage = 'detecting faces' | 'lip-syncing';

export interface LipsyncProgress {
  stage: LipsyncStage;
  done: number;
  total: number;
  unit: 'frames';
}

export interface LipsyncRequest {
  videoPath: string;
  /** From probing the video (probeMedia). */
  videoInfo: MediaInfo;
  audioPath: string;
  audioInfo: MediaInfo;
  outputPath: string;
  model: LipsyncModelId;
  syncMode: SyncMode;
  activeSpeaker: boolean;
  signal?: AbortSignal;
  /** Called at most every `progressIntervalMs` per stage, and once when a stage ends. */
  onProgress?: (progress: LipsyncProgress) => void;
  progressIntervalMs?: number;
  /** The configured H.264 encoder (codec, crf, preset); unset fields take DEFAULT_ENCODER's. */
  encoder?: Partial<EncoderSettings>;
  /** Encode losslessly (libx264rgb, RGB): tests compare pixels with it. */
  lossless?: boolean;
  /** Faces per network call; default the model's (its manifest's batch). */
  batch?: number;
  /** Memory for source frames kept for loop and bounce. Default DEFAULT_CACHE_BYTES. */
  cacheBytes?: number;
  logger?: InfoLogger;
}

export interface LipsyncDeps {
  /** Made with `{ thread: false }`: the detector and the lip-sync network have several inputs or outputs. */
  sessions: SessionCache;
  /** Which manifest serves each public model id (config); default: the real Wav2Lip weights. */
  lipsyncModelMapping?: LipsyncModelMapping;
  /** The SR engine's loader; required for vendor-lipsync-2-pro. */
  loadSrModel?: SrModelLoader;
  ffmpegPath?: string;
  ffprobePath?: string;
  registry?: RegistryOptions;
  /**
   * Run the lip-sync network on a worker thread (model-thread.ts), so the other stages and the
   * event loop go on during its calls. Default true; false runs it on the calling thread.
   */
  modelThread?: boolean;
  /**
   * Run detection and the output pass together (face-schedule.ts), when the frame count can be
   * forecast. Default true; false detects every frame first (benchmarks compare the two).
   */
  overlapFacePass?: boolean;
  /** Replaces the forecast of the frame count (the video stream's packet count; tests: a wrong forecast). */
  forecastFrames?: () => Promise<number | undefined>;
  /** Replaces the lip-sync network loader (benchmarks: a stand-in with a known cost). */
  loadModel?: (modelId: LipsyncModelId) => Promise<LipsyncModel>;
}

export interface LipsyncStats extends OutputPassTimings {
  /** Whole call, milliseconds. */
  wallMs: number;
  /** Model loading, audio decoding, probing. */
  setupMs: number;
  /** Face pass: decode at detection size, detection, tracking. */
  detectMs: number;
  /** Output pass: frames, network, paste, encode (overlapping the face pass when `facePassOverlapped`). */
  outputMs: number;
  /** Whether the output pass ran beside the face pass (face-schedule.ts) or after it. */
  facePassOverlapped: boolean;
  /** How often the driven faces were chosen: blocks decided during detection, plus the final choice. */
  faceDecisions: number;
  /** Frames read from decoders in the output pass, decoders started, frames served from the cache. */
  sourceFramesDecoded: number;
  decoders: number;
  cacheHits: number;
  cacheCapacity: number;
}

export interface LipsyncOutcome {
  outputPath: string;
  /** Output frames / rate: the sync mode's duration. */
  durationSeconds: number;
  frames: number;
  width: number;
  height: number;
  fps: number;
  frameRate: string;
  model: LipsyncModelId;
  /** The manifest that ran, and whether it is the generated test model. */
  network: string;
  testModel: boolean;
  srModel?: string;
  syncMode: SyncMode;
  /** Output frames with a generated mouth. */
  drivenFrames: number;
  faces: { tracks: number; driven: number[]; method: DrivenFaces['method'] };
  encoder: { codec: string; mode: VideoQuality['mode']; bitsPerSecond?: number };
  stats: LipsyncStats;
}

const DEFAULT_PROGRESS_INTERVAL_MS = 250;
/** A soundtrack whose loudest frame has less RMS than this carries no speech to follow. */
const SILENT_RMS = 1e-3;

export function checkLipsyncInput(req: Pick<LipsyncRequest, 'videoInfo' | 'audioInfo' | 'model'>): VideoStreamInfo {
  const { videoInfo, audioInfo } = req;
  if (videoInfo.video === undefined) {
    throw new JobError('PROBE_FAILED', `Expected a video with a video stream but the ${videoInfo.container.toUpperCase()} file has none`);
  }
  if (audioInfo.audio === undefined) {
    throw new JobError('PROBE_FAILED', `Expected audio with an audio stream but the ${audioInfo.container.toUpperCase()} file has none`);
  }
  // VIDEO_TOO_LONG with the quote's wording.
  priceLipsync(req.model, videoInfo.durationSeconds);
  return videoInfo.video;
}

/**
 * Frames the face pass needs: for cut_off, loop and bounce the output shows no source frame at or
 * past the audio's frame count; silence and remap may show them all.
 */
export function facePassLimit(mode: SyncMode, audioFrames: number): number | undefined {
  return mode === 'cut_off' || mode === 'loop' || mode === 'bounce' ? audioFrames : undefined;
}

/**
 * The job's audio as a per-source-frame envelope: each source frame takes the RMS of the first
 * output frame that shows it (NaN for frames never shown, which the correlation skips).
 */
export function envelopeThroughTimeline(fitted: Float32Array, sampleRate: number, plan: TimelinePlan, sourceFrames: number): Float64Array {
  const fps = plan.fps.num / plan.fps.den;
  const output = audioEnvelope(fitted, sampleRate, fps, plan.outputFrames);
  const out = new Float64Array(sourceFrames).fill(Number.NaN);
  for (let i = 0; i < plan.outputFrames; i += 1) {
    const j = plan.sourceFrame(i);
    if (j < sourceFrames && Number.isNaN(out[j] as number)) out[j] = output[i] as number;
  }
  return out;
}

function loudest(envelope: ArrayLike<number>): number {
  let max = 0;
  for (let i = 0; i < envelope.length; i += 1) {
    const v = envelope[i] as number;
    if (v > max) max = v;
  }
  return max;
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Any failure as the job's error: a JobError stays as it is; the rest is LIPSYNC_FAILED. */
function asJobError(error: unknown, paths: PathNames): JobError {
  if (error instanceof JobError) return error;
  if (error instanceof DecoderFailure) {
    const cause = error.error;
    if (isProcessError(cause) && cause.reason === 'exit') {
      return new JobError('LIPSYNC_FAILED', `The video could not be decoded: ${ffmpegReason(cause.stderrTail, paths)}`, { cause });
    }
    return new JobError('LIPSYNC_FAILED', `The video decoder stopped: ${message(cause)}`, { cause, retryable: true });
  }
  return new JobError('LIPSYNC_FAILED', `Lip-sync failed: ${message(error)}`, { cause: error });
}

function throttle(interval: number, report: ((p: LipsyncProgress) => void) | undefined): (p: LipsyncProgress, force?: boolean) => void {
  let last = Number.NEGATIVE_INFINITY;
  return (progress, force = false) => {
    if (report === undefined) return;
    const now = performance.now();
    if (!force && now - last < interval) return;
    last = now;
    try {
      report(progress);
    } catch {
      // Progress is informational: a failing reporter must not fail the job.
    }
  };
}

export async function lipsyncFile(req: LipsyncRequest, deps: LipsyncDeps): Promise<LipsyncOutcome> {
  const started = performance.now();
  req.signal?.throwIfAborted();
  const video = checkLipsyncInput(req);
  const videoPath = resolvePath(req.videoPath);
  const audioPath = resolvePath(req.audioPath);
  const outputPath = resolvePath(req.outputPath);
  const partialPath = join(dirname(outputPath), `.${basename(outputPath)}.${randomBytes(4).toString('hex')}.partial`);
  const paths: PathNames = [
    [videoPath, 'video'],
    [audioPath, 'audio'],
    [partialPath, 'output'],
  ];
  try {
    return await run(req, deps, { video, videoPath, audioPath, outputPath, partialPath, paths, started });
  } catch (error) {
    await rm(partialPath, { force: true });
    if (req.signal?.aborted === true) throw req.signal.reason;
    throw asJobError(error, paths);
  }
}

interface Resolved {
  video: VideoStreamInfo;
  videoPath: string;
  audioPath: string;
  outputPath: string;
  partialPath: string;
  paths: PathNames;
  started: number;
}

async function run(req: LipsyncRequest, deps: LipsyncDeps, r: Resolved): Promise<LipsyncOutcome> {
  const { signal } = req;
  const registry = deps.registry ?? {};
  const withSignal = signal === undefined ? {} : { signal };
  let ffmpeg: string;
  try {
    ffmpeg = resolveFfmpeg(deps.ffmpegPath === undefined ? {} : { ffmpegPath: deps.ffmpegPath });
  } catch (error) {
    throw new JobError('LIPSYNC_FAILED', message(error), { retryable: true, cause: error });
  }

  // ---------------------------------------------------------------- setup
  const loadModel =
    deps.loadModel ??
    ((id: LipsyncModelId) =>
      (deps.modelThread === false ? loadLipsyncModel : loadThreadedLipsyncModel)(id, {
        sessions: deps.sessions,
        registry,
        ...(deps.lipsyncModelMapping === undefined ? {} : { mapping: deps.lipsyncModelMapping }),
        ...(req.batch === undefined ? {} : { batch: req.batch }),
      }));
  const model = await loadModel(req.model);
  signal?.throwIfAborted();
  const { manifest } = model;
  const faceSize = manifest.face.size;
  const [, outC, outH, outW] = manifest.output.shape;
  if (outC !== 3 || outH !== faceSize || outW !== faceSize) {
    throw new JobError('LIPSYNC_FAILED', `Expected ${manifest.name} to return [B, 3, ${faceSize}, ${faceSize}] faces but its manifest says [B, ${outC}, ${outH}, ${outW}]`);
  }
  const sampleRate = manifest.audio.sampleRate;
  const fps: Rational = r.video.fps;
  const timing = frameTiming(r.video);
  const size = displayedSize(r.video);
  // Validates the output length against the cap with the probe's figures before any decoding.
  const estimatedFrames = Math.max(1, r.video.frameCount ?? framesForSeconds(req.videoInfo.durationSeconds, fps));
  planTimeline({ mode: req.syncMode, videoFrames: estimatedFrames, fps, audioSeconds: Math.max(1e-3, req.audioInfo.durationSeconds) });

  const audioMax = req.syncMode === 'cut_off' ? req.videoInfo.durationSeconds + 1 : DEFAULT_MAX_OUTPUT_SECONDS + 1;
  // Its own controller: a setup step failing must not leave the audio decoder running.
  const audioStop = new AbortController();
  const onAbort = (): void => audioStop.abort(signal?.reason);
  signal?.addEventListener('abort', onAbort, { once: true });
  if (signal?.aborted === true) onAbort();
  const audioPromise = decodeAudio(
    { path: r.audioPath, container: req.audioInfo.container },
    { sampleRate, maxSeconds: audioMax, signal: audioStop.signal, ffmpegPath: ffmpeg },
  );
  // Settled below; never an unhandled rejection while the models load.
  audioPromise.catch(() => undefined);

  let detector: BlazeFaceDetector;
  let sr: LoadedSrModel | undefined;
  let extras: VideoExtras;
  let quality: VideoQuality;
  let samples: Float32Array;
  try {
    const profile = req.model === 'vendor-lipsync-3' ? FACE_DETECTION_PROFILES.robust : FACE_DETECTION_PROFILES.standard;
    detector = await loadBlazeFace(profile.model, { sessions: deps.sessions, registry, minScore: profile.minScore, margin: profile.margin });
    if (req.model === 'vendor-lipsync-2-pro') {
      if (deps.loadSrModel === undefined) throw new JobError('LIPSYNC_FAILED', 'Expected a super-resolution model loader for vendor-lipsync-2-pro but none was given');
      sr = await deps.loadSrModel('mouth', '4');
    }
    extras = await probeVideoExtras(r.videoPath, req.videoInfo.container, {
      ...withSignal,
      ...(deps.ffprobePath === undefined ? {} : { ffprobePath: deps.ffprobePath }),
    });
    quality = await videoQuality(req, ffmpeg, r.video);
    samples = await audioPromise;
  } catch (error) {
    audioStop.abort(new PipelineStopped());
    await audioPromise.catch(() => undefined);
    throw error;
  } finally {
    signal?.removeEventListener('abort', onAbort);
  }
  if (samples.length === 0) throw new JobError('LIPSYNC_FAILED', 'Expected audio samples but the audio decoded to nothing');
  const audioSeconds = samples.length / sampleRate;
  signal?.throwIfAborted();
  const setupMs = performance.now() - r.started;

  // ---------------------------------------------------------------- faces and output
  const spec: SourceDecodeSpec = {
    inputPath: r.videoPath,
    container: req.videoInfo.container,
    timing,
    matrix: inputMatrix(extras, size),
    interlaced: extras.interlaced === true,
    size,
  };
  const limit = facePassLimit(req.syncMode, framesForSeconds(audioSeconds, fps));
  const progress = throttle(req.progressIntervalMs ?? DEFAULT_PROGRESS_INTERVAL_MS, req.onProgress);
  const detectTotal = Math.min(limit ?? Number.MAX_SAFE_INTEGER, estimatedFrames);
  const detectAt = req.activeSpeaker ? detectionSize(size) : letterboxSize(size, detector.manifest.input.size, detector.margin);
  const toFrame = toFramePixels(size, detectAt);
  let detecting = true;

  const steps: PassSteps = {
    detect: (faceSignal, onObserved) =>
      runFacePass({
        ffmpeg,
        spec,
        size: detectAt,
        ...(limit === undefined ? {} : { limit }),
        detector,
        ...(faceSignal === undefined ? {} : { signal: faceSignal }),
        onFrame: (done, observed) => {
          progress({ stage: 'detecting faces', done, total: Math.max(done, detectTotal), unit: 'frames' });
          onObserved?.(observed);
        },
      }),
    detected: (pass) => {
      detecting = false;
      progress({ stage: 'detecting faces', done: pass.frameCount, total: pass.frameCount, unit: 'frames' }, true);
      if (pass.frameCount === 0) throw new JobError('LIPSYNC_FAILED', 'Expected video frames but the video decoded to none');
    },
    plan: (videoFrames) => {
      const plan = planTimeline({ mode: req.syncMode, videoFrames, fps, audioSeconds });
      return { plan, fitted: fitSamples(samples, plan.durationSeconds, sampleRate) };
    },
    speakerEnvelope: async (plan, fitted, sourceFrames) =>
      req.activeSpeaker ? speakerEnvelope(req, r, ffmpeg, sampleRate, fitted, plan, sourceFrames) : undefined,
    inFrame: (boxes) => boxes.map((box) => (box === undefined ? undefined : scaleBox(box, toFrame.x, toFrame.y))),
    output: (plan, fitted, boxAt, outputSignal) =>
      runOutputPass({
        ffmpeg,
        spec,
        plan,
        boxAt,
        model,
        align: req.model === 'vendor-lipsync-3',
        sr,
        mel: melSpectrogram(fitted, manifest.audio),
        encode: {
          quality,
          sampleAspect: extras.sampleAspect,
          audio: { path: r.audioPath, container: req.audioInfo.container },
          outputPath: r.partialPath,
        },
        cacheBytes: req.cacheBytes ?? DEFAULT_CACHE_BYTES,
        paths: r.paths,
        ...(outputSignal === undefined ? {} : { signal: outputSignal }),
        // While detection runs ahead, its progress is the job's.
        onWritten: (done, final) => {
          if (!detecting) progress({ stage: 'lip-syncing', done, total: plan.outputFrames, unit: 'frames' }, final);
        },
      }),
    discardOutput: () => rm(r.partialPath, { force: true }),
    fps: fps.num / fps.den,
    ...withSignal,
    ...(req.logger === undefined ? {} : { logger: req.logger }),
  };

  // A variable frame rate is resampled by the decoder, so its packets do not forecast the frames.
  const probeForecast = (): Promise<number | undefined> =>
    timing.mode === 'passthrough'
      ? probeVideoPacketCount(r.videoPath, req.videoInfo.container, extras.videoIndex, {
          ...withSignal,
          ...(deps.ffprobePath === undefined ? {} : { ffprobePath: deps.ffprobePath }),
        })
      : Promise.resolve(undefined);
  const forecast = await (deps.forecastFrames ?? probeForecast)();
  let passes: Passes;
  if (forecast === undefined || deps.overlapFacePass === false) {
    const pass = await steps.detect(signal);
    steps.detected(pass);
    passes = await passesInTurn(steps, pass);
  } else {
    const first = await passesTogether(steps, Math.min(forecast, limit ?? forecast));
    passes = 'output' in first ? first : await passesInTurn(steps, first);
  }
  await rename(r.partialPath, r.outputPath);
  const { pass, plan, driven, output } = passes;

  const outSize: Size = quality.mode === 'lossless' ? size : evenSize(size);
  const encoder = quality.mode === 'lossless' ? { codec: 'libx264rgb', mode: quality.mode } : { codec: quality.encoder.codec, mode: quality.mode };
  return {
    outputPath: r.outputPath,
    durationSeconds: plan.durationSeconds,
    frames: plan.outputFrames,
    width: outSize.width,
    height: outSize.height,
    fps: fps.num / fps.den,
    frameRate: formatRate(fps),
    model: req.model,
    network: model.name,
    testModel: model.testModel,
    ...(sr === undefined ? {} : { srModel: sr.name }),
    syncMode: req.syncMode,
    drivenFrames: output.drivenFrames,
    faces: { tracks: pass.tracking.tracks.length, driven: driven.tracks.map((t) => t.id), method: driven.method },
    encoder: quality.mode === 'bitrate' ? { ...encoder, bitsPerSecond: quality.bitsPerSecond } : encoder,
    stats: {
      wallMs: performance.now() - r.started,
      setupMs,
      detectMs: pass.ms,
      outputMs: passes.outputMs,
      facePassOverlapped: passes.overlapped,
      faceDecisions: passes.decisions,
      modelMs: output.modelMs,
      modelCalls: output.modelCalls,
      srMs: output.srMs,
      srFaces: output.srFaces,
      prepareMs: output.prepareMs,
      pasteMs: output.pasteMs,
      sourceFramesDecoded: output.frames.decoded,
      decoders: output.frames.decoders,
      cacheHits: output.frames.hits,
      cacheCapacity: output.capacity,
    },
  };
}

/** vendor-lipsync-2-pro keeps the source's bitrate; the others use the configured constant quality. */
async function videoQuality(req: LipsyncRequest, ffmpeg: string, video: VideoStreamInfo): Promise<VideoQuality> {
  if (req.lossless === true) return { mode: 'lossless' };
  const encoder = await chooseEncoder(ffmpeg, { ...DEFAULT_ENCODER, ...req.encoder }, req.logger);
  if (req.model !== 'vendor-lipsync-2-pro') return { mode: 'crf', encoder };
  const bitrate = video.bitRate ?? req.videoInfo.bitRate;
  if (bitrate === undefined || !(bitrate > 0)) {
    req.logger?.warn({ crf: encoder.crf }, 'the source declares no bitrate; encoding at constant quality');
    return { mode: 'crf', encoder };
  }
  return { mode: 'bitrate', encoder, bitsPerSecond: Math.round(bitrate) };
}

async function speakerEnvelope(
  req: LipsyncRequest,
  r: Resolved,
  ffmpeg: string,
  sampleRate: number,
  fitted: Float32Array,
  plan: TimelinePlan,
  sourceFrames: number,
): Promise<Float64Array> {
  const fps = plan.fps.num / plan.fps.den;
  if (req.videoInfo.audio !== undefined) {
    const own = await decodeAudio(
      { path: r.videoPath, container: req.videoInfo.container },
      { sampleRate, maxSeconds: sourceFrames / fps + 1, ffmpegPath: ffmpeg, ...(req.signal === undefined ? {} : { signal: req.signal }) },
    ).catch((error: unknown) => {
      if (req.signal?.aborted === true) throw error;
      req.logger?.warn({ err: error }, "the video's soundtrack could not be decoded; judging the speaker by the job's audio");
      return undefined;
    });
    if (own !== undefined) {
      const envelope = audioEnvelope(own, sampleRate, fps, sourceFrames);
      if (loudest(envelope) >= SILENT_RMS) return envelope;
    }
  }
  return envelopeThroughTimeline(fitted, sampleRate, plan, sourceFrames);
}
