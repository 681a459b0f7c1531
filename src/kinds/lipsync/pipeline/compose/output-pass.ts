/**
 * The lip-sync pipeline's output pass: output frames in order, the driven face in each replaced by
 * the network's, encoded with the fitted audio. Four stages overlap, joined by a bounded queue of
 * output frames: a producer (source frames, crops, network inputs), the network (one batch at a
 * time), pasting, and a writer to the ffmpeg encoder. Stopping kills both ffmpeg processes and
 * returns once they are reaped.
 *
 * The stages, when a batch goes to the network early, memory, the reference face and stopping are
 * told in docs/lipsync.md ("The output pass").
 */
import type { LoadedSrModel } from '../../../../inference/index.js';
import { spawnProcess, type PathNames } from '../../../../media/index.js';
import {
  BoundedQueue,
  StageGroup,
  endPipe,
  ffmpegStage,
  frameTimingOptionOf,
  withFrameTimingOption,
  writeWithBackpressure,
} from '../../../../video/index.js';
import { compositeFace, type GeneratedFace } from './composite.js';
import { cropFace, cropForFace, type FaceCrop } from './crop.js';
import {
  lipsyncEncoderArgs,
  type LipsyncEncoderInput,
  SourceFrames,
  cacheCapacity,
  ffmpegFrameStream,
  sourceDecoderArgs,
  type SourceDecodeSpec,
} from '../frames/index.js';
import { tensorToRgb, type TensorLayout, wav2lipInput, type LipsyncModel } from '../network/index.js';
import { DEFAULT_MOUTH_MASK } from './mask.js';
import { melChunk, type MelSpectrogram } from '../audio/index.js';
import { superResolveMouths } from './mouth-sr.js';
import type { TimelinePlan } from '../timeline.js';
import type { FaceBox } from '../types.js';

/** Source frames kept for loop and bounce: 82 frames of 1080p, 194 of 720p, 26 s of 360p at 30 fps (half as many 16-bit frames). */
export const DEFAULT_CACHE_BYTES = 512 * 1024 * 1024;
/** Output frames queued beyond three batches (one being written, one in the network, one being filled). */
const QUEUE_SLACK = 4;

/** The encoder's own exit explains a broken pipe better than the writer does (video/stage-group.ts). */
const ENCODER_RANK = 1;

export interface OutputPassInput {
  ffmpeg: string;
  /** The source at its displayed size. */
  spec: SourceDecodeSpec;
  plan: TimelinePlan;
  /**
   * Per source frame: the face to drive, in frame pixels, or undefined to pass the frame through;
   * a promise while the face pass has not decided the frame yet (face-schedule.ts).
   */
  boxAt: (sourceFrame: number) => FaceBox | undefined | Promise<FaceBox | undefined>;
  model: LipsyncModel;
  /** Turn each crop upright along the eye line (vendor-lipsync-3). */
  align: boolean;
  /** The super-resolution engine for faces larger than the network's output (vendor-lipsync-2-pro). */
  sr: LoadedSrModel | undefined;
  /** Mel features of the audio fitted to the timeline's duration. */
  mel: MelSpectrogram;
  /** Quality, pixel aspect, the audio to mux and the (temporary) output path. */
  encode: Pick<LipsyncEncoderInput, 'quality' | 'sampleAspect' | 'colour' | 'audio' | 'metadataSource' | 'outputPath'>;
  /** Memory for source frames kept for loop and bounce. */
  cacheBytes: number;
  /** Local paths and what to call them in error messages. */
  paths: PathNames;
  signal?: AbortSignal;
  /** After each frame written to the encoder, and once more (final) when the output is complete. */
  onWritten?: (frames: number, final: boolean) => void;
}

/** Where the output pass spent its time (the job's stats report them as they are). */
export interface OutputPassTimings {
  /** Inside the lip-sync network's calls. */
  modelMs: number;
  modelCalls: number;
  /** Inside the super-resolution pass (vendor-lipsync-2-pro), and the faces it upscaled. */
  srMs: number;
  srFaces: number;
  /** Cutting crops and building the network's input. */
  prepareMs: number;
  /** Converting outputs back and pasting them. */
  pasteMs: number;
}

