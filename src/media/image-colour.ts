/**
 * How an image's colour travels through the worker (docs/contract.md, "Image fidelity"): in the
 * source's own encoding, at the source's bit depth, with its ICC profile embedded in the output.
 *
 * A profiled RGB or grey input (Display P3, Adobe RGB, a camera's sRGB) is not converted: the
 * network reads the encoded values as they are stored and the output carries the same profile, so
 * no colour outside sRGB is clipped and nothing is lost to a round trip between spaces. The one
 * exception is CMYK: the network works on RGB, so CMYK is converted to sRGB through its embedded
 * profile (or a generic CMYK one) and the output is sRGB, untagged as sRGB files usually are.
 *
 * Pure: from the header sharp read to a plan; no pixels.
 */
import type { Metadata } from 'sharp';

export interface ImageColourPlan {
  /** Bits per sample the network reads and the output stores: 16 for 16-bit inputs, else 8. */
  depth: 8 | 16;
  /** Decode the stored values without any colour conversion (sharp's keepIccProfile: no ICC transform). */
  keepEncoding: boolean;
  /** The input's profile, to embed in the output byte for byte; absent when the output is plain sRGB. */
  icc?: Buffer;
  /** One colour channel in and out (the network sees it as three equal channels). */
  grey: boolean;
  alpha: boolean;
}

export type ColourHeader = Pick<Metadata, 'space' | 'depth' | 'channels' | 'hasAlpha' | 'icc'>;

const SIXTEEN_BIT = new Set(['ushort', 'short']);

export function imageColourPlan(header: ColourHeader): ImageColourPlan {
  const alpha = header.hasAlpha;
  const cmyk = header.space === 'cmyk';
  const grey = !cmyk && header.channels - (alpha ? 1 : 0) === 1;
  const depth = SIXTEEN_BIT.has(header.depth) ? 16 : 8;
  if (cmyk) return { depth, keepEncoding: false, grey: false, alpha };
  const icc = header.icc !== undefined && header.icc.length > 0 ? header.icc : undefined;
  return { depth, keepEncoding: true, ...(icc === undefined ? {} : { icc }), grey, alpha };
}

/** The ICC profile's colour space signature (bytes 16..19: 'RGB ', 'GRAY', 'CMYK'), or undefined. */
export function iccColourSpace(icc: Buffer): string | undefined {
  return icc.length >= 20 ? icc.toString('latin1', 16, 20) : undefined;
}

/** The profile's description tag, for reports ('Display P3', 'Adobe RGB (1998)'); undefined when absent or unreadable. */
export function iccDescription(icc: Buffer): string | undefined {
  if (icc.length < 132) return undefined;
  const count = icc.readUInt32BE(128);
  for (let i = 0; i < count && 132 + i * 12 + 12 <= icc.length; i++) {
    const at = 132 + i * 12;
    if (icc.toString('latin1', at, at + 4) !== 'desc') continue;
    const offset = icc.readUInt32BE(at + 4);
    const size = icc.readUInt32BE(at + 8);
    if (offset + size > icc.length || size < 12) return undefined;
    const type = icc.toString('latin1', offset, offset + 4);
    if (type === 'desc') {
      const length = icc.readUInt32BE(offset + 8);
      return icc.toString('latin1', offset + 12, Math.min(offset + 12 + length, offset + size)).replace(/\0+$/, '');
    }
    if (type === 'mluc' && size >= 28) {
      const length = icc.readUInt32BE(offset + 20);
      const start = offset + icc.readUInt32BE(offset + 24);
      if (start + length > icc.length) return undefined;
      const utf16be = icc.subarray(start, start + length - (length % 2));
      return Buffer.from(utf16be).swap16().toString('utf16le').replace(/\0+$/, '');
    }
  }
  return undefined;
}
