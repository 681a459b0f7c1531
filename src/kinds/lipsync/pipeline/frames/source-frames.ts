/**
 * The source video's frames for a lip-sync job, by frame index, with bounded memory.
 *
 * Decoding: ffmpeg writes raw rgb24 frames (rgb48le for a 16-bit colour plan) to a pipe, one
 * process per pass over the file. Frame indices are ffmpeg's own: every decoded frame once in
 * presentation order (constant frame rate input), or the frames of the input resampled to its
 * average rate by the `fps` filter (variable frame rate input such as most GIFs). The same argument
 * builder serves the detection pass and the compositing pass, so both count frames alike. A pass that must start at frame S uses
 * `trim=start_frame=S` right after decoding: exact by construction (no timestamp seeking), and the
 * frames before S are only decoded, never converted to RGB or piped.
 *
 * Delivery (`SourceFrames`): the output asks for source frames in the order the timeline shows
 * them, which is known in full before the first frame is decoded. cut_off, silence and remap ask in
 * non-decreasing order and stream through one decoder with one frame kept; loop starts over at
 * frame 0, and bounce walks backwards. A cache of `capacity` frames is managed with the optimal
 * offline policy (Belady's: when full, drop the frame whose next use lies furthest ahead), and a
 * frame that is neither cached nor ahead of the decoder restarts it at the lowest frame among the
 * next `capacity` distinct frames the output will ask for, so a backward run is decoded in forward
 * chunks of `capacity` frames. A clip that fits in the cache is decoded exactly once, whatever the
 * mode; a longer one costs about n^2 / (2 capacity) extra decoded-only frames per backward run.
 */
import {
  type ColourMatrix,
  type ColourPlan,
  type ColourSource,
  type FrameTiming,
  type Size,
  decodeColourFilters,
  formatRate,
  DEINTERLACE_FILTER,
  pipePixelFormat,
  rgbFilters,
  FrameReader,
  frameTimingOptionOf,
  withFrameTimingOption,
} from '../../../../video/index.js';
import {
  quietFfmpegArgs,
  rgbPipeOutputArgs,
  safeFileInputArgs,
  spawnProcess,
  type StreamingProcess,
  type ContainerKind,
} from '../../../../media/index.js';
import { errorMessage } from '../../../../errors.js';
import { definedFields } from '../../../../defined-fields.js';

export interface SourceDecodeSpec {
  inputPath: string;
  container: ContainerKind;
  timing: FrameTiming;
  /** The input's YUV matrix (video-args.ts inputMatrix). */
  matrix: ColourMatrix;
  /**
   * The colour plan (video/colour.ts): rgb24, tone-mapped or not, for an 8-bit plan; rgb48le for a
   * 16-bit one (HDR kept, deeper SDR). Default a plain 8-bit read with `matrix`.
   */
  colour?: { plan: ColourPlan; source: Pick<ColourSource, 'transfer' | 'primaries'> };
  interlaced?: boolean;
  /** Size of the frames on the pipe (the displayed size, or smaller for detection). */
  size: Size;
  /** The backstop: no frame at or past this index is ever delivered (what the quote allows). */
  maxFrames?: number;
}

export interface FrameRange {
  /** First frame delivered. Default 0. */
  start?: number;
  /** Frames from `end` on are not delivered (the decoder stops there). */
  end?: number;
}

function checkIndex(name: string, value: number, least: number): void {
  if (!Number.isInteger(value) || value < least) {
    throw new RangeError(`Expected ${name} to be an integer of at least ${least} but received ${String(value)}`);
  }
}

