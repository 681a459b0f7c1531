/**
 * Video upscaling, file in, MP4 (or Matroska for Matroska) out, as one stream: an ffmpeg decoder writes raw RGB frames to a
 * pipe, the super-resolution network upscales them (several frames in flight, their tiles batched
 * together: video-batcher.ts), and a second ffmpeg encodes them from a pipe, taking the audio from
 * the original file. The three stages overlap and are joined by bounded queues, so memory depends
 * on the frame size and the queue lengths, never on the video's length, and no frame touches the
 * disk. Output decisions are documented where they are made: sizes, odd sides, rates, variable
 * frame rate and rotation in video-geometry.ts; colour, bit depth, HDR and the frames' depth (8 or
 * 16 bits) in colour.ts; which streams are kept in stream-map.ts (all in src/video/, shared with
 * the mouth-synchronising pipeline), and docs/contract.md, "Video fidelity".
 *
 * Failure and cancellation: the first failure (or the caller's abort) stops every stage at once:
 * both ffmpeg processes get SIGTERM and then SIGKILL (and their pipes are closed, so neither waits
 * on the other), the queues wake their waiters, and the call returns only after both processes
 * were reaped and the partial output was removed. The output is written under a temporary name
 * beside the target and renamed into place on success, so a half-written result never has the
 * requested name.
 */
import { randomBytes } from 'node:crypto';
import { rename, rm } from 'node:fs/promises';
import { getPriority, setPriority } from 'node:os';
import { basename, dirname, join, resolve as resolvePath } from 'node:path';
import type { LoadedSrModel, SrModelLoader } from '../../../inference/index.js';
import {
  JobError,
  VIDEO_UPSCALE_CONTAINERS,
  checkVideo,
  priceVideoUpscale,
  type UpscaleFactor,
} from '../../../jobs/index.js';
import {
  allowedFrames,
  resolveFfmpeg,
  runProcess,
  spawnProcess,
  type MediaInfo,
  type PathNames,
  type VideoStreamInfo,
} from '../../../media/index.js';
import {
  type AudioPlan,
  BoundedQueue,
  type ColourPlan,
  DEFAULT_HDR_MODE,
  type HdrMode,
  type StreamMap,
  DEFAULT_ENCODER,
  type EncoderSettings,
  FfmpegFailure,
  FrameReader,
  type FrameTiming,
  type InfoLogger,
  Slots,
  StageGroup,
  type VideoEncoderName,
  type VideoGeometry,
  checkVideoDecodes,
  colourPlan,
  colourSource,
  firstAudio,
  chooseEncoder,
  decoderArgs,
  encoderArgs,
  endPipe,
  expectedFrameCount,
  ffmpegStage,
  formatRate,
  frameTiming,
  probeVideoExtras,
  rgbFrameBytes,
  streamMap,
  coverExtractArgs,
  coversToExtract,
  argsForFfmpeg,
  videoResultFormat,
  type ResultFormat,
  videoGeometry,
  writeWithBackpressure,
} from '../../../video/index.js';
import { type BatcherStats, TileBatcher, type UpscaledFrame, upscaleFrame } from './video-batcher.js';
import { definedFields } from '../../../defined-fields.js';
import { withSpan } from '../../../telemetry/index.js';

export interface VideoProgress {
  framesDone: number;
  /** Expected frames (the container's count, or duration x rate); `framesDone` may end slightly off. */
  framesTotal: number;
  /** Frames encoded per second of processing so far. */
  fps: number;
}

export interface VideoUpscaleRequest {
  inputPath: string;
  outputPath: string;
  factor: UpscaleFactor;
  /** From probing (probeMedia): container, duration, video and audio streams. */
  info: MediaInfo;
  /** Model name override (e.g. `esrgan-medium-x2`); default per factor. */
  modelName?: string;
  /** HDR (PQ / HLG) input kept as 10-bit HDR or tone-mapped to SDR (the job's `hdr`, else the worker's default). Default "keep". */
  hdr?: HdrMode;
  /** Encoder settings (config); unset fields take DEFAULT_ENCODER's. */
  encoder?: Partial<EncoderSettings>;
  /** Tile side override in input pixels. */
  tile?: number;
  /** Frames upscaled at once, their tiles batched together. Default 2. */
  framesInFlight?: number;
  /** Frames buffered between decoder and network, and between network and encoder. Default 2. */
  queueFrames?: number;
  ffmpegPath?: string;
  ffprobePath?: string;
  signal?: AbortSignal;
  /** Called at most every `progressIntervalMs` while frames are encoded, and once at the end. */
  onProgress?: (progress: VideoProgress) => void;
  progressIntervalMs?: number;
  /** Niceness added to both ffmpeg processes (see lowerPriority); 0 keeps the worker's. Default 5. */
  ffmpegNice?: number;
  logger?: InfoLogger;
}

