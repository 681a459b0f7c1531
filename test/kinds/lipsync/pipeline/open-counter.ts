/**
 * Counts where graph files are opened, for the tests that the threaded lip-sync networks open each
 * file once, on its worker thread: ONNX Runtime's create on this thread, a SessionThread's open on
 * another. Spies that call through; a test file calls `countOpens()` once, before it loads anything.
 */
import path from 'node:path';
import ort from 'onnxruntime-node';
import { vi } from 'vitest';
import { SessionThread } from '../../../../src/inference/index.js';

export interface OpenCount {
  inline: number;
  thread: number;
}

/** Starts counting; the function it returns says how often `file` has been opened on each side since. */
export function countOpens(): (file: string) => OpenCount {
  const inline = vi.spyOn(ort.InferenceSession, 'create');
  const thread = vi.spyOn(SessionThread.prototype, 'open');
  return (file) => {
    const resolved = path.resolve(file);
    return {
      inline: inline.mock.calls.filter(([opened]) => path.resolve(String(opened)) === resolved).length,
      thread: thread.mock.contexts.filter((t) => path.resolve((t as SessionThread).modelPath) === resolved).length,
    };
  };
}

/** The name and message a load rejects with (for comparing two loaders' failures). */
export async function failureOf(attempt: Promise<unknown>): Promise<{ name: string; message: string }> {
  const error = (await attempt.then(
    () => new Error('Expected a failure but it loaded'),
    (e: unknown) => e,
  )) as Error;
  return { name: error.name, message: error.message };
}