export interface OutputPassResult extends OutputPassTimings {
  drivenFrames: number;
  frames: SourceFrames['stats'];
  capacity: number;
}

interface Deferred {
  promise: Promise<Uint8Array>;
  resolve(data: Uint8Array): void;
  reject(error: unknown): void;
}

function deferred(): Deferred {
  let resolve!: (data: Uint8Array) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<Uint8Array>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  promise.catch(() => undefined);
  return { promise, resolve, reject };
}

interface BatchItem {
  /** A private copy of the source frame (16-bit samples for a 16-bit plan), pasted into in place. */
  frame: Uint8Array | Uint16Array;
  crop: FaceCrop;
  done: Deferred;
}

interface Batch {
  items: BatchItem[];
  mel: Float32Array;
  faces: Float32Array;
  /** Handed to the network (full, last, or flushed because the encoder waits for it). */
  sent: boolean;
}

/** An output frame in order: its pixels once ready, and the batch it waits for, if any. */
interface Pending {
  frame: Promise<Uint8Array>;
  batch?: Batch;
}

/**
 * A source frame's private copy to paste into: its bytes, or its 16-bit samples. rgb48le is read as
 * the platform's own order (little-endian: every platform Node's prebuilt ONNX Runtime serves); the
 * copy is aligned, which the decoder's buffer need not be.
 */
function privateCopy(source: Uint8Array, deep: boolean): Uint8Array | Uint16Array {
  if (!deep) return new Uint8Array(source);
  const samples = new Uint16Array(source.length / 2);
  new Uint8Array(samples.buffer).set(source);
  return samples;
}

/** The bytes the encoder's pipe takes from a frame of either depth. */
function frameBytesOf(frame: Uint8Array | Uint16Array): Uint8Array {
  return frame instanceof Uint16Array ? new Uint8Array(frame.buffer, frame.byteOffset, frame.byteLength) : frame;
}

