/**
 * Whole frames out of the decoder's raw pipe. The stream is read in paused mode, one frame's worth
 * of bytes at a time and only when the pipeline asks for the next frame: while nobody asks, Node
 * stops reading the pipe once its buffer holds about a frame, the pipe fills, and ffmpeg blocks.
 * That is the decoder's backpressure; nothing is buffered beyond it.
 *
 * A stream that ends in the middle of a frame is an error (a decoder killed mid-write, or a size
 * mismatch between the decoder and this reader), never a short frame handed on.
 */
import { ProcessingError } from '../errors.js';
import type { Readable } from 'node:stream';

export class PartialFrameError extends ProcessingError {
  constructor(
    readonly received: number,
    readonly expected: number,
  ) {
    super(`The decoder's output ended inside a frame: ${received} of ${expected} bytes`);
    this.name = 'PartialFrameError';
  }
}

export class FrameReader {
  readonly frameBytes: number;
  readonly #stream: Readable;
  #ended = false;
  #error: unknown;
  #wake: (() => void) | undefined;
  #frames = 0;

  constructor(stream: Readable, frameBytes: number) {
    if (!Number.isInteger(frameBytes) || frameBytes < 1) {
      throw new RangeError(`Expected frame size to be a positive integer but received ${String(frameBytes)}`);
    }
    this.frameBytes = frameBytes;
    this.#stream = stream;
    const wake = (): void => {
      const waiter = this.#wake;
      this.#wake = undefined;
      waiter?.();
    };
    stream.on('readable', wake);
    stream.once('end', () => {
      this.#ended = true;
      wake();
    });
    stream.once('error', (error: unknown) => {
      this.#error ??= error;
      wake();
    });
    stream.once('close', () => {
      // Closed without 'end': destroyed (by cancellation or an error); nothing more will come.
      if (!this.#ended) this.#error ??= new Error("The decoder's output closed before it ended");
      wake();
    });
  }

  /** Frames returned so far. */
  get frames(): number {
    return this.#frames;
  }

  /** The next frame (exactly `frameBytes`), or null after the last one. */
  async next(): Promise<Buffer | null> {
    for (;;) {
      if (this.#error !== undefined) throw this.#error;
      // read(n) returns null until n bytes are buffered, and the remainder once the stream ended.
      const chunk = this.#stream.read(this.frameBytes) as Buffer | null;
      if (chunk !== null) {
        if (chunk.length !== this.frameBytes) throw new PartialFrameError(chunk.length, this.frameBytes);
        this.#frames += 1;
        return chunk;
      }
      if (this.#ended || this.#stream.readableEnded) return null;
      await new Promise<void>((resolve) => {
        this.#wake = resolve;
      });
    }
  }
}
