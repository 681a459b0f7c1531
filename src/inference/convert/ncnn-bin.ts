/**
 * ncnn's `.bin` weights: the layers' arrays back to back in `.param` order, with no index. A
 * "tagged" array (convolution kernels) starts with a 4-byte storage tag: 0x01306B47 for float16
 * (padded to 4 bytes), 0 or 0x0002C056 for float32; int8 and codebook storage are refused. Plain
 * arrays (biases, PReLU slopes) are raw float32 without a tag.
 */
import { NcnnFormatError } from './ncnn-param.js';

export const NCNN_TAG_FP16 = 0x01306b47;
export const NCNN_TAG_FP32 = 0x0002c056;
export const NCNN_TAG_INT8 = 0x000d4b38;

/** IEEE 754 half to single, subnormals and infinities included. */
export function halfToFloat(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exponent = (h >> 10) & 0x1f;
  const fraction = h & 0x3ff;
  if (exponent === 0) return sign * fraction * 2 ** -24;
  if (exponent === 0x1f) return fraction === 0 ? sign * Infinity : Number.NaN;
  return sign * (1 + fraction / 1024) * 2 ** (exponent - 15);
}

export class NcnnWeightReader {
  private offset = 0;
  private readonly view: DataView;

  constructor(private readonly bytes: Uint8Array) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  private need(count: number, what: string): void {
    if (this.offset + count > this.bytes.byteLength) {
      throw new NcnnFormatError(
        `Expected ${count} more bytes for ${what} at offset ${this.offset} but the weights end at ${this.bytes.byteLength}`,
      );
    }
  }

  /** `count` raw little-endian float32 values. */
  raw(count: number, what: string): Float32Array {
    this.need(count * 4, what);
    const out = new Float32Array(count);
    for (let i = 0; i < count; i += 1) out[i] = this.view.getFloat32(this.offset + i * 4, true);
    this.offset += count * 4;
    return out;
  }

  /** `count` values preceded by their storage tag. */
  tagged(count: number, what: string): Float32Array {
    this.need(4, what);
    const tag = this.view.getUint32(this.offset, true);
    this.offset += 4;
    if (tag === NCNN_TAG_FP16) {
      const padded = Math.ceil((count * 2) / 4) * 4;
      this.need(padded, what);
      const out = new Float32Array(count);
      for (let i = 0; i < count; i += 1) out[i] = halfToFloat(this.view.getUint16(this.offset + i * 2, true));
      this.offset += padded;
      return out;
    }
    if (tag === 0 || tag === NCNN_TAG_FP32) return this.raw(count, what);
    const kind = tag === NCNN_TAG_INT8 ? 'int8' : 'codebook-quantised';
    throw new NcnnFormatError(
      `Expected float16 or float32 weights for ${what} but they are stored as ${kind} (tag 0x${tag.toString(16)})`,
    );
  }

  /** Throws unless every byte was read: a mismatch means the param and bin files disagree. */
  end(): void {
    if (this.offset !== this.bytes.byteLength) {
      throw new NcnnFormatError(
        `Expected the weights to end after ${this.offset} bytes but the file has ${this.bytes.byteLength}: the .param and .bin do not match`,
      );
    }
  }
}
