/**
 * The face crop the lip-sync model sees (a rectangle stretched to the network's square, as Wav2Lip's
 * detector boxes were), and the geometry shared by cutting it out of a frame and pasting the result
 * back. Pure: arrays in, arrays out.
 *
 * Coordinates are continuous frame pixels: pixel (x, y) covers [x, x+1) x [y, y+1), its centre at
 * (x + 0.5, y + 0.5). A crop is a `width` x `height` rectangle centred on (cx, cy), turned by `angle`
 * radians: its x axis runs along (cos angle, sin angle) in the frame (y down, so a positive angle is
 * clockwise on screen). Cutting with the angle of a tilted face's eye line gives an upright face
 * (vendor-lipsync-3's alignment); pasting with the same crop turns the result back. angle 0 is a
 * plain axis-aligned rectangle.
 *
 * Sampling is bilinear on pixel centres (as OpenCV's INTER_LINEAR, which Wav2Lip's crops were made
 * with). Where a crop reaches past the frame edge the nearest edge pixel is repeated, so a face cut
 * by the frame edge still gives the model a full crop; compositing skips those off-frame parts.
 */
import type { DeepRgbFrame, FaceBox } from '../types.js';

export interface FaceCrop {
  cx: number;
  cy: number;
  /** Along the crop's x axis (across the face), frame pixels. */
  width: number;
  /** Along the crop's y axis (down the face), frame pixels. */
  height: number;
  /** Radians; 0 for an axis-aligned crop. */
  angle: number;
}

/**
 * Where a face sits in the crop the lip-sync network sees, in fractions of the crop's width and
 * height; derived in docs/lipsync.md ("Crop framing") from how Wav2Lip cut its crops.
 */
export interface Framing {
  /** Mouth keypoint across the crop (0 left edge, 1 right edge, in the upright face's axes). */
  mouthX: number;
  /** Mouth keypoint down the crop (0 top, 1 bottom). */
  mouthY: number;
  /** Crop height over the face's eye-to-mouth distance. */
  heightPerEyeMouth: number;
  /** Crop width over its height. The crop is stretched to the network's square, as Wav2Lip's were. */
  aspect: number;
}

/**
 * Wav2Lip's framing, a detector box from the hairline to the chin and from cheek to cheek: the
 * mouth at 70/96 of the crop's height (centred across it), 2.75 eye-to-mouth distances tall, which
 * puts the eyes at ~0.365, the masked half's edge (0.5) on the upper nose and the chin (~0.68
 * eye-to-mouth below the mouth) at ~0.976; 0.75 as wide as tall (~2.06 eye-to-mouth, the cheeks'
 * width), so the face reaches the network stretched across by 1/0.75 as in training.
 */
export const WAV2LIP_FRAMING: Readonly<Framing> = Object.freeze({
  mouthX: 0.5,
  mouthY: 70 / 96,
  heightPerEyeMouth: 2.75,
  aspect: 0.75,
});

/**
 * Face proportions that let the eye spacing and the detector's box stand in for an eye-to-mouth
 * distance the keypoints got wrong (a face looking down shortens it, a turned face narrows the
 * eyes): eye spacing ~0.95 of eye-to-mouth (63 mm over 66 mm on adults), and BlazeFace's box height
 * ~2.3 eye-to-mouth distances (the median over the project's real faces: docs/lipsync.md).
 */
export const EYES_PER_EYE_MOUTH = 0.95;
export const BOX_PER_EYE_MOUTH = 2.3;

export interface CropOptions {
  /** Turn the crop so that the eyes are level (vendor-lipsync-3). Default false. */
  align?: boolean;
  /** Default WAV2LIP_FRAMING. */
  framing?: Readonly<Framing>;
}

function checkFinite(name: string, value: number): void {
  if (!Number.isFinite(value))
    throw new RangeError(`Expected ${name} to be a finite number but received ${String(value)}`);
}

export function checkCrop(crop: FaceCrop): void {
  checkFinite('crop.cx', crop.cx);
  checkFinite('crop.cy', crop.cy);
  checkFinite('crop.angle', crop.angle);
  for (const [name, value] of [
    ['crop.width', crop.width],
    ['crop.height', crop.height],
  ] as const) {
    if (!(Number.isFinite(value) && value > 0))
      throw new RangeError(`Expected ${name} to be a positive number but received ${String(value)}`);
  }
}

