/**
 * Face crops to and from the lip-sync model's planar float tensors. Pure.
 *
 * Wav2Lip's visual input is 6 channels: the current face with its lower half blanked (the part the
 * model must draw from the audio) followed by a reference face showing the person's appearance,
 * each in the channel order and value range of the model (the original: BGR, as OpenCV reads
 * frames, divided by 255). The order and range are parameters here so that the model manifest, not
 * this code, decides them.
 */

/** Either case, so that a manifest's `channels: 'BGR'` can be passed as it is. */
export type ChannelOrder = 'rgb' | 'bgr' | 'RGB' | 'BGR';

export interface TensorLayout {
  channelOrder: ChannelOrder;
  /** Values that pixel 0 and pixel 255 map to, e.g. [0, 1] or [-1, 1]. */
  range: readonly [number, number];
  /** The masked copy is blank from row floor(maskFromRow * size) down (the manifest's face.maskFromRow). Default 0.5. */
  maskFromRow?: number;
}

/** The original Wav2Lip checkpoints' convention. */
export const WAV2LIP_LAYOUT: Readonly<TensorLayout> = Object.freeze({
  channelOrder: 'bgr',
  range: Object.freeze([0, 1] as const),
  maskFromRow: 0.5,
});

function checkImage(name: string, image: Uint8Array, size: number): void {
  if (image.length !== size * size * 3) {
    throw new RangeError(
      `Expected ${name} to hold ${size * size * 3} bytes (RGB ${size}x${size}) but received ${image.length}`,
    );
  }
}

function checkLayout(layout: Readonly<TensorLayout>): void {
  const [lo, hi] = layout.range;
  if (!(Number.isFinite(lo) && Number.isFinite(hi) && lo !== hi)) {
    throw new RangeError(`Expected the tensor range to be two different finite numbers but received [${lo}, ${hi}]`);
  }
  const from = layout.maskFromRow;
  if (from !== undefined && !(from >= 0 && from <= 1)) {
    throw new RangeError(`Expected maskFromRow to be between 0 and 1 but received ${String(from)}`);
  }
}

/** Source RGB channel for tensor channel c. */
function sourceChannel(order: ChannelOrder, c: number): number {
  return order === 'bgr' || order === 'BGR' ? 2 - c : c;
}

/**
 * [6, size, size] planar floats: channels 0-2 the face with rows from floor(maskFromRow * size) down
 * set to pixel 0 (as Wav2Lip's `img_masked[:, 96 // 2:] = 0` before scaling), channels 3-5 the
 * reference face.
 * Both images are interleaved RGB, size x size. Written into `out` at `offset` when given, so a batch
 * [B, 6, size, size] fills in place.
 */
export function wav2lipInput(
  face: Uint8Array,
  reference: Uint8Array,
  size: number,
  layout: Readonly<TensorLayout> = WAV2LIP_LAYOUT,
  out?: Float32Array,
  offset = 0,
): Float32Array {
  if (!Number.isInteger(size) || size < 2)
    throw new RangeError(`Expected size to be an integer of at least 2 but received ${String(size)}`);
  checkImage('the face', face, size);
  checkImage('the reference face', reference, size);
  checkLayout(layout);
  const plane = size * size;
  const target = out ?? new Float32Array(6 * plane);
  if (offset < 0 || offset + 6 * plane > target.length) {
    throw new RangeError(
      `Expected room for ${6 * plane} values at offset ${offset} but the output holds ${target.length}`,
    );
  }
  const [lo, hi] = layout.range;
  const scale = (hi - lo) / 255;
  const maskedFrom = Math.floor((layout.maskFromRow ?? 0.5) * size) * size;
  for (let c = 0; c < 3; c++) {
    const s = sourceChannel(layout.channelOrder, c);
    const masked = offset + c * plane;
    const ref = offset + (3 + c) * plane;
    for (let p = 0; p < plane; p++) {
      target[masked + p] = p < maskedFrom ? lo + face[3 * p + s]! * scale : lo;
      target[ref + p] = lo + reference[3 * p + s]! * scale;
    }
  }
  return target;
}

/**
 * The model's [3, size, size] output (at `offset` in a batch) back to an interleaved RGB image,
 * clamped to 0..255 and rounded.
 */
export function tensorToRgb(
  tensor: Float32Array,
  size: number,
  layout: Readonly<TensorLayout> = WAV2LIP_LAYOUT,
  offset = 0,
  out?: Uint8Array,
): Uint8Array {
  if (!Number.isInteger(size) || size < 1)
    throw new RangeError(`Expected size to be a positive integer but received ${String(size)}`);
  checkLayout(layout);
  const plane = size * size;
  if (offset < 0 || offset + 3 * plane > tensor.length) {
    throw new RangeError(`Expected ${3 * plane} values at offset ${offset} but the tensor holds ${tensor.length}`);
  }
  const target = out ?? new Uint8Array(3 * plane);
  checkImage('the output image', target, size);
  const [lo, hi] = layout.range;
  const scale = 255 / (hi - lo);
  for (let c = 0; c < 3; c++) {
    const d = sourceChannel(layout.channelOrder, c);
    const from = offset + c * plane;
    for (let p = 0; p < plane; p++) {
      // Uint8Array assignment would wrap and truncate; clamp and round explicitly.
      const v = Math.round((tensor[from + p]! - lo) * scale);
      target[3 * p + d] = v < 0 ? 0 : v > 255 ? 255 : v;
    }
  }
  return target;
}