export interface VideoUpscaleOutcome {
  outputPath: string;
  width: number;
  height: number;
  frames: number;
  /** Frame rate of the output, frames per second (e.g. 29.97). */
  fps: number;
  /** The same rate as ffmpeg writes it (e.g. "30000/1001"). */
  frameRate: string;
  /** How frames were timed: every input frame once, or resampled to constant rate (variable frame rate input). */
  timing: FrameTiming['mode'];
  /** Frames / rate, seconds. */
  durationSeconds: number;
  model: string;
  /** The H.264 encoder of an 8-bit result; libx265 for a 10-bit one. */
  encoder: VideoEncoderName | 'libx265';
  /** What became of the first audio track (every track is kept: `streams`). */
  audio: AudioPlan['mode'];
  /** The result's video: codec, bits per sample, transfer (PQ / HLG for HDR), whether it was tone-mapped. */
  colour: { codec: 'h264' | 'hevc'; bits: 8 | 10; transfer?: string; toneMapped: boolean };
  /** The result's container (the input's: Matroska for Matroska and WebM, else MP4), its extension and media type. */
  format: Pick<ResultFormat, 'container' | 'ext' | 'mediaType'>;
  /** Streams of the input kept beside the picture, and those the result's container cannot carry, with why. */
  streams: { kept: number; dropped: StreamMap['dropped'] };
  /** Wall time of the streaming part (decoder start to encoder exit), milliseconds. */
  streamMs: number;
  /** Time inside the network's calls, milliseconds (the part decode and encode hide behind). */
  inferenceMs: number;
  batches: Pick<BatcherStats, 'calls' | 'tiles' | 'largestBatch'>;
}

const DEFAULT_FRAMES_IN_FLIGHT = 2;
const DEFAULT_QUEUE_FRAMES = 2;
const DEFAULT_PROGRESS_INTERVAL_MS = 250;
const DEFAULT_FFMPEG_NICE = 5;
/** How long a broken pipe waits for its process to report its own exit (and its stderr) before the pipeline stops it. */
const EXIT_REPORT_GRACE_MS = 2_000;

/** Ranks of the failures a stage group keeps (video/stage-group.ts): the decoder's own exit explains most. */
const DECODER_RANK = 2;
const ENCODER_RANK = 1;

/** The quote's checks of a video upscale's input (jobs/input-checks.ts), in its wording: its video stream. */
export function checkVideoInput(info: MediaInfo, factor: UpscaleFactor): VideoStreamInfo {
  const video = checkVideo('video_url', info, VIDEO_UPSCALE_CONTAINERS);
  // VIDEO_TOO_LONG over 60 s.
  priceVideoUpscale(info.durationSeconds, factor);
  return video;
}