/** ffmpeg's arguments: frames [start, end) of the first video stream as rgb24 (rgb48le for a 16-bit plan) at `spec.size` on stdout. */
export function sourceDecoderArgs(spec: SourceDecodeSpec, range: FrameRange = {}): string[] {
  const start = range.start ?? 0;
  checkIndex('the start frame', start, 0);
  if (range.end !== undefined) checkIndex('the end frame', range.end, start + 1);
  const end = spec.maxFrames === undefined ? range.end : Math.min(range.end ?? spec.maxFrames, spec.maxFrames);
  checkIndex('the frame width', spec.size.width, 1);
  checkIndex('the frame height', spec.size.height, 1);
  const filters: string[] = [];
  if (spec.interlaced === true) filters.push(DEINTERLACE_FILTER);
  // Inside the graph (not -r on the output), so that trim counts the resampled frames.
  if (spec.timing.mode === 'cfr') filters.push(`fps=${formatRate(spec.timing.rate)}`);
  const trim = [...(start > 0 ? [`start_frame=${start}`] : []), ...(end !== undefined ? [`end_frame=${end}`] : [])];
  if (trim.length > 0) filters.push(`trim=${trim.join(':')}`);
  filters.push(
    ...(spec.colour === undefined
      ? rgbFilters(spec.size, spec.matrix)
      : decodeColourFilters(spec.colour.plan, spec.colour.source, spec.size)),
  );
  return [
    ...quietFfmpegArgs(),
    ...safeFileInputArgs(spec.inputPath, spec.container),
    '-map',
    '0:V:0',
    '-an',
    '-sn',
    '-dn',
    '-vf',
    filters.join(','),
    '-fps_mode',
    'passthrough',
    ...rgbPipeOutputArgs(pipePixelFormat(spec.colour?.plan.depth ?? 8)),
  ];
}

/** Frames in order from some start frame; `next` gives null after the last. */
export interface FrameStream {
  next(): Promise<Buffer | null>;
  /** Stops the stream early (kills its process) and waits until it is gone. */
  close(): Promise<void>;
}

export type OpenFrameStream = (startFrame: number) => FrameStream;

export class DecoderFailure extends Error {
  constructor(readonly error: unknown) {
    super(`The video decoder failed: ${errorMessage(error)}`);
    this.name = 'DecoderFailure';
  }
}

/**
 * One ffmpeg decoder as a FrameStream. A stream that ends reports the decoder's own failure, if
 * any (wrapped in DecoderFailure), rather than a short video; `close` swallows the failure of a
 * process it killed itself.
 */
export function ffmpegFrameStream(
  ffmpeg: string,
  args: readonly string[],
  frameBytes: number,
  signal?: AbortSignal,
): FrameStream {
  const proc: StreamingProcess = spawnProcess(ffmpeg, withFrameTimingOption(args, frameTimingOptionOf(ffmpeg)), {
    stdout: 'pipe',
    ...definedFields({ signal }),
  });
  const stdout = proc.stdout;
  if (stdout === null) throw new Error('The decoder has no output pipe');
  const reader = new FrameReader(stdout, frameBytes);
  let closing = false;
  return {
    async next(): Promise<Buffer | null> {
      let frame: Buffer | null;
      try {
        frame = await reader.next();
      } catch (error) {
        // A broken pipe is the symptom; the process's exit says why.
        await proc.done.catch((failure: unknown) => {
          throw closing || signal?.aborted === true ? failure : new DecoderFailure(failure);
        });
        throw error;
      }
      if (frame === null) {
        await proc.done.catch((failure: unknown) => {
          throw signal?.aborted === true ? failure : new DecoderFailure(failure);
        });
      }
      return frame;
    },
    async close(): Promise<void> {
      closing = true;
      stdout.destroy();
      proc.kill();
      await proc.done.catch(() => undefined);
    },
  };
}

export interface SourceFramesStats {
  /** Frames read from decoders (including those read only to pass them). */
  decoded: number;
  /** Decoders started. */
  decoders: number;
  /** Requests served from the cache. */
  hits: number;
  /** Most frames held at once. */
  peakCached: number;
}

/**
 * Serves `schedule[p]` for output positions p = 0, 1, 2, ... (each asked once, in order). The
 * returned buffers may be held by the cache and handed out again: callers must not modify them.
 */
export class SourceFrames {
  readonly capacity: number;
  readonly stats: SourceFramesStats = { decoded: 0, decoders: 0, hits: 0, peakCached: 0 };
  readonly #open: OpenFrameStream;
  readonly #schedule: Int32Array;
  /** Next position asking for the same frame as position p, or -1. */
  readonly #nextUse: Int32Array;
  /** Per frame: the first position at or after the current one that asks for it, or -1. */
  readonly #upcoming: Map<number, number>;
  readonly #cache = new Map<number, Buffer>();
  #stream: FrameStream | undefined;
  /** Index of the frame the open stream delivers next. */
  #streamNext = 0;
  #position = 0;
  #closed = false;

