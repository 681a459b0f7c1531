import { describe, expect, it } from 'vitest';
import {
  estimateImageUpscale,
  estimateLipsync,
  estimateVideoUpscale,
  frameCount,
  lipsyncOutputSeconds,
  lipsyncSecondsPerFrame,
  tiledInputPixels,
  type SrNetworkCost,
} from '../../src/jobs/index.js';
import { TILE_OUTPUT_CORE_SECONDS_PER_PIXEL } from '../../src/jobs/cost-model.js';
import { HARDWARE_CLASSES, hardwareClassForProviders, hardwareProfile } from '../../src/jobs/hardware-classes.js';
import type { SyncMode } from '../../src/jobs/index.js';

import { HAND, NET } from './hand-profile.js';

describe('tiledInputPixels', () => {
  it.each([
    // [width, height, tile, overlap, expected]: an axis shorter than the tile is one tile of its own length
    [100, 50, 512, 10, 100 * 50],
    [512, 512, 512, 10, 512 * 512],
    // 1000 px at tile 512, overlap 10 (feather 4): 2 tiles of 512 per axis
    [1000, 1000, 512, 10, 4 * 512 * 512],
    [1000, 300, 512, 10, 2 * 512 * 300],
    [128, 64, 64, 0, 128 * 64],
  ])('%i x %i at tile %i overlap %i: %i', (w, h, tile, overlap, expected) => {
    expect(tiledInputPixels(w, h, { tile, overlap })).toBe(expected);
  });
});

describe('frameCount', () => {
  it.each([
    [8, { num: 10, den: 1 }, 80],
    [8.1, { num: 10, den: 1 }, 81],
    [2, { num: 240, den: 1 }, 480],
    [60, { num: 240, den: 1 }, 14_400],
    [1.001, { num: 30000, den: 1001 }, 30],
    [0.01, { num: 25, den: 1 }, 1],
  ])('%s s at %o: %i frames', (seconds, fps, frames) => {
    expect(frameCount(seconds, fps)).toBe(frames);
  });
});

describe('estimateVideoUpscale', () => {
  it('on the hand profile: one second per 64x64 frame, linear in frames', () => {
    for (const frames of [1, 80, 81, 14_400]) {
      const e = estimateVideoUpscale({ width: 64, height: 64, frames, factor: '2' }, NET, HAND);
      expect(e.frames).toBe(frames);
      expect(e.networkMacs).toBe(4_096_000 * frames);
      expect(e.seconds).toBe(frames);
    }
  });

  it('counts output pixels of the encoder: target rounded up to even sides', () => {
    expect(
      estimateVideoUpscale({ width: 1920, height: 1080, frames: 1, factor: '4' }, NET, HAND).outputPixelsPerFrame,
    ).toBe(7680 * 4320);
    expect(
      estimateVideoUpscale({ width: 321, height: 241, frames: 1, factor: '1' }, NET, HAND).outputPixelsPerFrame,
    ).toBe(322 * 242);
  });

  it('adds the codecs to the network on a CPU class and overlaps them on a GPU class', () => {
    const codecs = { ...HAND, decodeSecondsPerMegapixel: 1, encodeSecondsPerMegapixel: 1 };
    // 64x64 in (0.004096 MP), 128x128 out (0.016384 MP): 100 frames -> 0.4096 + 1.6384 s of codecs, 100 s of network
    const gpu = estimateVideoUpscale({ width: 64, height: 64, frames: 100, factor: '2' }, NET, codecs);
    expect(gpu.seconds).toBe(100);
    expect(gpu.parts.decode + gpu.parts.encode).toBeCloseTo(2.048, 6);
    const cpu = estimateVideoUpscale({ width: 64, height: 64, frames: 100, factor: '2' }, NET, {
      ...codecs,
      overlapsCodecs: false,
    });
    // plus the tile cost per output pixel x 16,384 px x 100 frames on one core
    expect(cpu.seconds).toBe(Math.ceil((100 + 2.048 + TILE_OUTPUT_CORE_SECONDS_PER_PIXEL * 16_384 * 100) * 10) / 10);
  });

  it('the attack of the issue, 2 s of 1080p at 240 fps at factor "4", costs 240 times one frame', () => {
    const hw = hardwareProfile('cpu', 2);
    const net: SrNetworkCost = { name: 'esrgan-slim-x4', scale: 4, macsPerInputPixel: 252_352, tile: 512, overlap: 10 };
    const one = estimateVideoUpscale({ width: 1920, height: 1080, frames: 1, factor: '4' }, net, hw);
    const all = estimateVideoUpscale({ width: 1920, height: 1080, frames: 480, factor: '4' }, net, hw);
    expect(all.parts.network).toBeCloseTo(one.parts.network * 480, 6);
    const perFrame = one.parts.network + one.parts.decode + one.parts.encode;
    expect(all.seconds - hw.setupSeconds).toBeCloseTo(480 * perFrame, 0);
  });
});