export async function upscaleVideoFile(
  req: VideoUpscaleRequest,
  loadModel: SrModelLoader,
): Promise<VideoUpscaleOutcome> {
  req.signal?.throwIfAborted();
  const video = checkVideoInput(req.info, req.factor);
  const timing = frameTiming(video);
  const framesInFlight = positive('framesInFlight', req.framesInFlight ?? DEFAULT_FRAMES_IN_FLIGHT);
  const queueFrames = positive('queueFrames', req.queueFrames ?? DEFAULT_QUEUE_FRAMES);
  const inputPath = resolvePath(req.inputPath);
  const outputPath = resolvePath(req.outputPath);

  let ffmpeg: string;
  try {
    ffmpeg = resolveFfmpeg(definedFields({ ffmpegPath: req.ffmpegPath }));
  } catch (error) {
    throw new JobError('UPSCALE_FAILED', (error as Error).message, { retryable: true, cause: error });
  }
  // What the quote measured bounds what is decoded (the backstop: docs/contract.md, "The bill is what runs").
  const quotedFrames = expectedFrameCount(video, req.info.durationSeconds, timing);
  // Independent preparations, side by side: they are the latency before the first frame. The
  // decode check reads the whole stream once before any network work, so a damaged or grown file
  // fails here instead of after most of its frames were upscaled.
  const withSignal = definedFields({ signal: req.signal });
  const [probed, model, chosen] = await Promise.allSettled([
    probeVideoExtras(inputPath, req.info.container, {
      ...definedFields({ ffprobePath: req.ffprobePath }),
      ...withSignal,
    }).then(async (extras) => {
      const maxFrames = allowedFrames(video.frameCount ?? quotedFrames);
      await checkVideoDecodes({
        ffmpeg,
        path: inputPath,
        container: req.info.container,
        videoIndex: extras.videoIndex,
        maxFrames,
        strict: true,
        ...withSignal,
      });
      return extras;
    }),
    loadModel('video', req.factor, req.modelName),
    chooseEncoder(ffmpeg, { ...DEFAULT_ENCODER, ...req.encoder }, req.logger),
  ]);
  req.signal?.throwIfAborted();
  // The input's fault first, then the worker's.
  const extras = valueOf(probed);
  const loaded = valueOf(model);
  const encoder = valueOf(chosen);
  const geometry = videoGeometry(video, Number(req.factor), loaded.model.scale);
  const source = colourSource(extras);
  const colour = colourPlan(source, req.hdr ?? DEFAULT_HDR_MODE, geometry.decoded);
  const format = videoResultFormat(req.info.container);
  const partialPath = join(dirname(outputPath), `.${basename(outputPath)}.${randomBytes(4).toString('hex')}.partial`);
  const original = { path: inputPath, container: req.info.container };
  const covers = await extractCovers(
    ffmpeg,
    original,
    streamMap(extras.streams, extras.videoIndex, format.container),
    partialPath,
    req.signal,
  );
  const { streams } = covers;
  if (streams.dropped.length > 0)
    req.logger?.warn(
      { dropped: streams.dropped },
      `input streams the ${format.container.toUpperCase()} result cannot carry were left out`,
    );
  const batcher = new TileBatcher(loaded.model, Math.max(1, loaded.tiling.batch ?? 1) * framesInFlight);
  let streamed: { frames: number; streamMs: number };
  try {
    const decodeArgs = await argsForFfmpeg(
      ffmpeg,
      decoderArgs({
        inputPath,
        container: req.info.container,
        geometry,
        timing,
        matrix: colour.inputMatrix,
        colour,
        colourSource: source,
        interlaced: extras.interlaced === true,
        videoIndex: extras.videoIndex,
        maxFrames: allowedFrames(quotedFrames),
      }),
    );
    const encodeArgs = await argsForFfmpeg(
      ffmpeg,
      encoderArgs({
        geometry,
        timing,
        encoder,
        extras,
        colour,
        source: original,
        streams,
        coverFiles: covers.files,
        outputPath: partialPath,
      }),
    );
    try {
      // Decoder, network and encoder stream together: one span for all frames, the network's share in its attributes.
      streamed = await withSpan(
        'frames',
        {
          attributes: {
            'media.model': loaded.name,
            'media.frames.quoted': quotedFrames,
            'media.encoder': encoder.codec,
          },
        },
        async (span) => {
          const done = await runStreams({
            ffmpeg,
            decodeArgs,
            encodeArgs,
            geometry,
            depth: colour.depth,
            batcher,
            tiling: { ...loaded.tiling, ...definedFields({ tile: req.tile }) },
            framesInFlight,
            queueFrames,
            framesTotal: quotedFrames,
            paths: [
              [inputPath, 'input'],
              [partialPath, 'output'],
            ],
            signal: req.signal,
            onProgress: req.onProgress,
            progressIntervalMs: req.progressIntervalMs ?? DEFAULT_PROGRESS_INTERVAL_MS,
            ffmpegNice: req.ffmpegNice ?? DEFAULT_FFMPEG_NICE,
          });
          const { calls, tiles, runMs } = batcher.stats;
          span.setAttributes({
            'media.frames': done.frames,
            'media.batches': calls,
            'media.tiles': tiles,
            'media.network.ms': Math.round(runMs),
          });
          return done;
        },
      );
      await rename(partialPath, outputPath);
    } catch (error) {
      await rm(partialPath, { force: true });
      throw error;
    }
  } finally {
    await Promise.all([...covers.files.values()].map((file) => rm(file, { force: true })));
  }

  if (timing.mode === 'passthrough' && video.frameCount !== undefined && video.frameCount !== streamed.frames) {
    req.logger?.warn(
      { expected: video.frameCount, frames: streamed.frames },
      `decoded ${streamed.frames} frames where the container declares ${video.frameCount}`,
    );
  }
  const fps = timing.rate.num / timing.rate.den;
  return {
    outputPath,
    width: geometry.output.width,
    height: geometry.output.height,
    frames: streamed.frames,
    fps,
    frameRate: formatRate(timing.rate),
    timing: timing.mode,
    durationSeconds: streamed.frames / fps,
    model: loaded.name,
    encoder: colour.output.codec === 'hevc' ? 'libx265' : encoder.codec,
    audio: firstAudio(streams).mode,
    colour: {
      codec: colour.output.codec,
      bits: colour.output.bits,
      ...definedFields({ transfer: colour.output.transfer }),
      toneMapped: colour.toneMap,
    },
    format: { container: format.container, ext: format.ext, mediaType: format.mediaType },
    streams: { kept: streams.kept.length, dropped: streams.dropped },
    streamMs: streamed.streamMs,
    inferenceMs: batcher.stats.runMs,
    batches: { calls: batcher.stats.calls, tiles: batcher.stats.tiles, largestBatch: batcher.stats.largestBatch },
  };
}

