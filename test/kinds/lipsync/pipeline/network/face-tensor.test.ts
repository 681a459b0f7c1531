/** Face crops to Wav2Lip's 6-channel input and its 3-channel output back to RGB. */
import { describe, expect, it } from 'vitest';
import { tensorToRgb, WAV2LIP_LAYOUT, wav2lipInput } from '../../../../../src/kinds/lipsync/pipeline/index.js';

const SIZE = 8;
const PLANE = SIZE * SIZE;

/** Pixel p has R = p, G = 100 + p, B = 200 - p: every channel and position distinguishable. */
function image(shift = 0): Uint8Array {
  const out = new Uint8Array(3 * PLANE);
  for (let p = 0; p < PLANE; p++) {
    out[3 * p] = p + shift;
    out[3 * p + 1] = 100 + p + shift;
    out[3 * p + 2] = 200 - p - shift;
  }
  return out;
}

describe('wav2lipInput', () => {
  it('stacks the face with its lower half blanked and the reference, BGR in 0..1 (the original checkpoints)', () => {
    const face = image();
    const reference = image(5);
    const t = wav2lipInput(face, reference, SIZE);
    expect(t).toHaveLength(6 * PLANE);
    for (let p = 0; p < PLANE; p++) {
      const upper = p < PLANE / 2; // rows 0..3 of 8
      expect(t[p]).toBeCloseTo(upper ? (200 - p) / 255 : 0, 6); // B
      expect(t[PLANE + p]).toBeCloseTo(upper ? (100 + p) / 255 : 0, 6); // G
      expect(t[2 * PLANE + p]).toBeCloseTo(upper ? p / 255 : 0, 6); // R
      expect(t[3 * PLANE + p]).toBeCloseTo((200 - p - 5) / 255, 6);
      expect(t[4 * PLANE + p]).toBeCloseTo((100 + p + 5) / 255, 6);
      expect(t[5 * PLANE + p]).toBeCloseTo((p + 5) / 255, 6);
    }
  });

  it('follows the layout a manifest gives: RGB in -1..1, blanked pixels at the bottom of the range', () => {
    const t = wav2lipInput(image(), image(), SIZE, { channelOrder: 'rgb', range: [-1, 1] });
    expect(t[0]).toBeCloseTo(-1, 6); // R of pixel 0 is 0
    expect(t[PLANE + 1]).toBeCloseTo(-1 + (2 * 101) / 255, 6);
    expect(t[PLANE - 1]).toBe(-1); // blanked
    expect(t[3 * PLANE + PLANE - 1]).toBeCloseTo(-1 + (2 * 63) / 255, 6);
  });

  it("takes a manifest's upper-case channel order and its mask row", () => {
    const t = wav2lipInput(image(), image(), SIZE, { channelOrder: 'BGR', range: [0, 1], maskFromRow: 0.75 });
    expect(t[0]).toBeCloseTo(200 / 255, 6);
    expect(t[6 * SIZE - 1]).toBeCloseTo((200 - 47) / 255, 6); // row 5 still shown
    expect(t[6 * SIZE]).toBe(0); // row 6 of 8 blanked
  });

  it('fills a batch in place at an offset', () => {
    const batch = new Float32Array(2 * 6 * PLANE).fill(7);
    wav2lipInput(image(), image(), SIZE, WAV2LIP_LAYOUT, batch, 6 * PLANE);
    expect(batch[6 * PLANE - 1]).toBe(7);
    expect(batch[6 * PLANE]).toBeCloseTo(200 / 255, 6);
  });

  it('refuses images of the wrong size and a batch without room', () => {
    expect(() => wav2lipInput(new Uint8Array(10), image(), SIZE)).toThrow(
      'Expected the face to hold 192 bytes (RGB 8x8) but received 10',
    );
    expect(() => wav2lipInput(image(), image(), SIZE, WAV2LIP_LAYOUT, new Float32Array(6 * PLANE), 1)).toThrow(
      'Expected room for 384 values at offset 1 but the output holds 384',
    );
    expect(() => wav2lipInput(image(), image(), SIZE, { channelOrder: 'rgb', range: [1, 1] })).toThrow(
      'Expected the tensor range to be two different finite numbers but received [1, 1]',
    );
  });
});

describe('tensorToRgb', () => {
  it('inverts the input conversion exactly (the reference channels back to the image)', () => {
    const reference = image(3);
    for (const layout of [WAV2LIP_LAYOUT, { channelOrder: 'rgb', range: [-1, 1] } as const]) {
      const t = wav2lipInput(image(), reference, SIZE, layout);
      expect(tensorToRgb(t, SIZE, layout, 3 * PLANE)).toEqual(reference);
    }
  });

  it('clamps values outside the range instead of wrapping', () => {
    const t = new Float32Array(3 * PLANE);
    t[0] = 1.7; // B of pixel 0 in BGR
    t[PLANE] = -0.2;
    t[2 * PLANE] = 0.5;
    const rgb = tensorToRgb(t, SIZE);
    expect([rgb[0], rgb[1], rgb[2]]).toEqual([128, 0, 255]);
  });
});
