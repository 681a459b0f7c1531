/**
 * The joints of the video pipeline: bounded queues and slots (backpressure, failure wakes every
 * waiter), the frame reader (exact frames from arbitrary pipe chunks, partial frames refused, no
 * reading ahead), and tile batching across frames (merging, routing, retry, equal results).
 */
import { PassThrough, Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { type Nchw, type TensorOutput, type SrModel, upscaleRgb } from '../../../../src/inference/index.js';
import { BoundedQueue, Slots, FrameReader, PartialFrameError } from '../../../../src/video/index.js';
import { TileBatcher } from '../../../../src/kinds/video-upscale/pipeline/video-batcher.js';

const tick = () => new Promise((resolve) => setImmediate(resolve));

/** Whether a promise has settled after the pending callbacks ran. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  promise.then(
    () => (done = true),
    () => (done = true),
  );
  await tick();
  return done;
}

describe('BoundedQueue', () => {
  it('makes the producer wait while full and keeps order', async () => {
    const queue = new BoundedQueue<number>(2);
    await queue.push(1);
    await queue.push(2);
    const third = queue.push(3);
    expect(await settled(third)).toBe(false);
    expect(await queue.shift()).toBe(1);
    expect(await settled(third)).toBe(true);
    expect(queue.size).toBe(2);
    expect(await queue.shift()).toBe(2);
    expect(await queue.shift()).toBe(3);
  });

  it('makes the consumer wait while empty; after close it drains, then ends', async () => {
    const queue = new BoundedQueue<string>(1);
    const next = queue.shift();
    expect(await settled(next)).toBe(false);
    await queue.push('a');
    expect(await next).toBe('a');
    await queue.push('b');
    queue.close();
    expect(await queue.shift()).toBe('b');
    expect(await queue.shift()).toBeUndefined();
    await expect(queue.push('c')).rejects.toThrow('Expected an open queue but push was called after close');
  });

  it('fail wakes the waiting producer and consumer with the error, and every later call', async () => {
    const full = new BoundedQueue<number>(1);
    await full.push(1);
    const waitingPush = full.push(2);
    const empty = new BoundedQueue<number>(1);
    const waitingShift = empty.shift();
    const error = new Error('stop');
    full.fail(error);
    empty.fail(error);
    await expect(waitingPush).rejects.toBe(error);
    await expect(waitingShift).rejects.toBe(error);
    await expect(full.shift()).rejects.toBe(error);
    await expect(empty.push(3)).rejects.toBe(error);
  });

  it('refuses a capacity below 1', () => {
    expect(() => new BoundedQueue(0)).toThrow('Expected queue capacity to be an integer of at least 1 but received 0');
  });
});

describe('Slots', () => {
  it('bounds work in flight and fails waiters', async () => {
    const slots = new Slots(2);
    await slots.acquire();
    await slots.acquire();
    const third = slots.acquire();
    expect(await settled(third)).toBe(false);
    slots.release();
    expect(await settled(third)).toBe(true);
    const fourth = slots.acquire();
    const error = new Error('stop');
    slots.fail(error);
    await expect(fourth).rejects.toBe(error);
    expect(() => new Slots(1.5)).toThrow('Expected slot count to be an integer of at least 1 but received 1.5');
  });
});

describe('FrameReader', () => {
  it('returns exact frames whatever the chunking of the pipe, then null', async () => {
    const stream = new PassThrough();
    const reader = new FrameReader(stream, 12);
    const bytes = Buffer.from(Array.from({ length: 36 }, (_, i) => i));
    const frames = (async () => {
      const out: Buffer[] = [];
      for (let f = await reader.next(); f !== null; f = await reader.next()) out.push(f);
      return out;
    })();
    for (const [start, end] of [
      [0, 5],
      [5, 7],
      [7, 20],
      [20, 36],
    ] as const) {
      stream.write(bytes.subarray(start, end));
      await tick();
    }
    stream.end();
    const got = await frames;
    expect(got.map((f) => [...f])).toEqual([
      [...bytes.subarray(0, 12)],
      [...bytes.subarray(12, 24)],
      [...bytes.subarray(24, 36)],
    ]);
    expect(reader.frames).toBe(3);
  });

  it('refuses a stream that ends inside a frame', async () => {
    const stream = new PassThrough();
    const reader = new FrameReader(stream, 10);
    stream.end(Buffer.alloc(25));
    expect(await reader.next()).toHaveLength(10);
    expect(await reader.next()).toHaveLength(10);
    const error = await reader.next().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PartialFrameError);
    expect((error as Error).message).toBe("The decoder's output ended inside a frame: 5 of 10 bytes");
  });

  it('fails when the pipe is destroyed before its end', async () => {
    const stream = new PassThrough();
    const reader = new FrameReader(stream, 10);
    const next = reader.next();
    stream.destroy();
    await expect(next).rejects.toThrow("The decoder's output closed before it ended");
  });

  it('reads ahead at most about one frame while nobody asks (backpressure on the decoder)', async () => {
    const frameBytes = 10_000;
    let produced = 0;
    const source = new Readable({
      highWaterMark: 1024,
      read() {
        produced += 1000;
        this.push(Buffer.alloc(1000));
      },
    });
    const reader = new FrameReader(source, frameBytes);
    await reader.next();
    await reader.next();
    for (let i = 0; i < 20; i += 1) await tick();
    // Two frames consumed; the buffer holds at most the next power of two above a frame.
    expect(produced).toBeLessThanOrEqual(2 * frameBytes + 16_384 + 1000);
    source.destroy();
  });
});

/** A fake network: records each call's shape, answers input + 1000 (scale 1), optionally after a delay. */
function recordingModel(opts: { delayMs?: number; failWhenBatchAbove?: number } = {}): SrModel & { calls: Nchw[] } {
  const calls: Nchw[] = [];
  return {
    scale: 1,
    calls,
    async run(input: Float32Array, dims: Nchw): Promise<TensorOutput> {
      calls.push(dims);
      if (opts.delayMs !== undefined) await new Promise((r) => setTimeout(r, opts.delayMs));
      if (opts.failWhenBatchAbove !== undefined && dims[0] > opts.failWhenBatchAbove)
        throw new Error('bad_alloc: out of memory');
      return { data: input.map((v) => v + 1000), dims };
    },
  };
}

const request = (batcher: SrModel, id: number, n = 1, side = 4) =>
  batcher.run(new Float32Array(n * 3 * side * side).fill(id), [n, 3, side, side]);

describe('TileBatcher', () => {
  it('runs a lone request at once, as it is', async () => {
    const inner = recordingModel();
    const batcher = new TileBatcher(inner, 8);
    const out = await request(batcher, 1);
    expect(inner.calls).toEqual([[1, 3, 4, 4]]);
    expect(out.dims).toEqual([1, 3, 4, 4]);
    expect(out.data.every((v) => v === 1001)).toBe(true);
  });

  it('merges the requests that arrive during a call into the next one and gives each its own part', async () => {
    const inner = recordingModel({ delayMs: 20 });
    const batcher = new TileBatcher(inner, 8);
    const results = await Promise.all([request(batcher, 1), request(batcher, 2, 2), request(batcher, 3)]);
    expect(inner.calls).toEqual([
      [1, 3, 4, 4],
      [3, 3, 4, 4],
    ]);
    expect(results.map((r) => r.dims[0])).toEqual([1, 2, 1]);
    expect(results.map((r) => [...new Set(r.data)])).toEqual([[1001], [1002], [1003]]);
    expect(batcher.stats).toMatchObject({ calls: 2, tiles: 4, largestBatch: 3 });
  });

  it('never mixes tile shapes and respects the tile limit', async () => {
    const inner = recordingModel({ delayMs: 10 });
    const batcher = new TileBatcher(inner, 2);
    await Promise.all([
      request(batcher, 1),
      request(batcher, 2),
      request(batcher, 3, 1, 8),
      request(batcher, 4),
      request(batcher, 5),
    ]);
    expect(inner.calls).toEqual([
      [1, 3, 4, 4],
      [2, 3, 4, 4],
      [1, 3, 8, 8],
      [1, 3, 4, 4],
    ]);
  });

  it('retries a failed combined call request by request', async () => {
    const inner = recordingModel({ delayMs: 5, failWhenBatchAbove: 1 });
    const batcher = new TileBatcher(inner, 8);
    const results = await Promise.all([request(batcher, 1), request(batcher, 2), request(batcher, 3)]);
    expect(inner.calls.map((d) => d[0])).toEqual([1, 2, 1, 1]);
    expect(results.map((r) => r.data[0])).toEqual([1001, 1002, 1003]);
  });

  it('gives frames upscaled together through it the same pixels as one by one', async () => {
    // A nearest-neighbour x2 "network" in NCHW, enough to check that tiles go back to their frames.
    const nearest: SrModel = {
      scale: 2,
      async run(input, dims) {
        const [n, c, h, w] = dims;
        const out = new Float32Array(n * c * h * w * 4);
        for (let p = 0; p < n * c; p += 1) {
          for (let y = 0; y < 2 * h; y += 1) {
            for (let x = 0; x < 2 * w; x += 1)
              out[p * 4 * h * w + y * 2 * w + x] = input[p * h * w + (y >> 1) * w + (x >> 1)]!;
          }
        }
        await new Promise((r) => setTimeout(r, 2));
        return { data: out, dims: [n, c, 2 * h, 2 * w] };
      },
    };
    const frames = [1, 2, 3].map((seed) => ({
      data: Uint8Array.from({ length: 40 * 24 * 3 }, (_, i) => (i * 37 * seed + seed) % 256),
      width: 40,
      height: 24,
      channels: 3 as const,
    }));
    const options = { tile: 16, overlap: 2 };
    const alone = await Promise.all(frames.map((f) => upscaleRgb(nearest, f, options)));
    const batcher = new TileBatcher(nearest, 12);
    const together = await Promise.all(frames.map((f) => upscaleRgb(batcher, f, options)));
    expect(together.map((r) => Buffer.from(r.data).equals(Buffer.from(alone[together.indexOf(r)]!.data)))).toEqual([
      true,
      true,
      true,
    ]);
    expect(batcher.stats.largestBatch).toBeGreaterThan(1);
  });
});