describe('estimateImageUpscale', () => {
  it('one frame; the output is input x factor² pixels', () => {
    const e = estimateImageUpscale({ width: 64, height: 64, factor: '4' }, { ...NET, scale: 4 }, HAND);
    expect(e).toMatchObject({ frames: 1, inputPixelsPerFrame: 4096, outputPixelsPerFrame: 4096 * 16, seconds: 1 });
  });

  it('a thicker network costs in proportion to its MACs per pixel', () => {
    const slim = estimateImageUpscale({ width: 640, height: 640, factor: '2' }, NET, HAND);
    const thick = estimateImageUpscale(
      { width: 640, height: 640, factor: '2' },
      { ...NET, macsPerInputPixel: 30_000 },
      HAND,
    );
    expect(thick.parts.network / slim.parts.network).toBeCloseTo(30, 9);
  });
});

describe('lipsyncOutputSeconds', () => {
  const cases: [SyncMode, number, number, number][] = [
    ['cut_off', 10, 120, 10],
    ['cut_off', 10, 4, 4],
    ['loop', 10, 120, 120],
    ['loop', 10, 4, 4],
    ['bounce', 10, 120, 120],
    ['remap', 10, 120, 120],
    ['remap', 10, 4, 4],
    ['silence', 10, 120, 120],
    ['silence', 10, 4, 10],
  ];
  it.each(cases)('%s with %s s of video and %s s of audio: %s s', (mode, video, audio, out) => {
    expect(lipsyncOutputSeconds(mode, video, audio)).toBe(out);
  });
});

describe('estimateLipsync', () => {
  it('every output frame is decoded twice, processed and encoded', () => {
    const hw = { ...HAND, decodeSecondsPerMegapixel: 1, encodeSecondsPerMegapixel: 2, overlapsCodecs: false };
    const e = estimateLipsync({ width: 1000, height: 1000, frames: 10 }, hw, 0.5);
    // decode 2 x 1 MP x 10 x 1 s + encode 1 MP x 10 x 2 s + 10 x 0.5 s
    expect(e.seconds).toBe(45);
  });
});

describe('hardware classes', () => {
  it('CPU figures scale with cores; the GPU network does not', () => {
    const one = hardwareProfile('cpu', 1);
    const four = hardwareProfile('cpu', 4);
    expect(four.networkMacsPerSecond).toBe(4 * one.networkMacsPerSecond);
    expect(four.encodeSecondsPerMegapixel).toBeCloseTo(one.encodeSecondsPerMegapixel / 4, 12);
    expect(hardwareProfile('h100', 16).networkMacsPerSecond).toBe(HARDWARE_CLASSES.h100.networkMacsPerSecond);
    expect(() => hardwareProfile('cpu', 0)).toThrow(/positive integer/);
  });

  it("lip-sync's per-frame figure: the CPU's, measured on 2 cores, scales with them; the H100's does not", () => {
    expect(lipsyncSecondsPerFrame(hardwareProfile('cpu', 2))).toBe(0.07);
    expect(lipsyncSecondsPerFrame(hardwareProfile('cpu', 1))).toBe(0.14);
    expect(lipsyncSecondsPerFrame(hardwareProfile('cpu', 4))).toBe(0.035);
    expect(lipsyncSecondsPerFrame(hardwareProfile('h100', 1))).toBe(0.006);
    expect(lipsyncSecondsPerFrame(hardwareProfile('h100', 16))).toBe(0.006);
  });

  it.each([
    [['cpu'], 'cpu'],
    [['cuda', 'cpu'], 'h100'],
    [['tensorrt', 'cuda', 'cpu'], 'h100'],
    [['webgpu', 'cpu'], 'cpu'],
  ])('providers %o run as %s', (providers, name) => {
    expect(hardwareClassForProviders(providers)).toBe(name);
  });

  it('the H100 is labelled an estimate and the CPU measured', () => {
    expect(HARDWARE_CLASSES.h100.basis).toBe('estimate');
    expect(HARDWARE_CLASSES.cpu.basis).toBe('measured');
  });
});
