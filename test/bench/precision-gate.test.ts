/**
 * The precision gate (bench/inference/precision-gate.ts): its pure parts on small synthetic
 * pictures (each figure's arithmetic, the pass/fail decision at its boundaries, the seam check's
 * tile and crop), and the one line `models list` prints from a manifest's gate. No network runs.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  defaultCropSide,
  gatePasses,
  type InputFigures,
  lumaGradient,
  maxLevelDifference,
  meanDeltaE,
  MIN_PSNR_DB,
  PSNR_CAP_DB,
  psnrRgb,
  seamCropSide,
  seamTile,
  SEAMLESS_LEVELS,
  summariseGate,
} from '../../bench/inference/precision-gate-figures.js';
import { gateLine } from '../../src/cli/commands/models.js';
import { defaultFeather, parseManifest, planTiles, type PrecisionGate } from '../../src/inference/index.js';
import { PACKAGE_ROOT } from '../../src/paths.js';

/** An interleaved 8-bit RGB picture from a function of (x, y, channel). */
function rgb(width: number, height: number, f: (x: number, y: number, c: number) => number): Uint8Array {
  const data = new Uint8Array(width * height * 3);
  for (let y = 0; y < height; y += 1)
    for (let x = 0; x < width; x += 1) for (let c = 0; c < 3; c += 1) data[(y * width + x) * 3 + c] = f(x, y, c);
  return data;
}

function figures(over: Partial<InputFigures> = {}): InputFigures {
  return {
    label: 'photo:x 8x8',
    psnrDb: 45,
    gradient: 2,
    float32Gradient: 2,
    deltaE: 0.5,
    deltaEFullSize: 0.6,
    toleranceDeltaE: 1,
    speedRatios: [2],
    ...over,
  };
}

describe('each figure', () => {
  it('PSNR over every RGB sample: one sample 10 levels off in 4x4x3 is 10 log10(255^2 / (100 / 48)) dB; identical is Infinity', () => {
    const a = rgb(4, 4, () => 100);
    const b = a.slice();
    b[7] = 110;
    expect(psnrRgb(a, b, 4, 4)).toBeCloseTo(10 * Math.log10((255 * 255 * 48) / 100), 10);
    expect(psnrRgb(a, a.slice(), 4, 4)).toBe(Number.POSITIVE_INFINITY);
    expect(() => psnrRgb(a, b, 4, 5)).toThrow(RangeError);
  });

  it('sharpness is a ratio of mean luma gradients: a grey ramp of 2 levels a column against one of 1', () => {
    const steep = rgb(9, 3, (x) => 2 * x);
    const gentle = rgb(9, 3, (x) => x);
    // Y of grey g is 16 + 219 g / 255 (BT.601 studio range); forward differences, so every pixel but the last row and column counts.
    expect(lumaGradient(steep, 9, 3)).toBeCloseTo((2 * 219) / 255, 10);
    expect(lumaGradient(steep, 9, 3) / lumaGradient(gentle, 9, 3)).toBeCloseTo(2, 10);
  });

  it('colour: CIEDE2000 is 0 for the same picture and grows with a colour shift', () => {
    const grey = rgb(4, 4, () => 128);
    const warmer = rgb(4, 4, (_x, _y, c) => (c === 0 ? 136 : 128));
    const warmest = rgb(4, 4, (_x, _y, c) => (c === 0 ? 160 : 128));
    expect(meanDeltaE(grey, grey.slice())).toBe(0);
    expect(meanDeltaE(grey, warmer)).toBeGreaterThan(1);
    expect(meanDeltaE(grey, warmest)).toBeGreaterThan(meanDeltaE(grey, warmer));
  });

  it('seams: the largest difference in levels, whichever way', () => {
    const a = rgb(3, 2, () => 50);
    const b = a.slice();
    b[4] = 47;
    b[9] = 51;
    expect(maxLevelDifference(a, b)).toBe(3);
    expect(maxLevelDifference(b, a)).toBe(3);
    expect(() => maxLevelDifference(a, b.subarray(1))).toThrow(RangeError);
  });
});

