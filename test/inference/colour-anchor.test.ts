/**
 * Edge padding and colour anchoring, the two measures that keep a network's output on the input's
 * colours (docs/contract.md, "Image fidelity"), on synthetic pictures with known answers.
 */
import { describe, expect, it } from 'vitest';
import { anchorColours, anchorSigma, cropPadding, padEdges, paddingFor } from '../../src/inference/index.js';

function image(
  width: number,
  height: number,
  pixel: (x: number, y: number) => [number, number, number],
  sixteen = false,
) {
  const data = sixteen ? new Uint16Array(width * height * 3) : new Uint8Array(width * height * 3);
  for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) data.set(pixel(x, y), (y * width + x) * 3);
  return { data, width, height, channels: 3 as const };
}

describe('padEdges and cropPadding', () => {
  it('pads every side by 8 and short axes up to 16, centred', () => {
    expect(paddingFor(100, 50)).toEqual({ left: 8, right: 8, top: 8, bottom: 8 });
    expect(paddingFor(1, 3)).toEqual({ left: 8, right: 8, top: 8, bottom: 8 });
    // With a smaller pad, the minimum side decides: 1 + 15 and 3 + 13 make 16.
    expect(paddingFor(1, 3, 2)).toEqual({ left: 7, right: 8, top: 6, bottom: 7 });
  });

  it('repeats the edge pixels outwards, and the crop of a scaled copy is the scaled original', () => {
    const small = image(3, 2, (x, y) => [x * 10, y * 10, 7]);
    const p = { left: 2, right: 1, top: 1, bottom: 3 };
    const padded = padEdges(small, p);
    expect([padded.width, padded.height]).toEqual([6, 6]);
    expect([...padded.data.subarray(0, 3)]).toEqual([0, 0, 7]); // the top-left corner repeats pixel (0, 0)
    expect([...padded.data.subarray((5 * 6 + 5) * 3, (5 * 6 + 5) * 3 + 3)]).toEqual([20, 10, 7]); // bottom-right repeats (2, 1)
    // A nearest-neighbour x2 of the padded picture, cropped, is the x2 of the original.
    const up = image(
      12,
      12,
      (x, y) =>
        [
          ...padded.data.subarray(
            (Math.floor(y / 2) * 6 + Math.floor(x / 2)) * 3,
            (Math.floor(y / 2) * 6 + Math.floor(x / 2)) * 3 + 3,
          ),
        ] as [number, number, number],
    );
    const cropped = cropPadding(up, p, 2);
    const expected = image(6, 4, (x, y) => [Math.floor(x / 2) * 10, Math.floor(y / 2) * 10, 7]);
    expect([...cropped.data]).toEqual([...expected.data]);
  });

  it('keeps 16-bit samples 16-bit', () => {
    const deep = image(2, 2, () => [60000, 1, 40000], true);
    const padded = padEdges(deep, paddingFor(2, 2));
    expect(padded.data).toBeInstanceOf(Uint16Array);
    expect(Math.max(...padded.data)).toBe(60000);
  });
});

