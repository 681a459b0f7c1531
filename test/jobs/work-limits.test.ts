import { describe, expect, it } from 'vitest';
import { JobError } from '../../src/errors.js';
import {
  DEFAULT_LIPSYNC_MAX_OUTPUT_PERCENT,
  DEFAULT_WORK_LIMITS,
  checkEstimate,
  checkFrameRate,
  checkJobOutputPixels,
  checkLipsyncOutput,
  checkVideoInputSize,
  checkVideoOutputSize,
} from '../../src/jobs/index.js';

const L = DEFAULT_WORK_LIMITS;
// Lip-sync's own limit, at its default (twice the covered seconds).
const LIPSYNC = { maxOutputPercent: DEFAULT_LIPSYNC_MAX_OUTPUT_PERCENT };

function refusal(fn: () => void): JobError {
  try {
    fn();
  } catch (err) {
    if (err instanceof JobError) return err;
    throw err;
  }
  throw new Error('expected a refusal');
}

describe('video input size (VIDEO_TOO_LARGE)', () => {
  it.each([
    [8192, 4320],
    [4320, 8192],
    [8192, 4352], // exactly H.264 level 6.2's 35,651,584 samples
    [1920, 1080],
  ])('%i x %i passes', (width, height) => {
    expect(() => checkVideoInputSize({ width, height }, L)).not.toThrow();
  });

  it('a side over 8192 px names the side and the size', () => {
    const err = refusal(() => checkVideoInputSize({ width: 8193, height: 100 }, L));
    expect(err.code).toBe('VIDEO_TOO_LARGE');
    expect(err.status).toBe(422);
    expect(err.message).toBe(
      'Expected the longest side of the video to be at most 8192 px but received 8193 px (8193×100)',
    );
  });

  it('a frame over level 6.2 names the pixel count', () => {
    const err = refusal(() => checkVideoInputSize({ width: 8192, height: 4353 }, L));
    expect(err.code).toBe('VIDEO_TOO_LARGE');
    expect(err.message).toBe(
      'Expected the video frame to be at most 35,651,584 pixels but received 35,659,776 (8192×4353)',
    );
  });
});

describe('video output size (OUTPUT_TOO_LARGE)', () => {
  it('1080p at factor "4" (8K) passes; 4K at factor "4" does not', () => {
    expect(() =>
      checkVideoOutputSize({ width: 7680, height: 4320 }, { width: 1920, height: 1080 }, '4', L),
    ).not.toThrow();
    const err = refusal(() =>
      checkVideoOutputSize({ width: 15360, height: 8640 }, { width: 3840, height: 2160 }, '4', L),
    );
    expect(err.code).toBe('OUTPUT_TOO_LARGE');
    expect(err.message).toBe(
      'Expected the longest side of the output video to be at most 8192 px but received 15360 px (15360×8640 from 3840×2160 at factor "4")',
    );
  });

  it('a limit from the settings is the one named', () => {
    const err = refusal(() =>
      checkVideoOutputSize({ width: 3000, height: 3000 }, { width: 1500, height: 1500 }, '2', {
        ...L,
        videoMaxOutputPixels: 8_294_400,
      }),
    );
    expect(err.message).toMatch(/at most 8,294,400 pixels but received 9,000,000/);
  });
});

describe('frame rate (FRAME_RATE_TOO_HIGH)', () => {
  it.each([
    [60, 1],
    [30000, 1001],
    [60000, 1001],
    [24, 1],
  ])('%i/%i passes', (num, den) => {
    expect(() => checkFrameRate({ num, den }, L)).not.toThrow();
  });

  it.each([
    [240, 1, '240 fps (240/1)'],
    [60001, 1000, '60.001 fps (60001/1000)'],
    [120000, 1001, '119.88 fps (120000/1001)'],
  ])('%i/%i is refused', (num, den, shown) => {
    const err = refusal(() => checkFrameRate({ num, den }, L));
    expect(err.code).toBe('FRAME_RATE_TOO_HIGH');
    expect(err.message).toBe(`Expected the video frame rate to be at most 60 fps but received ${shown}`);
  });
});

describe('output pixels of a job (OUTPUT_TOO_LARGE)', () => {
  it('60 s of 4K at 60 fps passes, 60 s of 8K at 30 fps does not', () => {
    expect(() => checkJobOutputPixels(3600, 3840 * 2160, L)).not.toThrow();
    const err = refusal(() => checkJobOutputPixels(1800, 7680 * 4320, L));
    expect(err.code).toBe('OUTPUT_TOO_LARGE');
    expect(err.message).toBe(
      'Expected the output of the job to be at most 30,000,000,000 pixels in all but received 59,719,680,000 (1,800 frames of 33,177,600 pixels)',
    );
  });
});

describe('lip-sync output length (AUDIO_TOO_LONG)', () => {
  it('up to twice the covered seconds passes, a millisecond more does not', () => {
    expect(() => checkLipsyncOutput('loop', 10, 5, LIPSYNC)).not.toThrow();
    const err = refusal(() => checkLipsyncOutput('loop', 10.001, 5, LIPSYNC));
    expect(err.code).toBe('AUDIO_TOO_LONG');
    expect(err.message).toBe(
      'Expected the output for sync_mode "loop" to be at most 10 seconds (200 % of the 5 s the credits cover) but received 10.001 seconds (it follows the audio)',
    );
  });

  it('the percentage is a setting', () => {
    expect(() => checkLipsyncOutput('remap', 30, 30, { maxOutputPercent: 100 })).not.toThrow();
    expect(refusal(() => checkLipsyncOutput('remap', 30.5, 30, { maxOutputPercent: 100 })).code).toBe('AUDIO_TOO_LONG');
  });
});

describe('estimate against the time limit (JOB_TOO_COSTLY)', () => {
  it('80 % of 1800 s: 1440 s passes, 1440.1 s does not', () => {
    expect(() => checkEstimate(1440, 1800, 'cpu', L)).not.toThrow();
    const err = refusal(() => checkEstimate(1440.1, 1800, 'cpu', L));
    expect(err.code).toBe('JOB_TOO_COSTLY');
    expect(err.status).toBe(422);
    expect(err.retryable).toBe(false);
    expect(err.message).toBe(
      'Expected the estimated processing time on cpu to be at most 1440 seconds (80 % of the 1800 s limit) but received 1440.1 seconds',
    );
  });
});