export async function runOutputPass(o: OutputPassInput): Promise<OutputPassResult> {
  const { plan, model, spec } = o;
  const { manifest } = model;
  const { width, height } = spec.size;
  // 16-bit frames (HDR kept, deeper SDR) stay 16-bit from decoder to encoder; only the network's crops are 8-bit.
  const deep = spec.colour?.plan.depth === 16;
  const frameBytes = width * height * 3 * (deep ? 2 : 1);
  const faceSize = manifest.face.size;
  const plane = faceSize * faceSize;
  const melSize = manifest.inputs.mel.shape[2] * manifest.inputs.mel.shape[3];
  const faceValues = 6 * plane;
  const batchSize = Math.max(1, model.batch);
  const inputLayout: TensorLayout = {
    channelOrder: manifest.inputs.faces.channels,
    range: manifest.inputs.faces.range,
    maskFromRow: manifest.face.maskFromRow,
  };
  const outputLayout: TensorLayout = { channelOrder: manifest.output.channels, range: manifest.output.range };
  const { align } = o;

  const group = new StageGroup(o.signal, 'lip-sync pipeline');
  const queue = new BoundedQueue<Pending>(3 * batchSize + QUEUE_SLACK);
  const outstanding = new Set<Deferred>();

  const schedule = new Int32Array(plan.outputFrames);
  for (let i = 0; i < plan.outputFrames; i += 1) schedule[i] = plan.sourceFrame(i);
  const capacity = cacheCapacity(frameBytes, o.cacheBytes, 2, plan.sourceFramesUsed);
  const sources = new SourceFrames(
    (start) =>
      ffmpegFrameStream(
        o.ffmpeg,
        sourceDecoderArgs(spec, { start, end: plan.sourceFramesUsed }),
        frameBytes,
        group.signal,
      ),
    schedule,
    capacity,
  );
  group.onHalt(() => {
    queue.fail(group.stopped);
    for (const d of outstanding) d.reject(group.stopped);
    outstanding.clear();
  });

  const encoder = spawnProcess(
    o.ffmpeg,
    withFrameTimingOption(
      lipsyncEncoderArgs({ ...o.encode, size: spec.size, rate: plan.fps, durationSeconds: plan.durationSeconds }),
      frameTimingOptionOf(o.ffmpeg),
    ),
    { stdin: 'pipe', stdout: 'ignore', signal: group.signal },
  );
  group.onHalt(() => encoder.stdin?.destroy());
  const encoderDone = group.run(ffmpegStage(encoder.done, 'encoder', o.paths, group.stopped), ENCODER_RANK);

  const stats = { drivenFrames: 0, modelMs: 0, modelCalls: 0, srMs: 0, srFaces: 0, prepareMs: 0, pasteMs: 0 };
  // The network runs one batch at a time; pasting a batch (and its super-resolution) runs beside
  // the network's next batch, in order.
  let modelChain: Promise<unknown> = Promise.resolve();
  let pasteChain: Promise<void> = Promise.resolve();

  const newBatch = (): Batch => ({
    items: [],
    mel: new Float32Array(batchSize * melSize),
    faces: new Float32Array(batchSize * faceValues),
    sent: false,
  });
  let current = newBatch();

  const runModel = async (batch: Batch): Promise<Float32Array | undefined> => {
    const count = batch.items.length;
    if (group.signal.aborted) return undefined;
    const t0 = performance.now();
    const out = await model.run(
      count === batchSize ? batch.mel : batch.mel.subarray(0, count * melSize),
      count === batchSize ? batch.faces : batch.faces.subarray(0, count * faceValues),
      count,
    );
    stats.modelMs += performance.now() - t0;
    stats.modelCalls += 1;
    return out;
  };

  const paste = async (batch: Batch, out: Float32Array | undefined): Promise<void> => {
    if (out === undefined || group.signal.aborted) return;
    const t1 = performance.now();
    const generated: GeneratedFace[] = batch.items.map((_, k) => ({
      data: tensorToRgb(out, faceSize, outputLayout, k * 3 * plane),
      size: faceSize,
    }));
    stats.pasteMs += performance.now() - t1;
    // Super-resolution where the face is larger on screen than the network's output; a smaller
    // face is pasted by shrinking the output, which upscaling first would not change.
    const enlarged =
      o.sr === undefined
        ? []
        : batch.items.flatMap((item, k) => (Math.max(item.crop.width, item.crop.height) > faceSize ? [k] : []));
    if (o.sr !== undefined && enlarged.length > 0) {
      const t2 = performance.now();
      const sharp = await superResolveMouths(
        o.sr,
        enlarged.map((k) => (generated[k] as GeneratedFace).data),
        faceSize,
        DEFAULT_MOUTH_MASK.top,
        group.signal,
      );
      enlarged.forEach((k, j) => (generated[k] = sharp[j] as GeneratedFace));
      stats.srMs += performance.now() - t2;
      stats.srFaces += enlarged.length;
    }
    for (let k = 0; k < batch.items.length; k += 1) {
      if (group.signal.aborted) return;
      const item = batch.items[k] as BatchItem;
      const t3 = performance.now();
      compositeFace({ data: item.frame, width, height }, generated[k] as GeneratedFace, item.crop, DEFAULT_MOUTH_MASK);
      stats.pasteMs += performance.now() - t3;
      outstanding.delete(item.done);
      item.done.resolve(frameBytesOf(item.frame));
    }
  };

  /** Hands the batch being filled to the network and starts a new one. */
  const sendCurrent = (): void => {
    const batch = current;
    if (batch.items.length === 0) return;
    current = newBatch();
    batch.sent = true;
    const result = modelChain.then(() => runModel(batch));
    modelChain = result.catch(() => undefined);
    pasteChain = pasteChain.then(async () => paste(batch, await result)).catch((error: unknown) => group.fail(error));
  };

  // A batch goes to the network when full, or when waiting for it would stall the pipeline: the
  // encoder waits for its first frame while the producer waits for room in the queue (or is done).
  let writerWaitsFor: Batch | undefined;
  let producerBlocked = false;
  let producerDone = false;
  const enqueue = async (entry: Pending): Promise<void> => {
    if (queue.size >= queue.capacity) {
      if (writerWaitsFor !== undefined && writerWaitsFor === current) sendCurrent();
      producerBlocked = true;
    }
    try {
      await queue.push(entry);
    } finally {
      producerBlocked = false;
    }
  };

  /** The frame's face; while the face pass catches up, a batch the writer waits for goes to the network as it is. */
  const boxFor = async (sourceFrame: number): Promise<FaceBox | undefined> => {
    const box = o.boxAt(sourceFrame);
    if (!(box instanceof Promise)) return box;
    if (writerWaitsFor !== undefined && writerWaitsFor === current) sendCurrent();
    producerBlocked = true;
    let onStop: (() => void) | undefined;
    try {
      // A stop must not wait for the face pass.
      const stopping = new Promise<never>((_, reject) => {
        onStop = () => reject(group.stopped);
        if (group.signal.aborted) onStop();
        else group.signal.addEventListener('abort', onStop, { once: true });
      });
      return await Promise.race([box, stopping]);
    } finally {
      if (onStop !== undefined) group.signal.removeEventListener('abort', onStop);
      producerBlocked = false;
    }
  };

  const produce = async (): Promise<void> => {
    for (let p = 0; p < plan.outputFrames; p += 1) {
      const box = await boxFor(schedule[p] as number);
      const source = await sources.frameAt(p);
      if (box === undefined) {
        await enqueue({ frame: Promise.resolve(source) });
        continue;
      }
      const t0 = performance.now();
      const frame = privateCopy(source, deep);
      const crop = cropForFace(box, { align });
      const face = cropFace({ data: frame, width, height }, crop, faceSize);
      const batch = current;
      const k = batch.items.length;
      // The reference is the same crop (see the header).
      wav2lipInput(face, face, faceSize, inputLayout, batch.faces, k * faceValues);
      melChunk(o.mel, p, plan.fps, batch.mel, k * melSize, manifest.audio);
      const done = deferred();
      outstanding.add(done);
      batch.items.push({ frame, crop, done });
      stats.drivenFrames += 1;
      stats.prepareMs += performance.now() - t0;
      if (batch.items.length === batchSize) sendCurrent();
      await enqueue({ frame: done.promise, batch });
    }
    producerDone = true;
    sendCurrent();
    queue.close();
  };

  let written = 0;
  const write = async (): Promise<void> => {
    const stdin = encoder.stdin;
    if (stdin === null) throw new Error('The encoder has no input pipe');
    for (;;) {
      const next = await queue.shift();
      if (next === undefined) break;
      if (next.batch !== undefined && !next.batch.sent) {
        if (producerBlocked || producerDone) sendCurrent();
        else writerWaitsFor = next.batch;
      }
      const data = await next.frame;
      writerWaitsFor = undefined;
      if (data.length !== frameBytes)
        throw new Error(`Expected output frames of ${frameBytes} bytes but received ${data.length}`);
      await writeWithBackpressure(stdin, data, group.signal);
      written += 1;
      o.onWritten?.(written, false);
    }
    await endPipe(stdin, group.signal);
  };

  await group.settle([group.run(produce()), group.run(write()), encoderDone]);
  // A network call or super-resolution in flight on another thread cannot be interrupted; after a
  // stop it finishes on its own and its result is dropped (it only touches private frame copies).
  if (!group.signal.aborted) await pasteChain;
  await sources.close();
  group.throwIfFailed();
  if (written !== plan.outputFrames)
    throw new Error(`Expected ${plan.outputFrames} frames written but wrote ${written}`);
  o.onWritten?.(written, true);
  return { ...stats, frames: sources.stats, capacity };
}