  constructor(open: OpenFrameStream, schedule: ArrayLike<number>, capacity: number) {
    checkIndex('the frame cache capacity', capacity, 1);
    this.#open = open;
    this.capacity = capacity;
    this.#schedule = Int32Array.from(schedule);
    for (const frame of this.#schedule) checkIndex('a scheduled source frame', frame, 0);
    this.#nextUse = new Int32Array(this.#schedule.length).fill(-1);
    this.#upcoming = new Map();
    for (let p = this.#schedule.length - 1; p >= 0; p -= 1) {
      const frame = this.#schedule[p] as number;
      this.#nextUse[p] = this.#upcoming.get(frame) ?? -1;
      this.#upcoming.set(frame, p);
    }
  }

  get positions(): number {
    return this.#schedule.length;
  }

  /** The frame for output position `position`, which must be the next one. */
  async frameAt(position: number): Promise<Buffer> {
    if (this.#closed) throw new Error('Expected open source frames but they were closed');
    if (position !== this.#position) {
      throw new RangeError(
        `Expected output position ${this.#position} to be asked next but received ${String(position)}`,
      );
    }
    const frame = this.#schedule[position];
    if (frame === undefined)
      throw new RangeError(`Expected an output position below ${this.#schedule.length} but received ${position}`);
    let data = this.#cache.get(frame);
    if (data !== undefined) {
      this.stats.hits += 1;
    } else {
      if (this.#stream === undefined || frame < this.#streamNext) await this.#restart(position, frame);
      data = await this.#readUntil(frame);
    }
    // Position p is served: the frame's next use moves on, and a frame with none leaves the cache.
    const next = this.#nextUse[position] as number;
    this.#position += 1;
    if (next < 0) {
      this.#upcoming.delete(frame);
      this.#cache.delete(frame);
    } else {
      this.#upcoming.set(frame, next);
      if (!this.#cache.has(frame)) this.#offer(frame, data);
    }
    return data;
  }

  /** Stops the decoder; idempotent. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#cache.clear();
    const stream = this.#stream;
    this.#stream = undefined;
    await stream?.close();
  }

  async #restart(position: number, frame: number): Promise<void> {
    // The lowest frame among the next `capacity` distinct ones not cached: decoding forward from
    // there fills the cache with what a backward run will ask for next.
    let start = frame;
    const seen = new Set<number>();
    for (let p = position; p < this.#schedule.length && seen.size < this.capacity; p += 1) {
      const f = this.#schedule[p] as number;
      if (this.#cache.has(f) || seen.has(f)) continue;
      seen.add(f);
      if (f < start) start = f;
    }
    const old = this.#stream;
    this.#stream = undefined;
    await old?.close();
    this.#stream = this.#open(start);
    this.#streamNext = start;
    this.stats.decoders += 1;
  }

  async #readUntil(frame: number): Promise<Buffer> {
    const stream = this.#stream;
    if (stream === undefined) throw new Error('Expected an open decoder');
    for (;;) {
      const data = await stream.next();
      if (data === null) {
        throw new RangeError(`Expected source frame ${frame} but the video ended after ${this.#streamNext} frames`);
      }
      const index = this.#streamNext;
      this.#streamNext += 1;
      this.stats.decoded += 1;
      if (index === frame) return data;
      this.#offer(index, data);
    }
  }

  /** Keeps a frame if it is used again and is needed sooner than the cache's furthest one. */
  #offer(frame: number, data: Buffer): void {
    const use = this.#upcoming.get(frame);
    if (use === undefined || use < this.#position) return;
    if (this.#cache.size >= this.capacity) {
      let victim = -1;
      let furthest = -1;
      for (const cached of this.#cache.keys()) {
        const next = this.#upcoming.get(cached) ?? Number.MAX_SAFE_INTEGER;
        if (next > furthest) {
          furthest = next;
          victim = cached;
        }
      }
      if (furthest <= use) return;
      this.#cache.delete(victim);
    }
    this.#cache.set(frame, data);
    this.stats.peakCached = Math.max(this.stats.peakCached, this.#cache.size);
  }
}

/** Frames the cache may hold within `budgetBytes`, at least `least` and at most `most`. */
export function cacheCapacity(
  frameBytes: number,
  budgetBytes: number,
  least = 2,
  most = Number.MAX_SAFE_INTEGER,
): number {
  checkIndex('the frame size', frameBytes, 1);
  return Math.max(least, Math.min(most, Math.floor(budgetBytes / frameBytes)));
}