describe('anchorColours', () => {
  it('moves a drifted flat output back onto the input colour, keeping its detail', () => {
    const input = image(20, 20, () => [200, 40, 90]);
    // The "network": +12 on red, -9 on blue everywhere, plus a fine checker of +-6 on green.
    const output = image(40, 40, (x, y) => [212, 40 + ((x + y) % 2 === 0 ? 6 : -6), 81]);
    anchorColours(input, output, 2, 255);
    for (let i = 0; i < output.data.length; i += 3) {
      expect(output.data[i]).toBe(200);
      expect(Math.abs(output.data[i + 1]! - 40)).toBe(6);
      expect(output.data[i + 2]).toBe(90);
    }
  });

  it('leaves alone what is finer than its sigma but anchors block by block on a tiny image', () => {
    // Three columns, the network moved each by a different amount (as x4plus does on a 3xN image).
    const input = image(3, 40, (x) => [30 + x * 80, 128, 120]);
    const drift = [-13, 20, -7];
    const make = () => image(6, 80, (x) => [30 + Math.floor(x / 2) * 80 + drift[Math.floor(x / 2)]!, 128, 120]);
    expect(anchorSigma(3, 40)).toBe(0);
    const tiny = make();
    anchorColours(input, tiny, 2, 255, anchorSigma(3, 40));
    for (let x = 0; x < 6; x++) expect(tiny.data[(40 * 6 + x) * 3]).toBe(30 + Math.floor(x / 2) * 80);
    // With the low-pass, the per-column differences are averaged together: only their mean is removed.
    const smooth = make();
    anchorColours(input, smooth, 2, 255, 2);
    expect(Math.abs(smooth.data[40 * 6 * 3]! - 30)).toBeGreaterThan(5);
  });

  it('holds each pixel of a tiny image within 2 levels of its neighbouring input pixels', () => {
    const input = image(1, 1, () => [200, 40, 90]);
    // A halo: one pixel of the block far off, the others compensating.
    const output = image(2, 2, (x, y) => (x === 0 && y === 0 ? [250, 40, 90] : [183, 40, 90]));
    anchorColours(input, output, 2, 255, 0);
    const reds = [0, 3, 6, 9].map((i) => output.data[i]!);
    for (const red of reds) expect(Math.abs(red - 200)).toBeLessThanOrEqual(2);
    // Clamping the halo moved the block's mean; the rounds after it bring the mean back within a level.
    expect(Math.abs(reds.reduce((a, b) => a + b, 0) / 4 - 200)).toBeLessThanOrEqual(0.5);
    expect(reds[0]).toBe(202);
  });

  it("keeps a tiny image's full-strength colour beside its opposite: each block averages to its input pixel though its pixels hit the range", () => {
    // 2x4, as a 2x700 strip: a row of full red over a row of none (and the reverse in green).
    const input = image(2, 4, (_x, y) => (y % 2 === 0 ? [255, 0, 128] : [0, 255, 128]));
    // The network's x4 block: a ramp around the input value, stored as 8 bits (so clipped at 0 and 255).
    const clip = (v: number): number => Math.min(255, Math.max(0, Math.round(v)));
    const output = image(8, 16, (x, y) => {
      const i = (y % 4) * 4 + (x % 4);
      const [r, g, b] = input.data.subarray((Math.floor(y / 4) * 2 + Math.floor(x / 4)) * 3);
      return [clip(r! - 30 + 3 * i), clip(g! - 30 + 3 * i), clip(b! - 30 + 3 * i)];
    });
    anchorColours(input, output, 4, 255, anchorSigma(2, 4));
    for (let y = 0; y < 4; y++) {
      for (let x = 0; x < 2; x++) {
        for (let k = 0; k < 3; k++) {
          let sum = 0;
          for (let dy = 0; dy < 4; dy++)
            for (let dx = 0; dx < 4; dx++) sum += output.data[((y * 4 + dy) * 8 + x * 4 + dx) * 3 + k]!;
          expect(
            Math.abs(sum / 16 - input.data[(y * 2 + x) * 3 + k]!),
            `block ${x},${y} channel ${k}`,
          ).toBeLessThanOrEqual(0.5);
        }
      }
    }
  });

  it('works at 16 bits and clamps to the range', () => {
    const input = image(4, 4, () => [65535, 0, 30000], true);
    const output = image(8, 8, () => [65000, 400, 30500], true);
    anchorColours(input, output, 2, 65535);
    expect([output.data[0], output.data[1], output.data[2]]).toEqual([65535, 0, 30000]);
  });

  it('refuses an output that is not the input times the factor', () => {
    expect(() =>
      anchorColours(
        image(4, 4, () => [0, 0, 0]),
        image(8, 7, () => [0, 0, 0]),
        2,
        255,
      ),
    ).toThrow('Expected the output to be 8x8 (factor 2) but received 8x7');
  });
});
