import { describe, expect, it } from 'vitest';
import { ciede2000, meanCiede2000, rgbToLab } from '../../bench/fidelity/colour-difference.js';

describe('ciede2000', () => {
  // Pairs from Sharma, Wu and Dalal's test data (2005), with their published ΔE00.
  const pairs: [number[], number[], number][] = [
    [[50, 2.6772, -79.7751], [50, 0, -82.7485], 2.0425],
    [[50, 0, 0], [50, -1, 2], 2.3669],
    [[50, 2.5, 0], [73, 25, -18], 27.1492],
    [[2.0776, 0.0795, -1.135], [0.9033, -0.0636, -0.5514], 0.9082],
    [[50, 2.49, -0.001], [50, -2.49, 0.0011], 7.2195],
  ];
  it.each(pairs)('%j vs %j is %f', (x, y, expected) => {
    const lab = (v: number[]) => ({ L: v[0]!, a: v[1]!, b: v[2]! });
    expect(ciede2000(lab(x), lab(y))).toBeCloseTo(expected, 3);
  });

  it('puts sRGB white at L 100 and P3 red outside sRGB red', () => {
    const white = rgbToLab('srgb', 1, 1, 1);
    expect(white.L).toBeCloseTo(100, 2);
    expect(Math.abs(white.a) + Math.abs(white.b)).toBeLessThan(0.05);
    expect(ciede2000(rgbToLab('display-p3', 1, 0, 0), rgbToLab('srgb', 1, 0, 0))).toBeGreaterThan(5);
  });

  it('averages over pixels and ignores alpha', () => {
    const a = [255, 0, 0, 255, 0, 0, 0, 0];
    const b = [255, 0, 0, 0, 0, 0, 0, 255];
    expect(meanCiede2000(a, b, { channels: 4, space: 'srgb', maxValue: 255 })).toBe(0);
    expect(meanCiede2000([10, 10, 10], [20, 20, 20], { channels: 3, space: 'srgb', maxValue: 255 })).toBeGreaterThan(1);
  });
});
