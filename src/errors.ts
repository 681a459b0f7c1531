/**
 * The bottom of the tree: errors every layer may raise, with no imports, so that media/, video/ and
 * inference/ need not import the contract (jobs/) to fail.
 *
 * - The spec's error codes (section 7) with their HTTP statuses, plus the few this worker adds
 *   (documented in docs/contract.md). One class, JobError, carries a code everywhere; callers
 *   decide what to do from `code` and `retryable`, never from message text.
 * - ProcessingError: a failure below the pipelines that belongs to no code of its own (a network
 *   call, an ffmpeg process). The contract maps it to the job kind's processing code at its edge
 *   (jobs/failures.ts), keeping whether a retry could help.
 */
export const ERROR_STATUS = {
  // Validation (400)
  INVALID_JOB: 400,
  UNKNOWN_MODEL: 400,
  MISSING_PROMPT: 400,
  PROMPT_TOO_LONG: 400,
  MISSING_STYLE: 400,
  STYLE_TOO_LONG: 400,
  MISSING_TITLE: 400,
  TITLE_TOO_LONG: 400,
  MISSING_LYRICS: 400,
  LYRICS_TOO_LONG: 400,
  INVALID_VOCAL_GENDER: 400,
  MISSING_VIDEO_URL: 400,
  MISSING_AUDIO_URL: 400,
  MISSING_IMAGE_URL: 400,
  INVALID_SYNC_MODE: 400,
  INVALID_MODEL: 400,
  INVALID_ACTIVE_SPEAKER: 400,
  INVALID_UPSCALE_FACTOR: 400,
  INVALID_URL: 400,
  // vendor-music-video (docs/music-video.md)
  INVALID_TITLE: 400,
  INVALID_STYLE: 400,
  INVALID_ASPECT_RATIO: 400,
  // Billing (402)
  INSUFFICIENT_CREDITS: 402,
  // Media checks (422)
  PROBE_FAILED: 422,
  VIDEO_TOO_LONG: 422,
  OUTPUT_TOO_LARGE: 422,
  INPUT_TOO_LARGE: 422,
  FETCH_FAILED: 422,
  // Work limits (docs/contract.md, "Work limits"): what the price does not cover
  VIDEO_TOO_LARGE: 422,
  FRAME_RATE_TOO_HIGH: 422,
  AUDIO_TOO_LONG: 422,
  JOB_TOO_COSTLY: 422,
  // Processing (500)
  GENERATION_FAILED: 500,
  LIPSYNC_SUBMIT_FAILED: 500,
  LIPSYNC_FAILED: 500,
  UPSCALE_FAILED: 500,
  MUSIC_VIDEO_FAILED: 500,
  INTERNAL_ERROR: 500,
  // The worker protocol (docs/protocol.md): what no live worker can run, a cancel, a job that waited too long
  MODEL_UNAVAILABLE: 503,
  CANCELLED: 409,
  QUEUE_TIMEOUT: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export interface JobErrorOptions {
  /** True when trying the same job again later could succeed (timeouts, out of memory). */
  retryable?: boolean;
  cause?: unknown;
}

export class JobError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly retryable: boolean;

  constructor(code: ErrorCode, message: string, options: JobErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'JobError';
    this.code = code;
    this.status = ERROR_STATUS[code];
    this.retryable = options.retryable ?? false;
  }

  toJSON(): { code: ErrorCode; status: number; message: string } {
    return { code: this.code, status: this.status, message: this.message };
  }
}

export function isJobError(value: unknown): value is JobError {
  return value instanceof JobError;
}

/**
 * A processing failure raised below the contract: the job kind decides its code (UPSCALE_FAILED,
 * LIPSYNC_FAILED, ...) where the job meets the contract (jobs/failures.ts).
 */
export class ProcessingError extends Error {
  readonly retryable: boolean;

  constructor(message: string, options: JobErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ProcessingError';
    this.retryable = options.retryable ?? false;
  }
}

/** A failure that already says what it is: a JobError with its code, or a ProcessingError for the kind's. */
export function isExplainedFailure(value: unknown): value is JobError | ProcessingError {
  return value instanceof JobError || value instanceof ProcessingError;
}

/** The message of anything thrown. */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Why a signal aborted: its reason, or the platform's AbortError when it was given none. */
export function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('The operation was aborted', 'AbortError');
}

/** The first line of an error's message: native libraries append whole stack dumps. */
export function firstErrorLine(error: unknown): string {
  const text = errorMessage(error);
  return text.split('\n', 1)[0]?.trim() ?? text;
}
