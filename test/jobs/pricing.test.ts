import { describe, expect, it } from 'vitest';
import { JobError, type ErrorCode } from '../../src/errors.js';
import {
  IMAGE_MAX_OUTPUT_MEGAPIXELS,
  IMAGE_MAX_OUTPUT_SIDE_PX,
  LIPSYNC_MAX_VIDEO_SECONDS,
  MUSIC_CREDITS,
  VIDEO_UPSCALE_MAX_SECONDS,
  billedSeconds,
  priceImageUpscale,
  priceLipsync,
  priceMusic,
  priceVideoUpscale,
  roundedSeconds,
} from '../../src/jobs/index.js';
import type { LipsyncModelId } from '../../src/jobs/index.js';
import type { UpscaleFactor } from '../../src/jobs/types.js';

function codeOf(fn: () => unknown): ErrorCode | 'no error' {
  try {
    fn();
  } catch (err) {
    if (err instanceof JobError) return err.code;
    throw err;
  }
  return 'no error';
}

function errorOf(fn: () => unknown): JobError {
  try {
    fn();
  } catch (err) {
    if (err instanceof JobError) return err;
    throw err;
  }
  throw new Error('expected a JobError');
}

describe('lip-sync pricing (spec 4.2 reference charges)', () => {
  // seconds, then credits for vendor-lipsync-2 / -2-pro / -3, straight from the spec.
  const reference: Array<[number, number, number, number]> = [
    [3, 50, 100, 150],
    [5, 50, 100, 150],
    [10, 100, 200, 300],
    [15, 150, 300, 450],
    [15.04, 160, 320, 480],
    [20, 200, 400, 600],
    [30, 300, 600, 900],
  ];
  const models: LipsyncModelId[] = ['vendor-lipsync-2', 'vendor-lipsync-2-pro', 'vendor-lipsync-3'];

  const rows = reference.flatMap(([seconds, ...credits]) =>
    models.map((model, i) => [seconds, model, credits[i]] as [number, LipsyncModelId, number]),
  );

  it.each(rows)('%s s on %s costs %s credits', (seconds, model, credits) => {
    expect(priceLipsync(model, seconds).creditsUsed).toBe(credits);
  });

  it('reports the rate, minimum and billed seconds it applied', () => {
    expect(priceLipsync('vendor-lipsync-2-pro', 15.04)).toEqual({
      creditsUsed: 320,
      durationSeconds: 15.04,
      billedSeconds: 16,
      creditsPerSecond: 20,
      minimumCredits: 100,
    });
  });

  it.each(models)('%s accepts exactly 30 s and rejects 30.001 s with VIDEO_TOO_LONG', (model) => {
    expect(LIPSYNC_MAX_VIDEO_SECONDS).toBe(30);
    expect(codeOf(() => priceLipsync(model, 30))).toBe('no error');
    expect(codeOf(() => priceLipsync(model, 30.0004))).toBe('no error');
    expect(codeOf(() => priceLipsync(model, 30.001))).toBe('VIDEO_TOO_LONG');
    expect(codeOf(() => priceLipsync(model, 31))).toBe('VIDEO_TOO_LONG');
  });

  it('words VIDEO_TOO_LONG with the limit and the measured duration', () => {
    const err = errorOf(() => priceLipsync('vendor-lipsync-2', 30.5));
    expect(err.status).toBe(422);
    expect(err.message).toBe('Expected the video duration to be at most 30 seconds but received 30.5 seconds');
  });
});

describe('billed seconds: ceil of the duration rounded to milliseconds', () => {
  const cases: Array<[number, number, number]> = [
    // measured, rounded, billed
    [15, 15, 15],
    [15.04, 15.04, 16],
    [15.001, 15.001, 16],
    [15.000000001, 15, 15],
    [15.0004, 15, 15],
    [14.9996, 15, 15],
    [0.5, 0.5, 1],
    [0.001, 0.001, 1],
    [12.5, 12.5, 13],
    [59.999999, 60, 60],
  ];
  it.each(cases)('%s s rounds to %s s and bills %s s', (measured, rounded, billed) => {
    expect(roundedSeconds(measured)).toBe(rounded);
    expect(billedSeconds(measured)).toBe(billed);
  });

  it.each([[0], [-1], [0.0004], [Number.NaN], [Number.POSITIVE_INFINITY]])(
    'treats a duration of %s as unreadable (PROBE_FAILED)',
    (seconds) => {
      expect(codeOf(() => billedSeconds(seconds))).toBe('PROBE_FAILED');
      expect(codeOf(() => priceLipsync('vendor-lipsync-2', seconds))).toBe('PROBE_FAILED');
      expect(codeOf(() => priceVideoUpscale(seconds, '2'))).toBe('PROBE_FAILED');
    },
  );
});

