/**
 * Colour, dynamic range and bit depth of a video result, decided once from the probe (pure). Both
 * video pipelines (upscale and mouth synchronisation) take their decoder's RGB conversion, their frames' bit
 * depth, the encoder's YUV conversion and every colour tag from one `ColourPlan`, so the tags can
 * never disagree with the pixels. The rules (docs/contract.md, "Video fidelity"):
 *
 * - 8-bit SDR in: the 8-bit path as before (rgb24 frames, H.264 8-bit), tagged with the input's
 *   primaries and transfer and the matrix it was encoded with (BT.709; BT.2020 non-constant
 *   luminance when the primaries are BT.2020, so a tag set is never mixed).
 * - More than 8 bits, or a PQ / HLG transfer (HDR), with `hdr: "keep"` (the default): frames travel
 *   as 16-bit RGB (rgb48le) from decoder to encoder, and the result is HEVC Main10 (libx265,
 *   `hvc1` in MP4), 10-bit 4:2:0, with the input's primaries and transfer, the BT.2020 matrix for
 *   BT.2020 primaries, and the mastering-display and content-light metadata copied.
 * - PQ / HLG with `hdr: "sdr"`: tone-mapped in the decoder (zscale to linear light, BT.709
 *   primaries, the Hable operator, BT.709 transfer), then the 8-bit path, tagged BT.709 throughout.
 * - An odd output side (factor 1 on an odd input, or mouth synchronisation on an odd source) is encoded 4:4:4
 *   (H.264 High 4:4:4 or HEVC Main 4:4:4 10), so the result is exactly the size the contract says.
 * - Dolby Vision: a base layer that is HDR10, SDR or HLG (profiles 8.1, 8.2, 8.4, 7) is that
 *   stream, processed as it is tagged (the RPU is not carried); a base layer without a
 *   compatible signal (profile 5, IPTPQc2) is refused (PROBE_FAILED) at the quote
 *   (media/dolby-vision.ts), and again here should a plan be made without one.
 */
import { checkDolbyVision, type DolbyVision } from '../media/index.js';
import type { Size } from './video-geometry.js';
import type { HdrMode } from './settings.js';

/** ffmpeg's names for the YUV matrices its scale filter knows (in_color_matrix / out_color_matrix). */
export type ColourMatrix = 'bt709' | 'bt601' | 'bt470' | 'smpte170m' | 'fcc' | 'smpte240m' | 'bt2020';

/** The transfers that make a stream HDR, as ffprobe names them. */
const PQ = 'smpte2084';
const HLG = 'arib-std-b67';

/** Mastering display colour volume, in x265's units (chromaticity in 0.00002, luminance in 0.0001 cd/m²). */
export interface MasteringDisplay {
  red: [number, number];
  green: [number, number];
  blue: [number, number];
  whitePoint: [number, number];
  maxLuminance: number;
  minLuminance: number;
}

export interface ContentLight {
  maxCll: number;
  maxFall: number;
}

/** The colour facts of the input's video stream (video-probe.ts). */
export interface ColourSource {
  matrix?: ColourMatrix;
  primaries?: string;
  transfer?: string;
  /** Bits per sample of the decoded picture (from the pixel format; 8 when unknown). */
  bitDepth: number;
  mastering?: MasteringDisplay;
  contentLight?: ContentLight;
  dolbyVision?: DolbyVision;
}

export type { DolbyVision };

export type FrameDepth = 8 | 16;

export interface ColourPlan {
  /** Bits per sample of the RGB frames between the processes and the network. */
  depth: FrameDepth;
  /** PQ / HLG tone-mapped to SDR BT.709 in the decoder. */
  toneMap: boolean;
  /** The matrix the decoder reads the input's YUV with. */
  inputMatrix: ColourMatrix;
  output: {
    codec: 'h264' | 'hevc';
    bits: 8 | 10;
    /** The matrix the encoder writes YUV with (ffmpeg's scale name) and its tag. */
    matrix: 'bt709' | 'bt2020';
    matrixTag: 'bt709' | 'bt2020nc';
    primaries?: string;
    transfer?: string;
    mastering?: MasteringDisplay;
    contentLight?: ContentLight;
  };
}

export function isHdrTransfer(transfer: string | undefined): boolean {
  return transfer === PQ || transfer === HLG;
}

/** Bits per sample of an ffmpeg pixel format name ("yuv420p10le" 10, "p010le" 10, "yuv420p" 8, "rgb48le" 16). */
export function pixelFormatBits(pixelFormat: string | undefined): number {
  if (pixelFormat === undefined) return 8;
  const planar = /p(\d{1,2})(?:le|be)?$/.exec(pixelFormat);
  if (planar?.[1] !== undefined) return Number(planar[1]);
  if (/^p0(\d{2})(?:le|be)$/.test(pixelFormat)) return Number(pixelFormat.slice(2, 4));
  if (/^(rgb|bgr)48|^(rgba|bgra)64|^y210|^gray16/.test(pixelFormat)) return 16;
  return 8;
}