describe('the gate', () => {
  it("is the worker's PSNR floor, 40 dB", () => {
    expect(MIN_PSNR_DB).toBe(40);
  });

  const passing = { psnrMinDb: 40, colourDeltaE: 1.2, colourToleranceDeltaE: 1.2, tiledMaxDiff: 1 };

  it(`passes at ${MIN_PSNR_DB} dB, a colour difference equal to the tolerance and ${SEAMLESS_LEVELS}/255 at the seams`, () => {
    expect(gatePasses(passing)).toBe(true);
  });

  it('fails on any one of them', () => {
    expect(gatePasses({ ...passing, psnrMinDb: 39.99 })).toBe(false);
    expect(gatePasses({ ...passing, colourDeltaE: 1.201 })).toBe(false);
    expect(gatePasses({ ...passing, tiledMaxDiff: 2 })).toBe(false);
  });

  it('adds the inputs up: lowest and mean PSNR (capped), pooled sharpness, mean colour, largest seam, median speed', () => {
    const gate = summariseGate(
      [
        figures({
          label: 'a',
          psnrDb: 41,
          gradient: 3,
          float32Gradient: 2,
          deltaE: 0.2,
          toleranceDeltaE: 1.5,
          speedRatios: [1.5, 2.5],
        }),
        figures({
          label: 'b',
          psnrDb: Number.POSITIVE_INFINITY,
          gradient: 1,
          float32Gradient: 2,
          deltaE: 0.4,
          toleranceDeltaE: 0.5,
          speedRatios: [2, 3],
        }),
        figures({
          label: 'c',
          psnrDb: 43,
          gradient: 0.2,
          float32Gradient: 0.1,
          deltaE: 0.6,
          toleranceDeltaE: 1,
          speedRatios: [1],
        }),
      ],
      [0, 1, 1],
      'now',
    );
    expect(gate).toEqual({
      psnrMinDb: 41,
      psnrMeanDb: Number(((41 + PSNR_CAP_DB + 43) / 3).toFixed(2)),
      // (3 + 1 + 0.2) / (2 + 2 + 0.1): the flat input c's own ratio (2) does not weigh as much as a textured one's.
      sharpnessRatio: Number((4.2 / 4.1).toFixed(3)),
      colourDeltaE: 0.4,
      colourToleranceDeltaE: 1,
      tiledMaxDiff: 1,
      speedVsFloat32: 2,
      passes: true,
      inputs: ['a', 'b', 'c'],
      measured: 'now',
    } satisfies PrecisionGate);
  });

  it('fails a variant below the PSNR floor, one whose colour moves more than float32 does, and one with a seam', () => {
    expect(summariseGate([figures({ psnrDb: 39.994 })], [0], 'now')).toMatchObject({ psnrMinDb: 39.99, passes: false });
    // Rounded to 40.00, it passes: the stored figure decides.
    expect(summariseGate([figures({ psnrDb: 39.996 })], [0], 'now')).toMatchObject({ psnrMinDb: 40, passes: true });
    expect(
      summariseGate([figures({ deltaE: 1.2 }), figures({ deltaE: 1, toleranceDeltaE: 1.1 })], [0], 'now'),
    ).toMatchObject({ colourDeltaE: 1.1, colourToleranceDeltaE: 1.05, passes: false });
    expect(summariseGate([figures()], [1, 2], 'now')).toMatchObject({ tiledMaxDiff: 2, passes: false });
  });

  it('needs inputs, a seam check and a timed round', () => {
    expect(() => summariseGate([], [0], 'now')).toThrow(RangeError);
    expect(() => summariseGate([figures()], [], 'now')).toThrow(RangeError);
    expect(() => summariseGate([figures({ speedRatios: [] })], [0], 'now')).toThrow(RangeError);
  });
});

describe('the seam check and crops', () => {
  it.each([
    [24, 64, 72],
    [34, 88, 104],
    [80, 176, 184],
    [0, 8, 16],
  ])(
    'overlap %i: the smallest tile the engine takes (%i), and a crop of two tiles a side (%i)',
    (overlap, tile, crop) => {
      const feather = defaultFeather(overlap);
      expect(seamTile(overlap, feather)).toBe(tile);
      expect(() => planTiles({ width: crop, height: crop, tile: tile - 8, overlap, feather })).toThrow(RangeError);
      expect(seamCropSide(tile, overlap, feather)).toBe(crop);
      const plan = planTiles({ width: crop, height: crop, tile, overlap, feather });
      expect([plan.cols.length, plan.rows.length, plan.tileWidth]).toEqual([2, 2, tile]);
    },
  );

  it('crops: 128 pixels for the compact network, 96 for the large one', () => {
    expect(defaultCropSide(1_209_024)).toBe(128);
    expect(defaultCropSide(17_926_848)).toBe(96);
  });
});

describe('models list', () => {
  const gate: PrecisionGate = {
    psnrMinDb: 36.74,
    psnrMeanDb: 38.31,
    sharpnessRatio: 1.166,
    colourDeltaE: 0.836,
    colourToleranceDeltaE: 1.766,
    tiledMaxDiff: 9,
    speedVsFloat32: 2.19,
    passes: false,
    inputs: ['photo:astronaut 128x128'],
    measured: 'now',
  };

  async function variant(g: PrecisionGate | undefined) {
    const json = JSON.parse(
      await readFile(path.join(PACKAGE_ROOT, 'models', 'realesrgan-x4fast.json'), 'utf8'),
    ) as Record<string, unknown>;
    const source = {
      kind: 'int8',
      of: 'realesrgan-x4fast',
      calibration: { file: 'calibration/realesrgan-x4fast-int8.json', sha256: '0'.repeat(64) },
    };
    return parseManifest(
      {
        ...json,
        name: 'realesrgan-x4fast-int8',
        file: 'realesrgan-x4fast-int8.onnx',
        source,
        halfPrecision: undefined,
        ...(g === undefined ? {} : { gate: g }),
      },
      'test',
    );
  }

  it("shows a variant's figures in one line, and whether it is offered", async () => {
    expect(gateLine(await variant(gate))).toBe(
      'int8 of realesrgan-x4fast: PSNR min 36.7 dB (gate 40), mean 38.3; ΔE 0.84 (tolerance 1.77), sharpness 1.17, tiled 9/255, 2.2x float32: not offered by default',
    );
    expect(gateLine(await variant({ ...gate, psnrMinDb: 41.2, tiledMaxDiff: 1, passes: true }))).toMatch(
      /^int8 of realesrgan-x4fast: PSNR min 41\.2 dB .* tiled 1\/255, 2\.2x float32: passes the gate$/,
    );
  });

  it('prints nothing for a manifest without a gate', async () => {
    expect(gateLine(await variant(undefined))).toBeUndefined();
  });
});
