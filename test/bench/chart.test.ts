import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { type ChartPoint, decades, joinResults, renderChart } from '../../bench/inference/chart.js';

const points: ChartPoint[] = [
  { method: 'bicubic', scale: 2, psnr: 28.7, mpPerS: 17 },
  { method: 'esrgan-slim-x2', scale: 2, psnr: 30.8, mpPerS: 2.3 },
  { method: 'esrgan-thick-x2', scale: 2, psnr: 31.1, mpPerS: 0.1 },
  { method: 'bicubic', scale: 4, psnr: 26.4, mpPerS: 21 },
  { method: 'esrgan-thick-x4', scale: 4, psnr: 27.5, mpPerS: 0.39 },
];

describe('decades', () => {
  it.each([
    { lo: 0.031, hi: 22, expected: [0.01, 0.1, 1, 10, 100] },
    { lo: 1, hi: 10, expected: [1, 10] },
    { lo: 2, hi: 3, expected: [1, 10] },
  ])('covers $lo..$hi with powers of ten', ({ lo, hi, expected }) => {
    expect(decades(lo, hi).map((d) => Number(d.toPrecision(1)))).toEqual(expected);
  });

  it('refuses a range that is not positive and increasing', () => {
    expect(() => decades(0, 1)).toThrow(/Expected 0 < lo <= hi but received 0 and 1/);
    expect(() => decades(2, 1)).toThrow(RangeError);
  });
});

describe('renderChart', () => {
  it('draws an SVG that sharp renders at the requested size, one marker per point', async () => {
    const svg = renderChart(points, {
      title: 'T & <t>',
      subtitle: 's',
      highlight: ['esrgan-slim-x2'],
      width: 800,
      height: 500,
    });
    const meta = await sharp(Buffer.from(svg)).metadata();
    expect([meta.width, meta.height]).toEqual([800, 500]);
    expect(svg).toContain('T &amp; &lt;t&gt;');
    expect(svg).toContain('slim x2 (default)');
    expect(svg).not.toContain('thick x2 (default)');
    // x2 points are circles (plus the legend's and the highlight ring), x4 points squares.
    expect(svg.match(/<circle [^>]*r="6.5"/g)).toHaveLength(3);
    expect(svg.match(/<rect [^>]*width="12" height="12" fill="(#fff|#d62728)" stroke/g)).toHaveLength(2);
  });

  it('puts faster methods further right', () => {
    const svg = renderChart(
      points.filter((p) => p.scale === 2),
      { title: '', subtitle: '' },
    );
    const xs = [...svg.matchAll(/<circle cx="([\d.]+)" cy="[\d.]+" r="6.5"/g)].map((m) => Number(m[1]));
    // Drawn in order of speed: thick (slowest), slim, bicubic.
    expect(xs).toHaveLength(3);
    expect(xs[0]).toBeLessThan(xs[1]!);
    expect(xs[1]).toBeLessThan(xs[2]!);
  });
});

describe('joinResults', () => {
  it('pairs mean PSNR with file-pipeline speed and leaves out methods without a speed', () => {
    const quality = {
      means: [
        { scale: 2, method: 'bicubic', psnr: 28.7, ssim: 0.84 },
        { scale: 2, method: 'esrgan-medium-x2', psnr: 30.9, ssim: 0.88 },
      ],
    };
    const speed = {
      rows: [
        { scale: 2, method: 'bicubic', fileMpPerS: 17 },
        { scale: 4, method: 'esrgan-medium-x2', fileMpPerS: 1 },
      ],
    };
    expect(joinResults(quality, speed)).toEqual([{ method: 'bicubic', scale: 2, psnr: 28.7, mpPerS: 17 }]);
    expect(() => joinResults({}, speed)).toThrow(/"means" list/);
  });
});