/**
 * Takes each Matroska cover out of the source into a file beside the partial output, for `-attach`
 * (stream-map.ts). A cover that cannot be read is left out, said in the log and the outcome.
 */
async function extractCovers(
  ffmpeg: string,
  original: { path: string; container: MediaInfo['container'] },
  streams: StreamMap,
  partialPath: string,
  signal: AbortSignal | undefined,
): Promise<{ streams: StreamMap; files: Map<number, string> }> {
  const files = new Map<number, string>();
  const failed = new Set<number>();
  for (const index of coversToExtract(streams)) {
    const file = `${partialPath}.cover-${index}`;
    try {
      await runProcess(ffmpeg, coverExtractArgs(original, index, file), {
        timeoutMs: 30_000,
        ...definedFields({ signal }),
      });
      files.set(index, file);
    } catch (error) {
      await rm(file, { force: true });
      if (signal?.aborted === true) {
        await Promise.all([...files.values()].map((done) => rm(done, { force: true })));
        throw error;
      }
      failed.add(index);
    }
  }
  if (failed.size === 0) return { streams, files };
  const kept = streams.kept.filter((s) => !failed.has(s.index));
  const dropped = streams.kept
    .filter((s) => failed.has(s.index))
    .map((s) => ({
      index: s.index,
      type: 'video' as const,
      codec: 'cover',
      reason: 'the cover art could not be read',
    }));
  return { streams: { ...streams, kept, dropped: [...streams.dropped, ...dropped] }, files };
}

interface StreamPlan {
  ffmpeg: string;
  decodeArgs: string[];
  encodeArgs: string[];
  geometry: VideoGeometry;
  /** Bits per sample of the frames on the pipes (colour.ts). */
  depth: ColourPlan['depth'];
  batcher: TileBatcher;
  tiling: LoadedSrModel['tiling'];
  framesInFlight: number;
  queueFrames: number;
  framesTotal: number;
  paths: PathNames;
  signal: AbortSignal | undefined;
  onProgress: ((progress: VideoProgress) => void) | undefined;
  progressIntervalMs: number;
  ffmpegNice: number;
}