export function checkFrame(frame: DeepRgbFrame, name = 'frame'): void {
  const { width, height, data } = frame;
  if (!Number.isInteger(width) || width < 1 || !Number.isInteger(height) || height < 1) {
    throw new RangeError(`Expected ${name} to have a positive integer size but received ${width}x${height}`);
  }
  if (data.length !== width * height * 3) {
    throw new RangeError(
      `Expected ${name} to hold ${width * height * 3} ${data instanceof Uint16Array ? 'samples' : 'bytes'} (RGB ${width}x${height}) but received ${data.length}`,
    );
  }
}

function median3(a: number, b: number, c: number): number {
  return Math.max(Math.min(a, b), Math.min(Math.max(a, b), c));
}

/**
 * The face's eye-to-mouth distance, the scale the framing is expressed in: the median of three
 * estimates (the keypoints' own distance, the eye spacing and the box height, each through the
 * face proportions above), so that one estimate thrown off by a head turn or a detector's box does
 * not resize the crop.
 */
export function eyeMouthDistance(box: FaceBox): number {
  const { leftEye, rightEye, mouth } = box.keypoints;
  const ex = (leftEye[0] + rightEye[0]) / 2;
  const ey = (leftEye[1] + rightEye[1]) / 2;
  const direct = Math.hypot(mouth[0] - ex, mouth[1] - ey);
  const eyes = Math.hypot(rightEye[0] - leftEye[0], rightEye[1] - leftEye[1]) / EYES_PER_EYE_MOUTH;
  return median3(direct, eyes, box.height / BOX_PER_EYE_MOUTH);
}

/**
 * The crop for a detected face, framed as Wav2Lip's crops were (docs/lipsync.md, "Crop framing"):
 * a rectangle `heightPerEyeMouth` eye-to-mouth distances tall and `aspect` as wide, placed so that
 * the mouth keypoint lands at (mouthX, mouthY). Wav2Lip cut detector boxes; a BlazeFace box sits
 * differently on the face, so the keypoints place the crop and the box only helps size it. With
 * `align`, the crop turns with the eye line (vertical offsets follow the face's own down, (-sin,
 * cos) in the frame).
 */
export function cropForFace(box: FaceBox, opts: CropOptions = {}): FaceCrop {
  const framing = opts.framing ?? WAV2LIP_FRAMING;
  const { mouthX, mouthY, heightPerEyeMouth, aspect } = framing;
  for (const [name, value] of [
    ['framing.mouthX', mouthX],
    ['framing.mouthY', mouthY],
  ] as const) {
    if (!(value >= 0 && value <= 1))
      throw new RangeError(`Expected ${name} to be between 0 and 1 but received ${String(value)}`);
  }
  for (const [name, value] of [
    ['framing.heightPerEyeMouth', heightPerEyeMouth],
    ['framing.aspect', aspect],
  ] as const) {
    if (!(Number.isFinite(value) && value > 0))
      throw new RangeError(`Expected ${name} to be a positive number but received ${String(value)}`);
  }
  const { leftEye, rightEye, mouth } = box.keypoints;
  for (const [x, y] of [leftEye, rightEye, mouth]) {
    checkFinite('a keypoint', x);
    checkFinite('a keypoint', y);
  }
  checkFinite('box.height', box.height);
  const height = heightPerEyeMouth * eyeMouthDistance(box);
  if (!(height > 0))
    throw new RangeError(
      `Expected a face with a positive size but its keypoints and box give a crop height of ${height}`,
    );
  const width = aspect * height;
  const angle = opts.align === true ? Math.atan2(rightEye[1] - leftEye[1], rightEye[0] - leftEye[0]) : 0;
  const cos = Math.cos(angle);
  const sin = Math.sin(angle);
  // From the mouth to the crop's centre, in the crop's axes, then turned into the frame.
  const lx = (0.5 - mouthX) * width;
  const ly = (0.5 - mouthY) * height;
  return { cx: mouth[0] + cos * lx - sin * ly, cy: mouth[1] + sin * lx + cos * ly, width, height, angle };
}

/** Frame position of the centre of crop pixel (u, v) in a size x size crop. */
export function cropToFrame(crop: FaceCrop, size: number, u: number, v: number): [number, number] {
  const lx = ((u + 0.5) / size - 0.5) * crop.width;
  const ly = ((v + 0.5) / size - 0.5) * crop.height;
  const cos = Math.cos(crop.angle);
  const sin = Math.sin(crop.angle);
  return [crop.cx + cos * lx - sin * ly, crop.cy + sin * lx + cos * ly];
}

/** Crop-normalised position (0..1 across the crop on each axis) of frame point (x, y). */
export function frameToCrop(crop: FaceCrop, x: number, y: number): [number, number] {
  const px = x - crop.cx;
  const py = y - crop.cy;
  const cos = Math.cos(crop.angle);
  const sin = Math.sin(crop.angle);
  return [(cos * px + sin * py) / crop.width + 0.5, (-sin * px + cos * py) / crop.height + 0.5];
}

