/** The colour plan's decisions (video/colour.ts): depth, codec, tags that never disagree, HDR10 metadata, Dolby Vision. */
import { describe, expect, it } from 'vitest';
import { JobError } from '../../src/errors.js';
import {
  type ColourSource,
  colourPlan,
  colourTagArgs,
  contentLightFromSideData,
  eightBitColourPlan,
  encodePixelFormat,
  masteringFromSideData,
  pixelFormatBits,
} from '../../src/video/index.js';

const size = { width: 64, height: 48 };
const hdr10: ColourSource = { bitDepth: 10, matrix: 'bt2020', primaries: 'bt2020', transfer: 'smpte2084' };
const hlg: ColourSource = { bitDepth: 10, matrix: 'bt2020', primaries: 'bt2020', transfer: 'arib-std-b67' };

describe('colourPlan', () => {
  it('keeps 8-bit SDR on the 8-bit H.264 path with its own primaries and transfer', () => {
    const plan = colourPlan({ bitDepth: 8, matrix: 'bt709', primaries: 'bt709', transfer: 'bt709' }, 'keep', size);
    expect(plan).toMatchObject({
      depth: 8,
      toneMap: false,
      inputMatrix: 'bt709',
      output: { codec: 'h264', bits: 8, matrixTag: 'bt709', primaries: 'bt709', transfer: 'bt709' },
    });
  });

  it.each([
    ['HDR10', hdr10, 'smpte2084'],
    ['HLG', hlg, 'arib-std-b67'],
  ])('keeps %s as 16-bit frames and HEVC Main10, BT.2020 primaries with the BT.2020 matrix', (_, source, transfer) => {
    const plan = colourPlan(source, 'keep', size);
    expect(plan).toMatchObject({
      depth: 16,
      toneMap: false,
      output: { codec: 'hevc', bits: 10, matrix: 'bt2020', matrixTag: 'bt2020nc', primaries: 'bt2020', transfer },
    });
  });

  it('never writes an 8-bit file with PQ or HLG tags, nor a BT.709 matrix with BT.2020 primaries', () => {
    for (const bitDepth of [8, 10, 12]) {
      for (const transfer of ['smpte2084', 'arib-std-b67', 'bt709', undefined]) {
        for (const primaries of ['bt2020', 'bt709', undefined]) {
          for (const hdr of ['keep', 'sdr'] as const) {
            const source: ColourSource = {
              bitDepth,
              ...(transfer === undefined ? {} : { transfer }),
              ...(primaries === undefined ? {} : { primaries }),
            };
            const { output } = colourPlan(source, hdr, size);
            if (output.transfer === 'smpte2084' || output.transfer === 'arib-std-b67') expect(output.bits).toBe(10);
            if (output.primaries === 'bt2020') expect(output.matrixTag).toBe('bt2020nc');
            if (output.matrixTag === 'bt2020nc') expect(output.primaries ?? 'bt2020').toBe('bt2020');
            if (bitDepth > 8 && hdr === 'keep') expect(output.bits).toBe(10);
          }
        }
      }
    }
  });

  it('keeps 10-bit SDR at 10 bits', () => {
    expect(
      colourPlan({ bitDepth: 10, matrix: 'bt709', primaries: 'bt709', transfer: 'bt709' }, 'keep', size),
    ).toMatchObject({ depth: 16, output: { codec: 'hevc', bits: 10, matrixTag: 'bt709' } });
  });

  it('tone-maps HDR for "sdr": 8-bit, tagged BT.709 throughout; SDR input is unaffected by the choice', () => {
    expect(colourPlan(hdr10, 'sdr', size)).toEqual({
      depth: 8,
      toneMap: true,
      inputMatrix: 'bt2020',
      output: { codec: 'h264', bits: 8, matrix: 'bt709', matrixTag: 'bt709', primaries: 'bt709', transfer: 'bt709' },
    });
    const sdr = { bitDepth: 8, primaries: 'bt709', transfer: 'bt709' };
    expect(colourPlan(sdr, 'sdr', size)).toEqual(colourPlan(sdr, 'keep', size));
  });

  it('copies HDR10 metadata for HDR output only', () => {
    const mastering = {
      red: [34000, 16000],
      green: [13250, 34500],
      blue: [7500, 3000],
      whitePoint: [15635, 16450],
      maxLuminance: 10000000,
      minLuminance: 1,
    } as ColourSource['mastering'] & object;
    const withMeta: ColourSource = { ...hdr10, mastering, contentLight: { maxCll: 1000, maxFall: 400 } };
    expect(colourPlan(withMeta, 'keep', size).output).toMatchObject({
      mastering,
      contentLight: { maxCll: 1000, maxFall: 400 },
    });
    expect(colourPlan(withMeta, 'sdr', size).output.mastering).toBeUndefined();
  });

  it('reads untagged HDR with the BT.2020 matrix and tags it BT.2020', () => {
    const plan = colourPlan({ bitDepth: 10, transfer: 'smpte2084' }, 'keep', size);
    expect(plan.inputMatrix).toBe('bt2020');
    expect(colourTagArgs(plan)).toEqual([
      '-colorspace',
      'bt2020nc',
      '-color_range',
      'tv',
      '-color_primaries',
      'bt2020',
      '-color_trc',
      'smpte2084',
    ]);
  });

  it('takes Dolby Vision with an HDR10, SDR or HLG base layer as that stream, and refuses profile 5 (no compatible base layer)', () => {
    expect(colourPlan({ ...hlg, dolbyVision: { profile: 8, compatibility: 4 } }, 'keep', size).output.transfer).toBe(
      'arib-std-b67',
    );
    expect(colourPlan({ ...hdr10, dolbyVision: { profile: 8, compatibility: 1 } }, 'keep', size).output.codec).toBe(
      'hevc',
    );
    let error: unknown;
    try {
      colourPlan({ ...hdr10, dolbyVision: { profile: 5, compatibility: 0 } }, 'keep', size);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(JobError);
    expect((error as JobError).code).toBe('PROBE_FAILED');
    expect((error as JobError).message).toMatch(/Dolby Vision profile 5 .*not supported/);
  });

  it('lip-sync (8-bit compositing) tone-maps HDR and encodes deeper SDR at 8 bits, with tags to match', () => {
    expect(eightBitColourPlan(hlg, size)).toMatchObject({
      depth: 8,
      toneMap: true,
      output: { bits: 8, transfer: 'bt709' },
    });
    expect(eightBitColourPlan({ bitDepth: 10, primaries: 'bt709' }, size)).toMatchObject({
      depth: 8,
      toneMap: false,
      output: { codec: 'h264', bits: 8 },
    });
  });
});

describe('bit depth and side data', () => {
  it.each([
    ['yuv420p', 8],
    ['yuvj420p', 8],
    ['nv12', 8],
    ['yuv420p10le', 10],
    ['yuv422p10be', 10],
    ['p010le', 10],
    ['yuv444p12le', 12],
    ['gbrp16le', 16],
    ['rgb48le', 16],
    [undefined, 8],
  ])('%s has %i bits', (format, bits) => {
    expect(pixelFormatBits(format)).toBe(bits);
  });

  it('encodes 4:2:0 for even sides and 4:4:4 for an odd one, at the plan depth', () => {
    const eight = colourPlan({ bitDepth: 8 }, 'keep', size);
    const ten = colourPlan(hdr10, 'keep', size);
    expect(encodePixelFormat(eight, { width: 64, height: 48 })).toBe('yuv420p');
    expect(encodePixelFormat(eight, { width: 321, height: 180 })).toBe('yuv444p');
    expect(encodePixelFormat(ten, { width: 64, height: 48 })).toBe('yuv420p10le');
    expect(encodePixelFormat(ten, { width: 64, height: 47 })).toBe('yuv444p10le');
  });

  it("converts ffprobe's mastering display and content light to x265's units, and ignores incomplete or empty ones", () => {
    expect(
      masteringFromSideData({
        red_x: '34000/50000',
        red_y: '16000/50000',
        green_x: '13250/50000',
        green_y: '34500/50000',
        blue_x: '7500/50000',
        blue_y: '3000/50000',
        white_point_x: '15635/50000',
        white_point_y: '16450/50000',
        min_luminance: '50/10000',
        max_luminance: '1000/1',
      }),
    ).toEqual({
      red: [34000, 16000],
      green: [13250, 34500],
      blue: [7500, 3000],
      whitePoint: [15635, 16450],
      maxLuminance: 10000000,
      minLuminance: 50,
    });
    expect(masteringFromSideData({ red_x: '34000/50000' })).toBeUndefined();
    expect(contentLightFromSideData({ max_content: 1000, max_average: 400 })).toEqual({ maxCll: 1000, maxFall: 400 });
    expect(contentLightFromSideData({ max_content: 0, max_average: 0 })).toBeUndefined();
  });
});
