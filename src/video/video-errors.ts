/**
 * What a failed video upscale tells its owner. ffmpeg's stderr tail is the useful part of a
 * failure, but it names local paths that mean nothing outside this host: they are replaced by
 * "input"/"output" before the text goes into a JobError.
 *
 * Whose fault: a decoder that exits with an error read a file it could not decode (PROBE_FAILED,
 * not retryable); an encoder failure, a process killed from outside (out of memory) or one that
 * could not start is the worker's (UPSCALE_FAILED; retryable when another attempt could succeed).
 */
import { JobError } from '../jobs/errors.js';
import { isProcessError } from '../media/index.js';

/** Local paths that must not leak into error messages, with what to say instead. */
export type PathNames = ReadonlyArray<readonly [path: string, name: string]>;

/** The last meaningful lines of ffmpeg's stderr, paths replaced, joined on one line. */
export function ffmpegReason(stderrTail: string, paths: PathNames, lines = 3): string {
  const cleaned = stderrTail
    .split('\n')
    .map((line) => {
      let text = line;
      for (const [path, name] of paths) text = text.split(`file:${path}`).join(name).split(path).join(name);
      // "[h264 @ 0x55d2785140c0] " prefixes carry a heap address: noise for a reader.
      return text.replace(/^\[[^\]]*@ 0x[0-9a-f]+\]\s*/, '').trim();
    })
    .filter((line) => line !== '');
  const kept = cleaned.slice(-lines);
  return kept.length > 0 ? kept.join('; ') : 'no details';
}

/** The decoder (ffmpeg reading the input) failed on its own. */
export function decoderFailure(error: unknown, paths: PathNames): JobError {
  if (!isProcessError(error)) {
    return new JobError('UPSCALE_FAILED', `Decoding the video failed: ${message(error)}`, { cause: error });
  }
  switch (error.reason) {
    case 'exit':
      return new JobError('PROBE_FAILED', `The video could not be decoded: ${ffmpegReason(error.stderrTail, paths)}`, { cause: error });
    case 'spawn':
      return new JobError('UPSCALE_FAILED', `The video decoder could not be started: ${error.message}`, { retryable: true, cause: error });
    default:
      // Killed by a signal we did not send (the out-of-memory killer), or timed out.
      return new JobError('UPSCALE_FAILED', `The video decoder stopped: ${error.message}`, { retryable: true, cause: error });
  }
}

/** The encoder (ffmpeg writing the output) failed on its own. */
export function encoderFailure(error: unknown, paths: PathNames): JobError {
  if (!isProcessError(error)) {
    return new JobError('UPSCALE_FAILED', `Encoding the video failed: ${message(error)}`, { cause: error });
  }
  switch (error.reason) {
    case 'exit':
      return new JobError('UPSCALE_FAILED', `The video encoder failed: ${ffmpegReason(error.stderrTail, paths)}`, { cause: error });
    case 'spawn':
      return new JobError('UPSCALE_FAILED', `The video encoder could not be started: ${error.message}`, { retryable: true, cause: error });
    default:
      return new JobError('UPSCALE_FAILED', `The video encoder stopped: ${error.message}`, { retryable: true, cause: error });
  }
}

/** Any other failure inside the pipeline, kept as it is when it already carries a code. */
export function stageFailure(error: unknown): JobError {
  if (error instanceof JobError) return error;
  return new JobError('UPSCALE_FAILED', `Video upscaling failed: ${message(error)}`, { cause: error });
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
