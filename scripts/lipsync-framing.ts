/**
 * Measuring where the lip-sync network's mouth lands on a real face (docs/lipsync.md, "Crop
 * framing"), shared by bench/music-lipsync/lipsync-framing.ts and the lip-sync tests.
 *
 * One face goes through the output pass's own steps (cropForFace, cropFace, wav2lipInput, the
 * network, tensorToRgb, compositeFace) twice: with a silent and with a loud mel window. The
 * generated test model darkens its mouth ellipse by the mel level and is otherwise the same for
 * both, so the luminance the loud pass lost is the darkening alone, in frame pixels, whatever the
 * resampling did to the rest of the face.
 */
import {
  compositeFace,
  cropFace,
  cropForFace,
  eyeMouthDistance,
  frameToCrop,
  type CropOptions,
  type FaceCrop,
  DEFAULT_MOUTH_MASK,
  tensorToRgb,
  wav2lipInput,
  type TensorLayout,
  type LipsyncModel,
  type FaceBox,
  type RgbFrame,
} from '../src/kinds/lipsync/pipeline/index.js';

/** Mel levels the test model reads as silence (no darkening) and as loud (full darkening). */
const SILENT = -4;
const LOUD = 4;

/**
 * The fraction of each pixel's luminance (Rec. 601 weights) lost from `before` to `after`: the
 * test model multiplies the face by (1 - shade), so this is the shade itself whatever the skin or
 * lips under it (an absolute loss would pull the centre towards bright skin). Pixels darker than
 * 16 in `before` give no reliable fraction and count as 0.
 */
export function luminanceLoss(before: Uint8Array, after: Uint8Array): Float64Array {
  if (before.length !== after.length || before.length % 3 !== 0) {
    throw new RangeError(
      `Expected two RGB images of the same size but received ${before.length} and ${after.length} bytes`,
    );
  }
  const luma = (d: Uint8Array, o: number) => 0.299 * d[o]! + 0.587 * d[o + 1]! + 0.114 * d[o + 2]!;
  const out = new Float64Array(before.length / 3);
  for (let p = 0; p < out.length; p += 1) {
    const was = luma(before, 3 * p);
    if (was < 16) continue;
    const drop = (was - luma(after, 3 * p)) / was;
    // Below 2 %: rounding of two otherwise equal pastes, not shade.
    out[p] = drop > 0.02 ? drop : 0;
  }
  return out;
}

/** Loss-weighted centre (pixel centres) of a width x height loss map, and the total loss. */
export function lossCentroid(loss: Float64Array, width: number): { x: number; y: number; total: number } {
  let total = 0;
  let sx = 0;
  let sy = 0;
  for (let p = 0; p < loss.length; p += 1) {
    const w = loss[p]!;
    if (w === 0) continue;
    total += w;
    sx += w * ((p % width) + 0.5);
    sy += w * (Math.floor(p / width) + 0.5);
  }
  return total > 0 ? { x: sx / total, y: sy / total, total } : { x: Number.NaN, y: Number.NaN, total: 0 };
}

/** The frame after the output pass's steps for one face and one mel level. */
export async function lipsyncOneFace(
  frame: RgbFrame,
  crop: FaceCrop,
  model: LipsyncModel,
  melLevel: number,
): Promise<Uint8Array> {
  const { manifest } = model;
  const size = manifest.face.size;
  const input: TensorLayout = {
    channelOrder: manifest.inputs.faces.channels,
    range: manifest.inputs.faces.range,
    maskFromRow: manifest.face.maskFromRow,
  };
  const output: TensorLayout = { channelOrder: manifest.output.channels, range: manifest.output.range };
  const face = cropFace(frame, crop, size);
  const faces = wav2lipInput(face, face, size, input);
  const mel = new Float32Array(manifest.inputs.mel.shape[2] * manifest.inputs.mel.shape[3]).fill(melLevel);
  const generated = tensorToRgb(await model.run(mel, faces, 1), size, output);
  const data = new Uint8Array(frame.data);
  compositeFace(
    { data, width: frame.width, height: frame.height },
    { data: generated, size },
    crop,
    DEFAULT_MOUTH_MASK,
  );
  return data;
}

export interface FaceFraming {
  crop: FaceCrop;
  /** The mouth keypoint in the crop, fractions of its side (u across, v down, upright face's axes). */
  mouthInCrop: [number, number];
  eyesInCrop: number;
  noseInCrop: number;
  /** The darkening's centre in the frame (NaN when nothing darkened). */
  darkening: [number, number];
  /** Darkening centre minus mouth keypoint, frame pixels. */
  offset: [number, number];
  /** |offset| over the face height (the detector box's height). */
  offsetPerFaceHeight: number;
  /** Nose's sideways offset from the eyes' midpoint over the eye spacing: ~0 on a frontal face. */
  yaw: number;
  /** The three face-scale estimates over the one used (eye-to-mouth, eye spacing, box height). */
  scaleEstimates: { direct: number; eyes: number; box: number; used: number };
}

/** Where the mouth keypoint and the test model's darkening land for one detected face. */
export async function measureFraming(
  frame: RgbFrame,
  box: FaceBox,
  model: LipsyncModel,
  options: CropOptions = {},
): Promise<FaceFraming> {
  const crop = cropForFace(box, options);
  const silent = await lipsyncOneFace(frame, crop, model, SILENT);
  const loud = await lipsyncOneFace(frame, crop, model, LOUD);
  const dark = lossCentroid(luminanceLoss(silent, loud), frame.width);
  const { leftEye, rightEye, nose, mouth } = box.keypoints;
  const ex = (leftEye[0] + rightEye[0]) / 2;
  const ey = (leftEye[1] + rightEye[1]) / 2;
  const mouthInCrop = frameToCrop(crop, mouth[0], mouth[1]);
  const offset: [number, number] = [dark.x - mouth[0], dark.y - mouth[1]];
  const spacing = Math.hypot(rightEye[0] - leftEye[0], rightEye[1] - leftEye[1]);
  const along = ((nose[0] - ex) * (rightEye[0] - leftEye[0]) + (nose[1] - ey) * (rightEye[1] - leftEye[1])) / spacing;
  return {
    crop,
    mouthInCrop,
    eyesInCrop: frameToCrop(crop, ex, ey)[1],
    noseInCrop: frameToCrop(crop, nose[0], nose[1])[1],
    darkening: [dark.x, dark.y],
    offset,
    offsetPerFaceHeight: Math.hypot(offset[0], offset[1]) / box.height,
    yaw: along / spacing,
    scaleEstimates: {
      direct: Math.hypot(mouth[0] - ex, mouth[1] - ey),
      eyes: spacing,
      box: box.height,
      used: eyeMouthDistance(box),
    },
  };
}