/**
 * Bilinear RGB sample of an interleaved image at (x, y) in pixel-centre coordinates (pixel i's centre
 * at i), clamped to the edge, into out[at..at+2] as floats.
 */
export function sampleBilinear(
  data: Uint8Array | Uint16Array,
  width: number,
  height: number,
  x: number,
  y: number,
  out: Float64Array,
  at = 0,
): void {
  const xc = x <= 0 ? 0 : x >= width - 1 ? width - 1 : x;
  const yc = y <= 0 ? 0 : y >= height - 1 ? height - 1 : y;
  const x0 = Math.floor(xc);
  const y0 = Math.floor(yc);
  const x1 = x0 + 1 < width ? x0 + 1 : x0;
  const y1 = y0 + 1 < height ? y0 + 1 : y0;
  const fx = xc - x0;
  const fy = yc - y0;
  const w00 = (1 - fx) * (1 - fy);
  const w10 = fx * (1 - fy);
  const w01 = (1 - fx) * fy;
  const w11 = fx * fy;
  const i00 = 3 * (y0 * width + x0);
  const i10 = 3 * (y0 * width + x1);
  const i01 = 3 * (y1 * width + x0);
  const i11 = 3 * (y1 * width + x1);
  for (let c = 0; c < 3; c++) {
    out[at + c] = w00 * data[i00 + c]! + w10 * data[i10 + c]! + w01 * data[i01 + c]! + w11 * data[i11 + c]!;
  }
}

/** The largest sample value of an 8-bit or 16-bit image. */
export function sampleMax(data: Uint8Array | Uint16Array): number {
  return data instanceof Uint16Array ? 65_535 : 255;
}

/**
 * Cuts the crop out of the frame as a size x size interleaved 8-bit RGB image (the model input before
 * tensor conversion; a crop that is not square is stretched), into `out` when given. A 16-bit frame
 * gives its 8-bit crop for the network only: the frame itself keeps its 16 bits.
 */
export function cropFace(frame: DeepRgbFrame, crop: FaceCrop, size: number, out?: Uint8Array): Uint8Array {
  checkFrame(frame);
  checkCrop(crop);
  if (!Number.isInteger(size) || size < 1)
    throw new RangeError(`Expected size to be a positive integer but received ${String(size)}`);
  const target = out ?? new Uint8Array(size * size * 3);
  if (target.length !== size * size * 3) {
    throw new RangeError(`Expected the output to hold ${size * size * 3} bytes but received ${target.length}`);
  }
  const cos = Math.cos(crop.angle);
  const sin = Math.sin(crop.angle);
  const stepX = crop.width / size;
  const stepY = crop.height / size;
  const rgb = new Float64Array(3);
  const toByte = 255 / sampleMax(frame.data);
  for (let v = 0; v < size; v++) {
    const ly = (v + 0.5) * stepY - crop.height / 2;
    for (let u = 0; u < size; u++) {
      const lx = (u + 0.5) * stepX - crop.width / 2;
      // Frame coordinates of the crop pixel's centre, moved to pixel-centre indexing.
      const fx = crop.cx + cos * lx - sin * ly - 0.5;
      const fy = crop.cy + sin * lx + cos * ly - 0.5;
      sampleBilinear(frame.data, frame.width, frame.height, fx, fy, rgb);
      const o = 3 * (v * size + u);
      target[o] = Math.round(rgb[0]! * toByte);
      target[o + 1] = Math.round(rgb[1]! * toByte);
      target[o + 2] = Math.round(rgb[2]! * toByte);
    }
  }
  return target;
}

/**
 * The frame pixels a crop can touch: [x0, x1) x [y0, y1), clipped to the frame (empty when the crop
 * lies wholly outside it).
 */
export function cropBounds(
  crop: FaceCrop,
  width: number,
  height: number,
): { x0: number; y0: number; x1: number; y1: number } {
  const cos = Math.abs(Math.cos(crop.angle));
  const sin = Math.abs(Math.sin(crop.angle));
  const reachX = (crop.width / 2) * cos + (crop.height / 2) * sin;
  const reachY = (crop.width / 2) * sin + (crop.height / 2) * cos;
  const x0 = Math.max(0, Math.floor(crop.cx - reachX));
  const y0 = Math.max(0, Math.floor(crop.cy - reachY));
  const x1 = Math.min(width, Math.ceil(crop.cx + reachX));
  const y1 = Math.min(height, Math.ceil(crop.cy + reachY));
  return { x0, y0, x1: Math.max(x0, x1), y1: Math.max(y0, y1) };
}
