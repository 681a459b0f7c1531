/**
 * Whose fault a failed ffmpeg process of a video pipeline is, said without the contract's codes
 * (each pipeline maps it to its own at its edge). ffmpeg's stderr tail is the useful part of a
 * failure, with this host's paths replaced by "input"/"output" (media/process.ts, ffmpegReason).
 *
 * A decoder that exits with an error read a file it could not decode: the input's fault, not
 * retryable. An encoder failure, a process killed from outside (out of memory) or one that could
 * not start is the worker's: retryable when another attempt could succeed.
 */
import { ProcessingError, errorMessage } from '../errors.js';
import { ffmpegReason, isProcessError, type PathNames } from '../media/index.js';

/** Which of a pipeline's ffmpeg processes failed: the one reading the input, or the one writing the output. */
export type FfmpegRole = 'decoder' | 'encoder';

export class FfmpegFailure extends ProcessingError {
  readonly role: FfmpegRole;
  /** The decoder could not decode the file: the input's fault rather than the worker's. */
  readonly inputFault: boolean;

  constructor(
    role: FfmpegRole,
    message: string,
    options: { inputFault?: boolean; retryable?: boolean; cause: unknown },
  ) {
    super(message, { retryable: options.retryable ?? false, cause: options.cause });
    this.name = 'FfmpegFailure';
    this.role = role;
    this.inputFault = options.inputFault ?? false;
  }
}

const WORDS: Record<FfmpegRole, { failed: string; exited: string; noun: string }> = {
  decoder: { failed: 'Decoding the video failed', exited: 'The video could not be decoded', noun: 'The video decoder' },
  encoder: { failed: 'Encoding the video failed', exited: 'The video encoder failed', noun: 'The video encoder' },
};

/** A decoder or encoder that failed on its own (not stopped by the pipeline), for the job's owner. */
export function ffmpegFailure(role: FfmpegRole, error: unknown, paths: PathNames): FfmpegFailure {
  const words = WORDS[role];
  if (!isProcessError(error))
    return new FfmpegFailure(role, `${words.failed}: ${errorMessage(error)}`, { cause: error });
  switch (error.reason) {
    case 'exit':
      return new FfmpegFailure(role, `${words.exited}: ${ffmpegReason(error.stderrTail, paths)}`, {
        inputFault: role === 'decoder',
        cause: error,
      });
    case 'spawn':
      return new FfmpegFailure(role, `${words.noun} could not be started: ${error.message}`, {
        retryable: true,
        cause: error,
      });
    default:
      // Killed by a signal we did not send (the out-of-memory killer), or timed out.
      return new FfmpegFailure(role, `${words.noun} stopped: ${error.message}`, { retryable: true, cause: error });
  }
}

/**
 * A pipeline's ffmpeg process as a stage: its end, a failure of its own explained by ffmpegFailure;
 * the rejection a stop caused (`stopped`, the stage group's reason) passes as it is.
 */
export function ffmpegStage(
  done: Promise<unknown>,
  role: FfmpegRole,
  paths: PathNames,
  stopped: unknown,
): Promise<unknown> {
  return done.catch((error: unknown) => Promise.reject(error === stopped ? error : ffmpegFailure(role, error, paths)));
}