describe('video upscale pricing (spec 4.4)', () => {
  const cases: Array<[number, UpscaleFactor, number, number, number]> = [
    // seconds, factor, credits per second, billed seconds, credits
    [10, '1', 16, 10, 160],
    [10, '2', 16, 10, 160],
    [10, '4', 28, 10, 280],
    [12.5, '2', 16, 13, 208],
    [15.04, '4', 28, 16, 448],
    [0.2, '1', 16, 1, 16],
    [60, '2', 16, 60, 960],
    [60, '4', 28, 60, 1680],
  ];
  it.each(cases)('%s s at factor %s: %s per second x %s s = %s', (seconds, factor, rate, billed, credits) => {
    expect(priceVideoUpscale(seconds, factor)).toEqual({
      creditsUsed: credits,
      durationSeconds: seconds,
      billedSeconds: billed,
      creditsPerSecond: rate,
    });
  });

  it.each<UpscaleFactor>(['1', '2', '4'])('factor %s rejects 60.001 s and more with VIDEO_TOO_LONG', (factor) => {
    expect(VIDEO_UPSCALE_MAX_SECONDS).toBe(60);
    expect(codeOf(() => priceVideoUpscale(60, factor))).toBe('no error');
    expect(codeOf(() => priceVideoUpscale(60.001, factor))).toBe('VIDEO_TOO_LONG');
    expect(codeOf(() => priceVideoUpscale(61, factor))).toBe('VIDEO_TOO_LONG');
    expect(codeOf(() => priceVideoUpscale(3600, factor))).toBe('VIDEO_TOO_LONG');
  });
});

describe('image upscale pricing (spec 4.3)', () => {
  const tiers: Array<[number, number, UpscaleFactor, number, string, number]> = [
    // width, height, factor, output MP, tier, credits
    [1000, 1000, '1', 1, '24mp', 20],
    [6000, 4000, '1', 24, '24mp', 20],
    [3000, 2000, '2', 24, '24mp', 20],
    [1500, 1000, '4', 24, '24mp', 20],
    [6001, 4000, '1', 24.004, '48mp', 40],
    [1501, 1000, '4', 24.016, '48mp', 40],
    [8000, 6000, '1', 48, '48mp', 40],
    [4000, 3000, '2', 48, '48mp', 40],
    [2000, 1500, '4', 48, '48mp', 40],
    [8001, 6000, '1', 48.006, '96mp', 80],
    [12000, 8000, '1', 96, '96mp', 80],
    [6000, 4000, '2', 96, '96mp', 80],
    [3000, 2000, '4', 96, '96mp', 80],
    [20000, 4800, '1', 96, '96mp', 80],
  ];
  it.each(tiers)('%sx%s at factor %s is %s MP: tier %s, %s credits', (w, h, factor, mp, tier, credits) => {
    const price = priceImageUpscale(w, h, factor);
    expect(price.outputMegapixels).toBe(mp);
    expect(price.outputTier).toBe(tier);
    expect(price.creditsUsed).toBe(credits);
    expect(price.outputWidth).toBe(w * Number(factor));
    expect(price.outputHeight).toBe(h * Number(factor));
  });

  const tooLarge: Array<[number, number, UpscaleFactor]> = [
    [12001, 8000, '1'],
    [12000, 8001, '1'],
    [6001, 4000, '2'],
    [3001, 2000, '4'],
    [10000, 10000, '4'],
  ];
  it.each(tooLarge)('%sx%s at factor %s is over 96 MP: OUTPUT_TOO_LARGE', (w, h, factor) => {
    expect(IMAGE_MAX_OUTPUT_MEGAPIXELS).toBe(96);
    expect(codeOf(() => priceImageUpscale(w, h, factor))).toBe('OUTPUT_TOO_LARGE');
  });

  const sides: Array<[number, number, UpscaleFactor, ErrorCode | 'no error']> = [
    [20000, 100, '1', 'no error'],
    [100, 20000, '1', 'no error'],
    [20001, 100, '1', 'OUTPUT_TOO_LARGE'],
    [100, 20001, '1', 'OUTPUT_TOO_LARGE'],
    [10000, 100, '2', 'no error'],
    [10001, 100, '2', 'OUTPUT_TOO_LARGE'],
    [5000, 100, '4', 'no error'],
    [5001, 100, '4', 'OUTPUT_TOO_LARGE'],
    [20001, 1, '1', 'OUTPUT_TOO_LARGE'],
  ];
  it.each(sides)('%sx%s at factor %s (longest side limit): %s', (w, h, factor, outcome) => {
    expect(IMAGE_MAX_OUTPUT_SIDE_PX).toBe(20000);
    expect(codeOf(() => priceImageUpscale(w, h, factor))).toBe(outcome);
  });

  it('words both OUTPUT_TOO_LARGE cases with the limit and what was asked for', () => {
    const mp = errorOf(() => priceImageUpscale(3001, 2000, '4'));
    expect(mp.status).toBe(422);
    expect(mp.message).toBe(
      'Expected the output size to be at most 96 MP but received 96.032 MP (3001×2000 at factor "4")',
    );
    const side = errorOf(() => priceImageUpscale(5001, 100, '4'));
    expect(side.message).toBe(
      'Expected the longest output side to be at most 20000 px but received 20004 px (5001×100 at factor "4")',
    );
  });

  it.each([
    [0, 10],
    [10, 0],
    [1.5, 10],
    [Number.NaN, 10],
    [-4, 10],
  ])('treats dimensions %sx%s as unreadable (PROBE_FAILED)', (w, h) => {
    expect(codeOf(() => priceImageUpscale(w, h, '2'))).toBe('PROBE_FAILED');
  });
});

describe('music pricing', () => {
  it('is 15 credits per generation', () => {
    expect(MUSIC_CREDITS).toBe(15);
    expect(priceMusic()).toEqual({ creditsUsed: 15 });
  });
});
