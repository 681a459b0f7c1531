/**
 * Lip-sync, files in, MP4 out: `lipsyncFile(request, deps)`. This module does the setup (models, the
 * job's audio, probing, the encoder's quality, the frame-count forecast), hands the passes their steps
 * (`PassSteps`: decoding and detection, planning, the speaker's envelope, the output pass), and makes
 * the outcome from what they return, or the job's error from a failure. The MP4 is written under a
 * temporary name beside the target and renamed into place when complete.
 *
 * The flow stage by stage (the passes, the frame-count forecast and its re-run, the active speaker,
 * cancellation) is told once, in docs/lipsync.md.
 */
import { rm } from 'node:fs/promises';
import { resolve as resolvePath } from 'node:path';
import { ProcessingError, errorMessage } from '../../../errors.js';
import { throttle } from '../../../throttle.js';
import { definedFields } from '../../../defined-fields.js';
import type { RegistryOptions, SessionCache, LoadedSrModel, SrModelLoader } from '../../../inference/index.js';
import type { LipsyncProfile } from '../contract/profiles.js';
import {
  LIPSYNC_AUDIO_CONTAINERS,
  LIPSYNC_VIDEO_CONTAINERS,
  checkAudio,
  checkVideo,
  priceLipsync,
  type LipsyncModelId,
  type SyncMode,
} from '../../../jobs/index.js';
import {
  allowedAudioSeconds,
  allowedFrames,
  resolveFfmpeg,
  type MediaInfo,
  type PathNames,
  type Rational,
  type VideoStreamInfo,
  partialPathFor,
  writeThenRename,
} from '../../../media/index.js';
import {
  DEFAULT_ENCODER,
  type EncoderSettings,
  type InfoLogger,
  type Size,
  StageGroup,
  type VideoExtras,
  type ColourPlan,
  chooseEncoder,
  displayedSize,
  ffmpegFailure,
  formatRate,
  frameTiming,
  colourSource,
  colourPlan,
  eightBitColourPlan,
  DEFAULT_HDR_MODE,
  type HdrMode,
  checkVideoDecodes,
  ffmpegVersion,
  probeVideoExtras,
} from '../../../video/index.js';
import {
  audioEnvelope,
  loadBlazeFace,
  type BlazeFaceDetector,
  detectionSize,
  letterboxSize,
  runFacePass,
  scaleBox,
  toFramePixels,
  FACE_DETECTION_PROFILES,
  type DrivenFaces,
} from './faces/index.js';
import { decodeAudio, fitSamples } from './audio/index.js';
import { type VideoQuality, DecoderFailure, type SourceDecodeSpec } from './frames/index.js';
import type { LipsyncModel } from './network/index.js';
import { DEFAULT_CACHE_BYTES, runOutputPass, type OutputPassTimings } from './compose/index.js';
import { loadPipelineNetwork, type PipelineNetwork } from './networks.js';
import { passesInTurn, passesTogether, type PassSteps, type Passes } from './passes.js';
import { lipsyncProfile } from '../contract/profiles.js';
import { DEFAULT_MAX_OUTPUT_SECONDS, framesForSeconds, planTimeline, type TimelinePlan } from './timeline.js';
import type { LipsyncModelMapping } from '../settings.js';

export { DEFAULT_CACHE_BYTES } from './compose/index.js';

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
  /** Encode losslessly (libx264rgb, 8-bit RGB, so HDR tone-mapped): tests compare pixels with it. */
  lossless?: boolean;
  /** HDR (PQ / HLG) input kept as 10-bit HDR or tone-mapped to SDR (the job's `hdr`, else the worker's default). Default "keep". */
  hdr?: HdrMode;
  /** Faces per network call (MuseTalk: frames per UNet call); default the model's (its manifest's batch). */
  batch?: number;
  /** Memory for source frames kept for loop and bounce. Default DEFAULT_CACHE_BYTES. */
  cacheBytes?: number;
  logger?: InfoLogger;
}

