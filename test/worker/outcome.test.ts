import { describe, expect, it } from 'vitest';
import { JobError, ProcessingError } from '../../src/errors.js';
import { asJobError, deadlineError, pipelineFailure } from '../../src/jobs/index.js';
import { decideFailure, outOfSpace } from '../../src/worker/outcome.js';

const transient = new JobError('FETCH_FAILED', 'download timed out', { retryable: true });
const permanent = new JobError('PROBE_FAILED', 'not a video');

describe('decideFailure', () => {
  it.each([
    // error, attempt, maxDeliver, delays, expected
    [transient, 1, 5, [10, 60, 300], { action: 'retry', delayMs: 10 }],
    [transient, 2, 5, [10, 60, 300], { action: 'retry', delayMs: 60 }],
    [transient, 3, 5, [10, 60, 300], { action: 'retry', delayMs: 300 }],
    [transient, 4, 5, [10, 60, 300], { action: 'retry', delayMs: 300 }],
    [transient, 5, 5, [10, 60, 300], { action: 'fail' }],
    [transient, 1, 1, [10], { action: 'fail' }],
    [permanent, 1, 5, [10], { action: 'fail' }],
  ] as const)('%s on attempt %i of %i -> %o', (error, attempt, maxDeliver, delays, expected) => {
    expect(decideFailure(error, attempt, maxDeliver, delays)).toMatchObject(expected);
  });

  it('says when retries ran out, keeping the code', () => {
    const d = decideFailure(transient, 5, 5, [1]);
    expect(d.error.code).toBe('FETCH_FAILED');
    expect(d.error.message).toBe('download timed out (gave up after 5 attempts)');
    expect(decideFailure(permanent, 1, 5, [1]).error).toBe(permanent);
  });
});

describe('errors of the daemon', () => {
  it.each([
    ['image', 'UPSCALE_FAILED', 500],
    ['video', 'UPSCALE_FAILED', 500],
    ['lipsync', 'LIPSYNC_FAILED', 500],
    ['music', 'GENERATION_FAILED', 500],
  ] as const)('a %s job that throws something else fails with %s', (kind, code, status) => {
    const err = asJobError(new Error('boom'), kind);
    expect(err).toMatchObject({ code, status, retryable: false, message: 'Processing failed: boom' });
    expect(asJobError(permanent, kind)).toBe(permanent);
  });

  it.each([
    ['image', 'UPSCALE_FAILED'],
    ['lipsync', 'LIPSYNC_FAILED'],
  ] as const)(
    "a lower layer's processing failure in a %s job becomes %s and keeps its retry decision",
    (kind, code) => {
      const oom = new ProcessingError('Out of memory even with one 64x64 tile per call', { retryable: true });
      expect(asJobError(oom, kind)).toMatchObject({ code, retryable: true, message: oom.message, cause: oom });
      expect(asJobError(new ProcessingError('bad output shape'), kind)).toMatchObject({ code, retryable: false });
    },
  );

  it.each([
    ['image', 'UPSCALE_FAILED', 'Processing failed: boom'],
    ['video', 'UPSCALE_FAILED', 'Video upscaling failed: boom'],
    ['lipsync', 'LIPSYNC_FAILED', 'Lip-sync failed: boom'],
    ['music', 'GENERATION_FAILED', 'Processing failed: boom'],
  ] as const)("the contract's edge gives a %s pipeline's failures %s, once", (kind, code, message) => {
    expect(pipelineFailure(new Error('boom'), kind)).toMatchObject({ code, message, retryable: false });
    const named = new ProcessingError(
      'Expected a face to drive but no face was found in the video (25 frames searched)',
    );
    expect(pipelineFailure(named, kind)).toMatchObject({ code, message: named.message, cause: named });
    expect(pipelineFailure(permanent, kind)).toBe(permanent);
  });

  it('words the watchdog and exhausted-deliveries failures', () => {
    expect(deadlineError('lipsync', 240_000).toJSON()).toEqual({
      code: 'LIPSYNC_FAILED',
      status: 500,
      message: 'Processing took longer than 4 minutes, the limit for lipsync jobs',
    });
    expect(deadlineError('image', 1000).message).toBe(
      'Processing took longer than 1 seconds, the limit for image jobs',
    );
  });
});

describe('a full disk', () => {
  const enospc = (): Error => Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' });

  it.each([
    ['a plain ENOSPC', () => asJobError(enospc(), 'image')],
    ['ENOSPC under a permanent JobError', () => new JobError('LIPSYNC_FAILED', 'encoding failed', { cause: enospc() })],
    ['EDQUOT', () => asJobError(Object.assign(new Error('quota'), { code: 'EDQUOT' }), 'video')],
    [
      'ffmpeg saying so',
      () =>
        asJobError(
          Object.assign(new Error('ffmpeg exited with 1'), {
            stderrTail: 'av_interleaved_write_frame(): No space left on device',
          }),
          'video',
        ),
    ],
  ])('%s is retried, not failed for good', (_what, make) => {
    const d = decideFailure(make(), 1, 5, [10]);
    expect(d).toMatchObject({ action: 'retry', delayMs: 10 });
    expect(d.error.message).toMatch(/^No space left on this worker's disk: /);
    expect(outOfSpace(make())).toBe(true);
  });

  it('is not mistaken for other errors', () => {
    expect(outOfSpace(new Error('boom'))).toBe(false);
    expect(outOfSpace(Object.assign(new Error('x'), { code: 'EACCES' }))).toBe(false);
  });
});
