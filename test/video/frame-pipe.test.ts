/** writeWithBackpressure and endPipe: at the pace the reader drains, and never hanging on a dead pipe. */
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { endPipe, writeWithBackpressure } from '../../src/video/index.js';

/** A pipe of `highWaterMark` bytes whose reader finishes each write only when `drainOne` is called. */
function slowPipe(highWaterMark: number): { stream: Writable; written: Buffer[]; drainOne(): void } {
  const waiting: (() => void)[] = [];
  const written: Buffer[] = [];
  const stream = new Writable({
    highWaterMark,
    write(chunk: Buffer, _encoding, callback) {
      written.push(chunk);
      waiting.push(() => callback());
    },
  });
  return { stream, written, drainOne: () => waiting.shift()?.() };
}

function settledLater(promise: Promise<void>): { settled: () => boolean } {
  let settled = false;
  promise.then(
    () => (settled = true),
    () => (settled = true),
  );
  return { settled: () => settled };
}

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('writeWithBackpressure', () => {
  it('resolves at once while the buffer has room, and only after the drain once it is full', async () => {
    const pipe = slowPipe(8);
    const stop = new AbortController();
    await writeWithBackpressure(pipe.stream, new Uint8Array(4), stop.signal);
    const full = writeWithBackpressure(pipe.stream, new Uint8Array(8), stop.signal);
    const state = settledLater(full);
    await tick();
    expect(state.settled()).toBe(false);
    pipe.drainOne();
    pipe.drainOne();
    await full;
    expect(pipe.written.map((b) => b.length)).toEqual([4, 8]);
  });

  it.each([
    [
      'the abort',
      (pipe: ReturnType<typeof slowPipe>, stop: AbortController) => stop.abort(new Error('stopped')),
      'stopped',
    ],
    ['the stream error', (pipe: ReturnType<typeof slowPipe>) => pipe.stream.destroy(new Error('EPIPE')), 'EPIPE'],
    ['the close', (pipe: ReturnType<typeof slowPipe>) => pipe.stream.destroy(), "The encoder's input closed early"],
  ])('rejects a waiting write on %s', async (_what, act, message) => {
    const pipe = slowPipe(4);
    pipe.stream.on('error', () => {});
    const stop = new AbortController();
    const waiting = writeWithBackpressure(pipe.stream, new Uint8Array(4), stop.signal);
    await tick();
    act(pipe, stop);
    await expect(waiting).rejects.toThrow(message);
    expect([pipe.stream.listenerCount('drain'), pipe.stream.listenerCount('close')]).toEqual([0, 0]);
  });

  it('refuses to write to an ended stream or after the abort', async () => {
    const pipe = slowPipe(64);
    const stop = new AbortController();
    pipe.stream.end();
    await expect(writeWithBackpressure(pipe.stream, new Uint8Array(1), stop.signal)).rejects.toThrow(
      "The encoder's input closed early",
    );
    stop.abort(new Error('cancelled'));
    await expect(writeWithBackpressure(slowPipe(64).stream, new Uint8Array(1), stop.signal)).rejects.toThrow(
      'cancelled',
    );
  });
});

describe('endPipe', () => {
  it('resolves once the reader took everything written', async () => {
    const pipe = slowPipe(64);
    const stop = new AbortController();
    await writeWithBackpressure(pipe.stream, new Uint8Array(4), stop.signal);
    const ending = endPipe(pipe.stream, stop.signal);
    const state = settledLater(ending);
    await tick();
    expect(state.settled()).toBe(false);
    pipe.drainOne();
    await ending;
    expect(pipe.stream.writableFinished).toBe(true);
  });

  it.each([
    [
      'the abort',
      (pipe: ReturnType<typeof slowPipe>, stop: AbortController) => stop.abort(new Error('stopped')),
      'stopped',
    ],
    [
      'the close before the flush',
      (pipe: ReturnType<typeof slowPipe>) => pipe.stream.destroy(),
      "The encoder's input closed before all frames were written",
    ],
  ])('rejects on %s instead of waiting for ever', async (_what, act, message) => {
    const pipe = slowPipe(64);
    pipe.stream.on('error', () => {});
    const stop = new AbortController();
    await writeWithBackpressure(pipe.stream, new Uint8Array(4), stop.signal);
    const ending = endPipe(pipe.stream, stop.signal);
    await tick();
    act(pipe, stop);
    await expect(ending).rejects.toThrow(message);
  });
});