export function colourPlan(source: ColourSource, hdr: HdrMode, decoded: Size): ColourPlan {
  checkDolbyVision(source.dolbyVision);
  const inputMatrix = source.matrix ?? untaggedMatrix(source, decoded);
  const hdrInput = isHdrTransfer(source.transfer);
  if (hdrInput && hdr === 'sdr') {
    return {
      depth: 8,
      toneMap: true,
      inputMatrix,
      output: { codec: 'h264', bits: 8, matrix: 'bt709', matrixTag: 'bt709', primaries: 'bt709', transfer: 'bt709' },
    };
  }
  const deep = hdrInput || source.bitDepth > 8;
  // HDR without a primaries tag is BT.2020 in practice (what every PQ/HLG camera and grade uses).
  const primaries = source.primaries ?? (hdrInput ? 'bt2020' : undefined);
  // The matrix follows the primaries, so the tags never mix BT.709 and BT.2020.
  const wide = primaries === 'bt2020';
  const output: ColourPlan['output'] = {
    codec: deep ? 'hevc' : 'h264',
    bits: deep ? 10 : 8,
    matrix: wide ? 'bt2020' : 'bt709',
    matrixTag: wide ? 'bt2020nc' : 'bt709',
  };
  if (primaries !== undefined) output.primaries = primaries;
  if (source.transfer !== undefined) output.transfer = source.transfer;
  if (hdrInput && source.mastering !== undefined) output.mastering = source.mastering;
  if (hdrInput && source.contentLight !== undefined) output.contentLight = source.contentLight;
  return { depth: deep ? 16 : 8, toneMap: false, inputMatrix, output };
}

/**
 * The plan of frames that must be 8-bit whatever the job asks (face detection before mouth synchronisation, and its
 * lossless test encoder, libx264rgb): HDR is always tone-mapped to SDR BT.709 there, and deeper SDR
 * is read 8-bit, so the tags of anything encoded from them describe the pixels.
 */
export function eightBitColourPlan(source: ColourSource, decoded: Size): ColourPlan {
  const plan = colourPlan(source, 'sdr', decoded);
  if (plan.depth === 8) return plan;
  return { ...plan, depth: 8, output: { ...plan.output, codec: 'h264', bits: 8 } };
}

/** What players assume for an untagged picture: BT.2020 for HDR, BT.709 from 720 lines or 1280 columns, BT.601 below. */
function untaggedMatrix(source: ColourSource, decoded: Size): ColourMatrix {
  if (isHdrTransfer(source.transfer) || source.primaries === 'bt2020') return 'bt2020';
  return decoded.height >= 720 || decoded.width >= 1280 ? 'bt709' : 'bt601';
}

/** Bytes of one interleaved RGB frame at the plan's depth. */
export function frameBytes(size: Size, depth: FrameDepth): number {
  return size.width * size.height * 3 * (depth / 8);
}

/** ffmpeg's name of the frames' pixel format on the pipes. */
export function pipePixelFormat(depth: FrameDepth): 'rgb24' | 'rgb48le' {
  return depth === 16 ? 'rgb48le' : 'rgb24';
}

/** zimg's names of the input's transfer, primaries and matrix, for the tone-mapping chain. */
const ZIMG_TRANSFER: Readonly<Record<string, string>> = { [PQ]: 'smpte2084', [HLG]: 'arib-std-b67' };
const ZIMG_MATRIX: Readonly<Record<ColourMatrix, string>> = {
  bt709: '709',
  bt601: '170m',
  smpte170m: '170m',
  bt470: '470bg',
  fcc: 'fcc',
  smpte240m: '240m',
  bt2020: '2020_ncl',
};

/**
 * Decoded video to RGB of exactly `size` at the plan's depth. The usual path reads the YUV with the
 * input's own matrix (swscale, which keeps 16 bits for 16-bit output). Tone mapping: zscale to
 * linear light (nominal peak 100 cd/m²), BT.709 primaries in float, Hable's operator (no
 * desaturation), back to the BT.709 transfer, full-range RGB.
 */
export function decodeColourFilters(
  plan: ColourPlan,
  source: Pick<ColourSource, 'transfer' | 'primaries'>,
  size: Size,
): string[] {
  if (plan.toneMap) {
    const tin = ZIMG_TRANSFER[source.transfer ?? ''] ?? 'smpte2084';
    const pin = source.primaries === 'bt709' ? '709' : '2020';
    return [
      `zscale=w=${size.width}:h=${size.height}:f=bicubic:tin=${tin}:min=${ZIMG_MATRIX[plan.inputMatrix]}:pin=${pin}:rin=limited:t=linear:npl=100`,
      'format=gbrpf32le',
      'zscale=p=709',
      'tonemap=tonemap=hable:desat=0',
      'zscale=t=709:m=709:r=full',
      'format=gbrp',
      'format=rgb24',
    ];
  }
  return [
    `scale=w=${size.width}:h=${size.height}:flags=bicubic+accurate_rnd+full_chroma_int:in_color_matrix=${plan.inputMatrix}`,
    `format=${pipePixelFormat(plan.depth)}`,
  ];
}

