/**
 * Feeding a process's stdin (an ffmpeg encoder's raw frame pipe) at the pace it reads: a write
 * resolves at once while the pipe's buffer has room, otherwise once it drained, so the producer
 * never queues more than one buffer ahead of the encoder; and ending it once everything written
 * was flushed. Neither ever hangs on a dead pipe: a stop, an error or an early close rejects.
 * Shared by the pipelines that encode from a pipe (video upscale, mouth synchronisation).
 */
import type { Writable } from 'node:stream';

/**
 * Writes one chunk, waiting for the pipe to drain before resolving. Rejects with the signal's reason
 * on abort, with the stream's error, or when the stream closes first (its input closed early).
 */
export function writeWithBackpressure(stream: Writable, chunk: Uint8Array, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    if (stream.destroyed || stream.writableEnded) {
      reject(new Error("The encoder's input closed early"));
      return;
    }
    let writeError: unknown;
    const ok = stream.write(chunk, (error) => {
      if (error) writeError ??= error;
    });
    if (ok) {
      resolve();
      return;
    }
    const cleanup = (): void => {
      stream.off('drain', onDrain);
      stream.off('close', onClose);
      stream.off('error', onError);
      signal.removeEventListener('abort', onStop);
    };
    const onDrain = (): void => {
      cleanup();
      resolve();
    };
    const onClose = (): void => {
      cleanup();
      reject(writeError ?? new Error("The encoder's input closed early"));
    };
    const onError = (error: unknown): void => {
      cleanup();
      reject(error);
    };
    const onStop = (): void => {
      cleanup();
      reject(signal.reason);
    };
    stream.on('drain', onDrain);
    stream.on('close', onClose);
    stream.on('error', onError);
    signal.addEventListener('abort', onStop, { once: true });
  });
}

/**
 * Closes the encoder's input once everything written was flushed. Rejects with the signal's reason
 * on a stop, with the stream's error, or when the pipe closes before the data was flushed.
 */
export function endPipe(stream: Writable, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    const cleanup = (): void => {
      stream.off('error', onError);
      stream.off('close', onClose);
      signal.removeEventListener('abort', onStop);
    };
    const onError = (error: unknown): void => {
      cleanup();
      reject(error);
    };
    const onClose = (): void => {
      cleanup();
      if (stream.writableFinished) resolve();
      else reject(new Error("The encoder's input closed before all frames were written"));
    };
    const onStop = (): void => {
      cleanup();
      reject(signal.reason);
    };
    stream.on('error', onError);
    stream.on('close', onClose);
    signal.addEventListener('abort', onStop, { once: true });
    stream.end((error?: Error | null) => {
      cleanup();
      if (error) reject(error);
      else resolve();
    });
  });
}