export interface LipsyncDeps {
  /** Made with `{ thread: false }`: the detector and the lip-sync network have several inputs or outputs. */
  sessions: SessionCache;
  /** Which manifest serves each public model id, and so which network (config); default: the real Wav2Lip weights. */
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
  /** Replaces the forecast of the frame count (the decode check's count; tests: a wrong forecast). */
  forecastFrames?: () => Promise<number | undefined>;
  /** Replaces the Wav2Lip network loader (benchmarks: a stand-in with a known cost). */
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
  /** The result's codec, bit depth and transfer, and whether HDR was tone-mapped (video/colour.ts). */
  colour: { codec: 'h264' | 'hevc'; bits: 8 | 10; transfer?: string; toneMapped: boolean };
  stats: LipsyncStats;
}

const DEFAULT_PROGRESS_INTERVAL_MS = 250;
/** A soundtrack whose loudest frame has less RMS than this carries no speech to follow. */
const SILENT_RMS = 1e-3;

/** The quote's checks of a lip-sync's inputs (jobs/input-checks.ts), in its wording: the video stream. */
export function checkLipsyncInput(req: Pick<LipsyncRequest, 'videoInfo' | 'audioInfo' | 'model'>): VideoStreamInfo {
  const video = checkVideo('video_url', req.videoInfo, LIPSYNC_VIDEO_CONTAINERS);
  checkAudio('audio_url', req.audioInfo, LIPSYNC_AUDIO_CONTAINERS);
  // VIDEO_TOO_LONG over 30 s.
  priceLipsync(req.model, req.videoInfo.durationSeconds);
  return video;
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
export function envelopeThroughTimeline(
  fitted: Float32Array,
  sampleRate: number,
  plan: TimelinePlan,
  sourceFrames: number,
): Float64Array {
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

/**
 * A failure as lip-sync explains it: a decoder that could not decode the video said with ffmpeg's
 * reason; the rest as it is. The job's code is given at the contract's edge (app/run-job.ts).
 */
function lipsyncFailure(error: unknown, paths: PathNames): unknown {
  return error instanceof DecoderFailure ? ffmpegFailure('decoder', error.error, paths) : error;
}

export async function lipsyncFile(req: LipsyncRequest, deps: LipsyncDeps): Promise<LipsyncOutcome> {
  const started = performance.now();
  req.signal?.throwIfAborted();
  const video = checkLipsyncInput(req);
  const videoPath = resolvePath(req.videoPath);
  const audioPath = resolvePath(req.audioPath);
  const outputPath = resolvePath(req.outputPath);
  const partialPath = partialPathFor(outputPath);
  const paths: PathNames = [
    [videoPath, 'video'],
    [audioPath, 'audio'],
    [partialPath, 'output'],
  ];
  try {
    return await writeThenRename(
      outputPath,
      () => run(req, deps, { video, videoPath, audioPath, outputPath, partialPath, paths, started }),
      partialPath,
    );
  } catch (error) {
    if (req.signal?.aborted === true) throw req.signal.reason;
    throw lipsyncFailure(error, paths);
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

/**
 * The job, step by step: ffmpeg, the network, the set-up (helpers, probing, the decode check, the
 * encoder's quality, the audio), the steps the passes take, the passes, the outcome.
 */
async function run(req: LipsyncRequest, deps: LipsyncDeps, r: Resolved): Promise<LipsyncOutcome> {
  const profile = lipsyncProfile(req.model);
  const ffmpeg = await readyFfmpeg(deps);
  const network = await loadPipelineNetwork(req.model, {
    sessions: deps.sessions,
    registry: deps.registry ?? {},
    ...definedFields({
      mapping: deps.lipsyncModelMapping,
      modelThread: deps.modelThread,
      loadModel: deps.loadModel,
      batch: req.batch,
    }),
  });
  req.signal?.throwIfAborted();
  const setup = await setUp(req, deps, r, ffmpeg, profile, network.sampleRate);
  const job = passSteps(req, r, ffmpeg, network, setup);
  const passes = await runPasses(job.steps, setup, job.limit, deps);
  return outcomeOf(req, r, network, setup, job.colour, passes);
}

/** The ffmpeg binary, its version read once before any decoder starts (the frame streams spawn with the option it names). */
async function readyFfmpeg(deps: LipsyncDeps): Promise<string> {
  try {
    const ffmpeg = resolveFfmpeg(definedFields({ ffmpegPath: deps.ffmpegPath }));
    await ffmpegVersion(ffmpeg);
    return ffmpeg;
  } catch (error) {
    throw new ProcessingError(errorMessage(error), { retryable: true, cause: error });
  }
}

/** What the set-up found and made, for the passes and the outcome. */
interface Setup {
  detector: BlazeFaceDetector;
  sr: LoadedSrModel | undefined;
  extras: VideoExtras;
  quality: VideoQuality;
  /** The job's audio at the network's rate, mono. */
  samples: Float32Array;
  sampleRate: number;
  /** Frames the decode check counted, and the probe's estimate. */
  decodedFrames: number;
  estimatedFrames: number;
  quotedFrames: number;
  timing: ReturnType<typeof frameTiming>;
  size: Size;
  fps: Rational;
  setupMs: number;
}

/**
 * The output length checked against the cap with the probe's figures, then, beside the audio's
 * decoding: the face detector and mouth pass of the model's profile, the video's extras, the decode
 * check and the encoder's quality.
 */
async function setUp(
  req: LipsyncRequest,
  deps: LipsyncDeps,
  r: Resolved,
  ffmpeg: string,
  profile: Readonly<LipsyncProfile>,
  sampleRate: number,
): Promise<Setup> {
  const { signal } = req;
  const registry = deps.registry ?? {};
  const withSignal = definedFields({ signal });
  const fps: Rational = r.video.fps;
  const timing = frameTiming(r.video);
  const size = displayedSize(r.video);
  const estimatedFrames = Math.max(1, r.video.frameCount ?? framesForSeconds(req.videoInfo.durationSeconds, fps));
  // Validates the output length against the cap before any decoding.
  planTimeline({
    mode: req.syncMode,
    videoFrames: estimatedFrames,
    fps,
    audioSeconds: Math.max(1e-3, req.audioInfo.durationSeconds),
  });
  // The backstop (docs/contract.md, "The bill is what runs"): no more audio than the quote measured.
  const audioMax = Math.min(
    req.syncMode === 'cut_off' ? req.videoInfo.durationSeconds + 1 : DEFAULT_MAX_OUTPUT_SECONDS + 1,
    allowedAudioSeconds(req.audioInfo.durationSeconds),
  );
  const quotedFrames =
    timing.mode === 'passthrough' ? estimatedFrames : framesForSeconds(req.videoInfo.durationSeconds, fps);
  // The audio decodes beside the set-up steps; one of them failing must not leave it running.
  const group = new StageGroup(signal, 'lip-sync set-up');
  const audioPromise = decodeAudio(
    { path: r.audioPath, container: req.audioInfo.container },
    { sampleRate, maxSeconds: audioMax, signal: group.signal, ffmpegPath: ffmpeg },
  );
  // Settled below; never an unhandled rejection while the models load.
  const audioSettled = group.run(audioPromise);
  try {
    const detection = FACE_DETECTION_PROFILES[profile.faceDetection];
    const detector = await loadBlazeFace(detection.model, {
      sessions: deps.sessions,
      registry,
      minScore: detection.minScore,
      margin: detection.margin,
    });
    const sr = profile.mouthSuperResolution ? await mouthPass(req, deps) : undefined;
    const extras = await probeVideoExtras(r.videoPath, req.videoInfo.container, {
      ...withSignal,
      ...definedFields({ ffprobePath: deps.ffprobePath }),
    });
    // The whole video decoded once before any network work: a file its decoders cannot read, or
    // one that grew after its quote, fails here. Damage they can conceal is concealed, as players do.
    const decodedFrames = await checkVideoDecodes({
      ffmpeg,
      path: r.videoPath,
      container: req.videoInfo.container,
      videoIndex: extras.videoIndex,
      maxFrames: allowedFrames(estimatedFrames),
      strict: false,
      ...withSignal,
    });
    const quality = await videoQuality(req, profile, ffmpeg, r.video);
    const samples = await audioPromise;
    if (samples.length === 0) throw new ProcessingError('Expected audio samples but the audio decoded to nothing');
    signal?.throwIfAborted();
    return {
      detector,
      sr,
      extras,
      quality,
      samples,
      sampleRate,
      decodedFrames,
      estimatedFrames,
      quotedFrames,
      timing,
      size,
      fps,
      setupMs: performance.now() - r.started,
    };
  } catch (error) {
    throw await group.failure(error, [audioSettled]);
  } finally {
    await group.settle([audioSettled]);
  }
}

/** The super-resolution network of the profile's mouth pass. */
async function mouthPass(req: LipsyncRequest, deps: LipsyncDeps): Promise<LoadedSrModel> {
  if (deps.loadSrModel === undefined)
    throw new ProcessingError(`Expected a super-resolution model loader for ${req.model} but none was given`);
  return deps.loadSrModel('mouth', '4');
}

/**
 * The steps the passes take (passes.ts), over this job's decoders, detector, network and encoder.
 * The upscale's rule (video/colour.ts): HDR and deeper SDR stay 16-bit from decoder to encoder
 * unless the job asks for SDR. Detection sees 8-bit frames (HDR tone-mapped, as the detector was
 * trained on SDR); the lossless test encoder takes 8-bit RGB only.
 */
function passSteps(
  req: LipsyncRequest,
  r: Resolved,
  ffmpeg: string,
  network: PipelineNetwork,
  s: Setup,
): { steps: PassSteps; limit: number | undefined; colour: ColourPlan } {
  const { signal } = req;
  const { fps, size, detector } = s;
  const colourFacts = colourSource(s.extras);
  const detectColour = eightBitColourPlan(colourFacts, size);
  const colour = req.lossless === true ? detectColour : colourPlan(colourFacts, req.hdr ?? DEFAULT_HDR_MODE, size);
  const spec: SourceDecodeSpec = {
    inputPath: r.videoPath,
    container: req.videoInfo.container,
    timing: s.timing,
    matrix: colour.inputMatrix,
    colour: { plan: colour, source: colourFacts },
    interlaced: s.extras.interlaced === true,
    size,
    maxFrames: allowedFrames(s.quotedFrames),
  };
  const detectSpec: SourceDecodeSpec = { ...spec, colour: { plan: detectColour, source: colourFacts } };
  const audioSeconds = s.samples.length / s.sampleRate;
  const limit = facePassLimit(req.syncMode, framesForSeconds(audioSeconds, fps));
  const progress = throttle(
    (p: LipsyncProgress) => req.onProgress?.(p),
    req.progressIntervalMs ?? DEFAULT_PROGRESS_INTERVAL_MS,
  );
  const detectTotal = Math.min(limit ?? Number.MAX_SAFE_INTEGER, s.estimatedFrames);
  const detectAt = req.activeSpeaker
    ? detectionSize(size)
    : letterboxSize(size, detector.manifest.input.size, detector.margin);
  const toFrame = toFramePixels(size, detectAt);
  let detecting = true;

  const steps: PassSteps = {
    detect: (faceSignal, onObserved) =>
      runFacePass({
        ffmpeg,
        spec: detectSpec,
        size: detectAt,
        detector,
        ...definedFields({ limit, signal: faceSignal }),
        onFrame: (done, observed) => {
          progress.push({ stage: 'detecting faces', done, total: Math.max(done, detectTotal), unit: 'frames' });
          onObserved?.(observed);
        },
      }),
    detected: (pass) => {
      detecting = false;
      progress.push({ stage: 'detecting faces', done: pass.frameCount, total: pass.frameCount, unit: 'frames' }, true);
      if (pass.frameCount === 0) throw new ProcessingError('Expected video frames but the video decoded to none');
    },
    plan: (videoFrames) => {
      const plan = planTimeline({ mode: req.syncMode, videoFrames, fps, audioSeconds });
      return { plan, fitted: fitSamples(s.samples, plan.durationSeconds, s.sampleRate) };
    },
    speakerEnvelope: async (plan, fitted, sourceFrames) =>
      req.activeSpeaker ? speakerEnvelope(req, r, ffmpeg, s.sampleRate, fitted, plan, sourceFrames) : undefined,
    inFrame: (boxes) => boxes.map((box) => (box === undefined ? undefined : scaleBox(box, toFrame.x, toFrame.y))),
    output: async (plan, fitted, boxAt, outputSignal) =>
      runOutputPass({
        ffmpeg,
        spec,
        plan,
        boxAt,
        generator: await network.generator(fitted, plan.fps, outputSignal),
        sr: s.sr,
        encode: {
          quality: s.quality,
          sampleAspect: s.extras.sampleAspect,
          colour,
          audio: { path: r.audioPath, container: req.audioInfo.container },
          metadataSource: { path: r.videoPath, container: req.videoInfo.container, tags: s.extras.tags },
          outputPath: r.partialPath,
        },
        cacheBytes: req.cacheBytes ?? DEFAULT_CACHE_BYTES,
        paths: r.paths,
        ...definedFields({ signal: outputSignal }),
        // While detection runs ahead, its progress is the job's.
        onWritten: (done, final) => {
          if (!detecting)
            progress.push({ stage: 'lip-syncing', done, total: plan.outputFrames, unit: 'frames' }, final);
        },
      }),
    discardOutput: () => rm(r.partialPath, { force: true }),
    fps: fps.num / fps.den,
    ...definedFields({ signal, logger: req.logger }),
  };
  return { steps, limit, colour };
}

/**
 * The two passes together when the frame count can be forecast (again in turn if the forecast was
 * wrong), else in turn. The decode check counted the frames the decoders deliver; a variable frame
 * rate is resampled by them, so its count does not forecast theirs.
 */
async function runPasses(steps: PassSteps, s: Setup, limit: number | undefined, deps: LipsyncDeps): Promise<Passes> {
  const probeForecast = (): Promise<number | undefined> =>
    Promise.resolve(s.timing.mode === 'passthrough' ? s.decodedFrames : undefined);
  const forecast = await (deps.forecastFrames ?? probeForecast)();
  if (forecast === undefined || deps.overlapFacePass === false) {
    const pass = await steps.detect(steps.signal);
    steps.detected(pass);
    return passesInTurn(steps, pass);
  }
  const first = await passesTogether(steps, Math.min(forecast, limit ?? forecast));
  return 'output' in first ? first : passesInTurn(steps, first);
}

function outcomeOf(
  req: LipsyncRequest,
  r: Resolved,
  network: PipelineNetwork,
  s: Setup,
  colour: ColourPlan,
  passes: Passes,
): LipsyncOutcome {
  const { pass, plan, driven, output } = passes;
  const { quality, fps, size, sr } = s;
  const codec =
    quality.mode === 'lossless' ? 'libx264rgb' : colour.output.codec === 'hevc' ? 'libx265' : quality.encoder.codec;
  const encoder = { codec, mode: quality.mode };
  return {
    outputPath: r.outputPath,
    durationSeconds: plan.durationSeconds,
    frames: plan.outputFrames,
    width: size.width,
    height: size.height,
    fps: fps.num / fps.den,
    frameRate: formatRate(fps),
    model: req.model,
    network: network.name,
    testModel: network.testModel,
    ...(sr === undefined ? {} : { srModel: sr.name }),
    syncMode: req.syncMode,
    drivenFrames: output.drivenFrames,
    faces: { tracks: pass.tracking.tracks.length, driven: driven.tracks.map((t) => t.id), method: driven.method },
    encoder: quality.mode === 'bitrate' ? { ...encoder, bitsPerSecond: quality.bitsPerSecond } : encoder,
    colour: {
      codec: colour.output.codec,
      bits: colour.output.bits,
      ...definedFields({ transfer: colour.output.transfer }),
      toneMapped: colour.toneMap,
    },
    stats: {
      wallMs: performance.now() - r.started,
      setupMs: s.setupMs,
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

/** The profile's keepSourceBitrate encodes at the source's bitrate; the others at the configured constant quality. */
async function videoQuality(
  req: LipsyncRequest,
  profile: Readonly<LipsyncProfile>,
  ffmpeg: string,
  video: VideoStreamInfo,
): Promise<VideoQuality> {
  if (req.lossless === true) return { mode: 'lossless' };
  const encoder = await chooseEncoder(ffmpeg, { ...DEFAULT_ENCODER, ...req.encoder }, req.logger);
  if (!profile.keepSourceBitrate) return { mode: 'crf', encoder };
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
      { sampleRate, maxSeconds: sourceFrames / fps + 1, ffmpegPath: ffmpeg, ...definedFields({ signal: req.signal }) },
    ).catch((error: unknown) => {
      if (req.signal?.aborted === true) throw error;
      req.logger?.warn(
        { err: error },
        "the video's soundtrack could not be decoded; judging the speaker by the job's audio",
      );
      return undefined;
    });
    if (own !== undefined) {
      const envelope = audioEnvelope(own, sampleRate, fps, sourceFrames);
      if (loudest(envelope) >= SILENT_RMS) return envelope;
    }
  }
  return envelopeThroughTimeline(fitted, sampleRate, plan, sourceFrames);
}