/** Decoder -> network -> encoder; resolves once both processes exited cleanly. */
async function runStreams(plan: StreamPlan): Promise<{ frames: number; streamMs: number }> {
  const { signal, geometry } = plan;
  signal?.throwIfAborted();
  const started = performance.now();
  const group = new StageGroup(signal, 'video pipeline');
  const decoded = new BoundedQueue<Buffer>(plan.queueFrames);
  const upscaled = new BoundedQueue<Promise<UpscaledFrame>>(plan.framesInFlight + plan.queueFrames);
  const slots = new Slots(plan.framesInFlight);
  group.onHalt(() => {
    decoded.fail(group.stopped);
    upscaled.fail(group.stopped);
    slots.fail(group.stopped);
  });

  const decoder = spawnProcess(plan.ffmpeg, plan.decodeArgs, { stdout: 'pipe', signal: group.signal });
  const encoder = spawnProcess(plan.ffmpeg, plan.encodeArgs, { stdin: 'pipe', stdout: 'ignore', signal: group.signal });
  lowerPriority(decoder.child.pid, plan.ffmpegNice);
  lowerPriority(encoder.child.pid, plan.ffmpegNice);
  // SIGTERM alone can leave ffmpeg blocked on a pipe: closing our ends gets it out of the read or write.
  group.onHalt(() => {
    decoder.stdout?.destroy();
    encoder.stdin?.destroy();
  });
  const decoderDone = group.run(ffmpegStage(decoder.done, 'decoder', plan.paths, group.stopped), DECODER_RANK);
  const encoderDone = group.run(ffmpegStage(encoder.done, 'encoder', plan.paths, group.stopped), ENCODER_RANK);

  let framesWritten = 0;
  let lastProgress = 0;
  const report = (force: boolean): void => {
    if (plan.onProgress === undefined) return;
    const now = performance.now();
    if (!force && now - lastProgress < plan.progressIntervalMs) return;
    lastProgress = now;
    const seconds = (now - started) / 1000;
    try {
      plan.onProgress({
        framesDone: framesWritten,
        framesTotal: Math.max(plan.framesTotal, framesWritten),
        fps: seconds > 0 ? framesWritten / seconds : 0,
      });
    } catch {
      // Progress is informational: a failing reporter must not fail the job.
    }
  };

  const readStage = async (): Promise<void> => {
    const stdout = decoder.stdout;
    if (stdout === null) throw new Error('The decoder has no output pipe');
    const reader = new FrameReader(stdout, rgbFrameBytes(geometry.decoded, plan.depth));
    for (;;) {
      let frame: Buffer | null;
      try {
        frame = await reader.next();
      } catch (error) {
        // A pipe that breaks by itself usually means the decoder is dying: let it report why first.
        if (!group.signal.aborted) await within(decoder.done, EXIT_REPORT_GRACE_MS);
        throw error;
      }
      if (frame === null) break;
      await decoded.push(frame);
    }
    decoded.close();
  };

  // Frames inside the network, awaited before returning so no inference outlives the call.
  const inFlight = new Set<Promise<UpscaledFrame>>();
  const networkStage = async (): Promise<void> => {
    const { width, height } = geometry.decoded;
    for (;;) {
      const frame = await decoded.shift();
      if (frame === undefined) break;
      await slots.acquire();
      const job = upscaleFrame(plan.batcher, frame, { width, height }, plan.depth, {
        ...plan.tiling,
        signal: group.signal,
      }).finally(() => {
        slots.release();
        inFlight.delete(job);
      });
      inFlight.add(job);
      void group.run(job);
      await upscaled.push(job);
    }
    upscaled.close();
  };

  const writeStage = async (): Promise<void> => {
    const stdin = encoder.stdin;
    if (stdin === null) throw new Error('The encoder has no input pipe');
    const frameBytes = rgbFrameBytes(geometry.network, plan.depth);
    try {
      for (;;) {
        const job = await upscaled.shift();
        if (job === undefined) break;
        const result = await job;
        if (result.data.byteLength !== frameBytes) {
          throw new Error(`Expected upscaled frames of ${frameBytes} bytes but received ${result.data.byteLength}`);
        }
        await writeWithBackpressure(
          stdin,
          Buffer.from(result.data.buffer, result.data.byteOffset, result.data.byteLength),
          group.signal,
        );
        framesWritten += 1;
        report(false);
      }
      await endPipe(stdin, group.signal);
    } catch (error) {
      if (!group.signal.aborted) await within(encoder.done, EXIT_REPORT_GRACE_MS);
      throw error;
    }
  };

  await group.settle([
    group.run(readStage()),
    group.run(networkStage()),
    group.run(writeStage()),
    decoderDone,
    encoderDone,
  ]);
  await Promise.allSettled([...inFlight]);
  group.throwIfFailed(upscaleFailure);
  if (framesWritten === 0) throw new JobError('PROBE_FAILED', 'The video contains no decodable frames');
  report(true);
  return { frames: framesWritten, streamMs: performance.now() - started };
}

/**
 * A failure of the video upscale: a decoder that could not decode the file is the input's fault
 * (PROBE_FAILED); the rest stays a processing failure, which the contract's edge (app/run-job.ts)
 * makes UPSCALE_FAILED, retryable where the failure says so.
 */
export function upscaleFailure(error: unknown): unknown {
  if (error instanceof FfmpegFailure && error.inputFault)
    return new JobError('PROBE_FAILED', error.message, { cause: error });
  return error;
}

/**
 * Inference is the bottleneck and its threads run in lockstep: an ffmpeg that takes a core away
 * mid-operator stalls all of them. A lower priority lets the decoder and encoder use the cycles
 * inference leaves; the bounded queues keep them from falling behind (a full queue idles the network
 * until the encoder caught up). Refused in some containers, where it is simply not applied.
 */
function lowerPriority(pid: number | undefined, steps: number): void {
  if (pid === undefined || steps <= 0) return;
  try {
    setPriority(pid, Math.min(19, getPriority(pid) + steps));
  } catch {
    // Not permitted here; the pipeline works the same, only with less headroom for inference.
  }
}

/** Waits for a promise to settle, at most `ms`. */
async function within(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    promise.then(
      () => {},
      () => {},
    ),
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ms);
    }),
  ]);
  clearTimeout(timer);
}

function valueOf<T>(result: PromiseSettledResult<T>): T {
  if (result.status === 'rejected') throw result.reason;
  return result.value;
}

function positive(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 1)
    throw new RangeError(`Expected ${name} to be a positive integer but received ${String(value)}`);
  return value;
}