/** The encoder's pixel format: 4:2:0 where both sides are even, 4:4:4 otherwise (exact odd sizes). */
export function encodePixelFormat(plan: Pick<ColourPlan, 'output'>, size: Size): string {
  const chroma = size.width % 2 === 0 && size.height % 2 === 0 ? '420' : '444';
  return plan.output.bits === 10 ? `yuv${chroma}p10le` : `yuv${chroma}p`;
}

/** RGB of `size` to the encoder's YUV, TV range, with the plan's matrix. */
export function encodeColourFilters(plan: Pick<ColourPlan, 'output'>, size: Size): string[] {
  return [
    `scale=out_color_matrix=${plan.output.matrix}:out_range=tv:flags=bicubic+accurate_rnd`,
    `format=${encodePixelFormat(plan, size)}`,
  ];
}

/** The stream's colour tags, all from the plan: never a matrix that disagrees with the primaries. */
export function colourTagArgs(plan: Pick<ColourPlan, 'output'>): string[] {
  const { output } = plan;
  const tags = ['-colorspace', output.matrixTag, '-color_range', 'tv'];
  if (output.primaries !== undefined) tags.push('-color_primaries', output.primaries);
  if (output.transfer !== undefined) tags.push('-color_trc', output.transfer);
  return tags;
}

/** x265's own VUI and HDR10 SEI options (`-x265-params`), so the bitstream says what the container says. */
export function x265ColourParams(plan: Pick<ColourPlan, 'output'>): string[] {
  const { output } = plan;
  const params = [`colormatrix=${output.matrixTag}`, 'range=limited'];
  if (output.primaries !== undefined) params.push(`colorprim=${output.primaries}`);
  if (output.transfer !== undefined) params.push(`transfer=${output.transfer}`);
  const m = output.mastering;
  if (m !== undefined) {
    const xy = (p: [number, number]): string => `(${p[0]},${p[1]})`;
    params.push(
      `master-display=G${xy(m.green)}B${xy(m.blue)}R${xy(m.red)}WP${xy(m.whitePoint)}L(${m.maxLuminance},${m.minLuminance})`,
    );
  }
  if (output.contentLight !== undefined)
    params.push(`max-cll=${output.contentLight.maxCll},${output.contentLight.maxFall}`);
  if (m !== undefined || output.contentLight !== undefined) params.push('hdr10=1');
  return params;
}

const fraction = (text: string | number | undefined): number | undefined => {
  if (text === undefined) return undefined;
  if (typeof text === 'number') return Number.isFinite(text) ? text : undefined;
  const [num, den] = text.split('/').map(Number);
  if (num === undefined || !Number.isFinite(num)) return undefined;
  if (den === undefined) return num;
  return Number.isFinite(den) && den !== 0 ? num / den : undefined;
};

/** ffprobe's "Mastering display metadata" side data (fractions) in x265's units; undefined when incomplete. */
export function masteringFromSideData(side: Record<string, unknown>): MasteringDisplay | undefined {
  const read = (key: string, unit: number): number | undefined => {
    const value = fraction(side[key] as string | number | undefined);
    return value === undefined || value < 0 ? undefined : Math.round(value * unit);
  };
  const c = (key: string): number | undefined => read(key, 50_000);
  const values = [
    c('red_x'),
    c('red_y'),
    c('green_x'),
    c('green_y'),
    c('blue_x'),
    c('blue_y'),
    c('white_point_x'),
    c('white_point_y'),
    read('max_luminance', 10_000),
    read('min_luminance', 10_000),
  ];
  const [rx, ry, gx, gy, bx, by, wx, wy, max, min] = values;
  if (
    rx === undefined ||
    ry === undefined ||
    gx === undefined ||
    gy === undefined ||
    bx === undefined ||
    by === undefined
  )
    return undefined;
  if (wx === undefined || wy === undefined || max === undefined || min === undefined || max === 0) return undefined;
  return { red: [rx, ry], green: [gx, gy], blue: [bx, by], whitePoint: [wx, wy], maxLuminance: max, minLuminance: min };
}

/** ffprobe's "Content light level metadata" side data; undefined when absent or empty. */
export function contentLightFromSideData(side: Record<string, unknown>): ContentLight | undefined {
  const maxCll = fraction(side['max_content'] as string | number | undefined);
  const maxFall = fraction(side['max_average'] as string | number | undefined);
  if (maxCll === undefined || maxFall === undefined || maxCll < 0 || maxFall < 0 || (maxCll === 0 && maxFall === 0))
    return undefined;
  return { maxCll: Math.round(maxCll), maxFall: Math.round(maxFall) };
}
