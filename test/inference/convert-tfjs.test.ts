import { describe, expect, it } from 'vitest';
import { checkConversion } from '../../scripts/check-conversion.js';

/**
 * The converted graphs against the UpscalerJS models themselves (their own custom layers, TF.js
 * CPU backend) on a crop of a real photo. Float32 reordering alone gives about 2e-4 on the 0-255
 * scale; a wrong padding, kernel layout, shuffle order or range would give whole units.
 */
describe('converted models match the TF.js originals on a real photo', () => {
  it.each([
    ['esrgan-slim-x2', 48],
    // thick is the only one with the custom MultiplyBeta and PixelShuffle layers and the 0-1 range.
    ['esrgan-thick-x4', 20],
  ])('%s on a %ipx crop', async (name, size) => {
    const result = await checkConversion(name, { crop: { left: 180, top: 70, size } });
    expect(result.outputSize).toBe(size * Number(name.at(-1)));
    expect(result.maxAbsDiff).toBeLessThan(0.05);
    expect(result.meanAbsDiff).toBeLessThan(0.005);
  });
});
